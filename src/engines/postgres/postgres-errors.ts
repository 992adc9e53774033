// node-postgres errors → dbq errors, by SQLSTATE and Node error code only (never by message
// text: messages are localised by lc_messages and change between versions). The driver error
// rides in `cause`.

import pg from 'pg';
import { ConnectionFailedError, DbqError, QueryFailedError } from '../../errors.ts';
import { classifyTransportError, connectionReason } from '../connection-reason.ts';
import { isBindRefused } from './postgres-parameters.ts';

/** SQLSTATEs that mean the session is unusable or never existed: 08 connection exception,
 * 28 invalid authorization, 3D000 unknown database, 53300 too many connections, 57P01-03
 * server shutting down / terminated the backend. */
function isConnectionState(code: string): boolean {
  return (
    code.startsWith('08') ||
    code.startsWith('28') ||
    code === '3D000' ||
    code === '53300' ||
    code === '57P01' ||
    code === '57P02' ||
    code === '57P03'
  );
}

/** Errors raised while opening a connection (pool checkout or a fresh client). */
export function classifyPostgresConnectError(err: unknown): DbqError {
  if (err instanceof DbqError) return err;
  return new ConnectionFailedError(connectionReason(err), err);
}

/** Errors raised by a statement on an open connection. 57014 (query_canceled) is handled by
 * the caller, which knows whether it cancelled for a timeout or for an abort. */
export function classifyPostgresError(err: unknown): DbqError {
  if (err instanceof DbqError) return err;
  if (err instanceof pg.DatabaseError) {
    const code = err.code ?? null;
    // A Bind refused for its parameter count is 08P01 too, but at severity ERROR: only that
    // statement failed and the session goes on.
    if (code && isConnectionState(code) && !isBindRefused(err)) return new ConnectionFailedError(connectionReason(err), err);
    const position = err.position ? Number(err.position) : null;
    const details: Record<string, unknown> = { sqlState: code, position };
    if (err.detail) details.detail = err.detail;
    if (err.hint) details.hint = err.hint;
    return new QueryFailedError(err.message, details, err);
  }
  return classifyTransportError(err);
}

/** A read whose connection died once it had been sent: it is not sent again, and its history
 * says so. */
export function lostWhileRunning(err: unknown): ConnectionFailedError {
  const why = err instanceof pg.DatabaseError ? `terminated by the server: ${connectionReason(err)}` : connectionReason(err);
  return new ConnectionFailedError(`the connection was lost while the statement ran (${why}); it was not re-run`, err);
}

export function sqlStateOf(err: unknown): string | null {
  return err instanceof pg.DatabaseError ? (err.code ?? null) : null;
}
