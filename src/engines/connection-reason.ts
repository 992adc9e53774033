// The text after "Could not connect to database: ", built from the error's fields, never from
// a message with the password's text masked out: a mask is an oracle whenever the password
// happens to be part of the message (`connect ECONNREFUSED 127.***:5999` says the password was
// "0.0.1"). Nothing below can hold the password, so nothing is masked and the reason is the
// same whatever the password:
// - a Node system error: syscall, code, then address:port or the host name
//   (`connect ECONNREFUSED 127.0.0.1:5999`, `getaddrinfo ENOTFOUND db.internal`);
// - the server's own error (a PostgreSQL SQLSTATE, a MySQL errno with its SQLSTATE): its text
//   names the user or the database, never the password, which a server does not echo
//   (`password authentication failed for user "x"`, `Access denied for user 'x'@'h' (using
//   password: YES)`);
// - the driver's fixed texts (`Connection terminated unexpectedly`, `timeout expired`), which
//   interpolate nothing from the connection settings.
// dbq's own reasons (`timed out after 5000 ms`) are ConnectionFailedErrors already.

import { ConnectionFailedError, DbqError, InternalError } from '../errors.ts';

interface ErrorFields {
  code?: unknown;
  syscall?: unknown;
  address?: unknown;
  port?: unknown;
  hostname?: unknown;
  errno?: unknown;
  sqlState?: unknown;
  sqlMessage?: unknown;
}

const NOT_TRUSTED = "the server's certificate does not chain to a trusted CA (the connection's sslCa, or the system CAs without one)";
/** Node's TLS verification failures, in words an operator can act on: the driver's own text
 * ("self-signed certificate in certificate chain") does not say which setting decides. */
const TLS_REFUSALS: Record<string, string> = {
  SELF_SIGNED_CERT_IN_CHAIN: NOT_TRUSTED,
  DEPTH_ZERO_SELF_SIGNED_CERT: "the server's certificate is self-signed and not trusted (give its CA as sslCa)",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: NOT_TRUSTED,
  UNABLE_TO_GET_ISSUER_CERT: NOT_TRUSTED,
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: NOT_TRUSTED,
  CERT_SIGNATURE_FAILURE: NOT_TRUSTED,
  ERR_TLS_CERT_ALTNAME_INVALID: "the server's certificate is not issued for the host name the connection dials",
  CERT_HAS_EXPIRED: "the server's certificate has expired",
  CERT_NOT_YET_VALID: "the server's certificate is not valid yet",
};

export function connectionReason(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) {
    // Node's happy-eyeballs connect (localhost → ::1 and 127.0.0.1) fails with an empty
    // AggregateError; the first attempt's error says what happened.
    return connectionReason(err.errors[0]);
  }
  if (!(err instanceof Error)) return 'unknown error';
  const e = err as Error & ErrorFields;
  if (typeof e.code === 'string' && Object.hasOwn(TLS_REFUSALS, e.code)) return `TLS: ${TLS_REFUSALS[e.code]} (${e.code})`;
  // mysql2 replaces the TLS layer's code with its own; the text left is Node's fixed wording of
  // the verification failure (it carries nothing from the connection's settings).
  if (e.code === 'HANDSHAKE_SSL_ERROR') {
    return `TLS: the handshake failed (${err.message}): the server's certificate must chain to the connection's sslCa (or the system CAs without one) and be issued for the host name it dials`;
  }
  if (typeof e.syscall === 'string' && typeof e.code === 'string') {
    const where =
      typeof e.address === 'string'
        ? typeof e.port === 'number'
          ? `${e.address}:${e.port}`
          : e.address
        : typeof e.hostname === 'string'
          ? e.hostname
          : '';
    return [e.syscall, e.code, where].filter(Boolean).join(' ');
  }
  // mysql2 keeps the server's text apart from its own prefixes.
  if (typeof e.errno === 'number' && typeof e.sqlState === 'string' && typeof e.sqlMessage === 'string') return e.sqlMessage;
  if (err.message) return err.message;
  return typeof e.code === 'string' ? e.code : 'unknown error';
}

/** A failure that is not the server's: a socket error (code ECONNRESET, EPIPE, …) or a driver
 * reporting the connection ended (plain Error) is a connection failure; a TypeError and
 * friends are our own bug and stay a 500. */
export function classifyTransportError(err: unknown): DbqError {
  if (err instanceof DbqError) return err;
  if (err instanceof Error && (err.constructor === Error || typeof (err as { code?: unknown }).code === 'string')) {
    return new ConnectionFailedError(connectionReason(err), err);
  }
  if (err instanceof AggregateError) return new ConnectionFailedError(connectionReason(err), err);
  return new InternalError(err);
}
