// mysql2 errors → dbq errors, by errno / Node error code only. The driver error rides in
// `cause`. Timeouts and our own KILL QUERY are decided by the caller, which knows why it
// cancelled.

import { ConnectionFailedError, DbqError, QueryFailedError } from '../../errors.ts';
import { classifyTransportError, connectionReason } from '../connection-reason.ts';

export const ER_QUERY_INTERRUPTED = 1317;
/** MariaDB max_statement_time, MySQL max_execution_time. */
export const STATEMENT_TIMEOUT_ERRNOS: ReadonlySet<number> = new Set([1969, 3024]);

// Errors that mean the session is gone or never existed: access denied (1044, 1045, 1698),
// unknown database (1049), too many connections (1040, 1203), host blocked / not allowed
// (1129, 1130), server shutdown (1053), connection killed (1927 MariaDB, 4031 MySQL idle
// disconnect), and the client-side 2xxx range (CR_*).
const CONNECTION_ERRNOS: ReadonlySet<number> = new Set([1040, 1044, 1045, 1049, 1053, 1129, 1130, 1203, 1698, 1927, 4031]);

interface MysqlDriverError {
  errno?: number;
  sqlState?: string;
  code?: string;
  fatal?: boolean;
  message: string;
}

export function errnoOf(err: unknown): number | null {
  const errno = (err as MysqlDriverError | null)?.errno;
  return typeof errno === 'number' ? errno : null;
}

export function classifyMysqlConnectError(err: unknown): DbqError {
  if (err instanceof DbqError) return err;
  return new ConnectionFailedError(connectionReason(err), err);
}

export function classifyMysqlError(err: unknown): DbqError {
  if (err instanceof DbqError) return err;
  const e = err as MysqlDriverError;
  const errno = errnoOf(err);
  if (errno !== null && e.sqlState && !e.fatal) {
    if (CONNECTION_ERRNOS.has(errno) || (errno >= 2000 && errno < 3000)) {
      return new ConnectionFailedError(connectionReason(err), err);
    }
    return new QueryFailedError(e.message, { sqlState: e.sqlState, errno, position: null }, err);
  }
  // Fatal protocol errors (PROTOCOL_CONNECTION_LOST), socket errors (ECONNRESET, …).
  return classifyTransportError(err);
}
