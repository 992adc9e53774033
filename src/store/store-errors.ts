// Which failures of the PostgreSQL store mean "the store is not there right now" — retry in a
// moment, 503 store_unavailable — rather than a fault that retrying will not fix (500). By
// SQLSTATE, Node error code and error type only, never by message text (localised by
// lc_messages, and node-postgres words its own differently between versions).
import pg from 'pg';
import { StorageFullError, StoreUnavailableError } from '../errors.ts';

/** 08 connection exception; 57P01 admin_shutdown (a fast stop terminating backends), 57P02
 * crash_shutdown, 57P03 cannot_connect_now (starting up, shutting down, in recovery); 53300
 * too_many_connections (every slot taken: it frees as clients leave). */
function isUnavailableState(code: string): boolean {
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300';
}

/** Socket errors that say the peer is gone or cannot be reached. */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

export function isStoreUnavailable(err: unknown): boolean {
  if (err instanceof StoreUnavailableError) return true;
  // Node's happy-eyeballs connect (localhost → ::1 and 127.0.0.1) fails with every attempt's error.
  if (err instanceof AggregateError) return err.errors.length > 0 && err.errors.every(isStoreUnavailable);
  if (err instanceof pg.DatabaseError) return typeof err.code === 'string' && isUnavailableState(err.code);
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return UNREACHABLE.has(code);
  // node-postgres reports a dropped connection ("Connection terminated unexpectedly"), a client
  // that is no longer queryable, and its connect timeout as plain Errors without a code; a
  // TypeError or RangeError from the driver is a bug of ours and stays a 500.
  return err.constructor === Error;
}

/** The store error a caller sees: unavailability as StoreUnavailableError, a full disk (53100
 * disk_full) as StorageFullError — 507, as the SQLite store answers SQLITE_FULL — each with the
 * driver's error in `cause`; anything else unchanged. */
export function classifyStoreError(err: unknown): unknown {
  if (err instanceof pg.DatabaseError && err.code === '53100') return new StorageFullError('store', err);
  if (err instanceof StoreUnavailableError || !isStoreUnavailable(err)) return err;
  return new StoreUnavailableError(undefined, err);
}
