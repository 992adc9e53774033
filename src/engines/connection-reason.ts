// The text after "Could not connect to database: ". It is the driver's own message
// ("connect ECONNREFUSED 127.0.0.1:5999", 'password authentication failed for user "x"'),
// which never contains the password; it is scrubbed anyway in case a driver ever echoes it.

import { ConnectionFailedError, DbqError, InternalError } from '../errors.ts';

export function connectionReason(err: unknown, password: string | null): string {
  let message = describe(err);
  if (password && password.length >= 3) message = message.split(password).join('***');
  return message;
}

function describe(err: unknown): string {
  if (err instanceof AggregateError && !err.message) {
    // Node's happy-eyeballs connect (localhost → ::1 and 127.0.0.1) fails with an empty
    // AggregateError; the first attempt's error says what happened.
    const first: unknown = err.errors[0];
    if (first) return describe(first);
  }
  if (err instanceof Error) {
    if (err.message) return err.message;
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return String(err);
}

/** A failure that is not the server's: a socket error (code ECONNRESET, EPIPE, …) or a driver
 * reporting the connection ended (plain Error) is a connection failure; a TypeError and
 * friends are our own bug and stay a 500. */
export function classifyTransportError(err: unknown, password: string | null): DbqError {
  if (err instanceof DbqError) return err;
  if (err instanceof Error && (err.constructor === Error || typeof (err as { code?: unknown }).code === 'string')) {
    return new ConnectionFailedError(connectionReason(err, password), err);
  }
  if (err instanceof AggregateError) return new ConnectionFailedError(connectionReason(err, password), err);
  return new InternalError(err);
}
