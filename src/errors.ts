// One error class per envelope `code` of the API contract. Core code throws these;
// src/http-kit/error-handler.ts is the only place they become HTTP responses, and the MCP
// tools turn them into `isError` tool results. docs/errors.md lists the same table and
// test/error-table.test.ts fails when the two disagree.

export type Details = Record<string, unknown>;

export class DbqError extends Error {
  readonly code: string;
  readonly status: number;
  readonly details?: Details;

  constructor(code: string, status: number, message: string, details?: Details, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.details = details;
  }
}

export class InvalidRequestError extends DbqError {
  constructor(message: string, details?: Details) {
    super('invalid_request', 400, message, details);
  }
}

export class InvalidJsonError extends DbqError {
  constructor() {
    super('invalid_json', 400, 'Invalid JSON body');
  }
}

export class InvalidApiKeyError extends DbqError {
  /** `{ reason: 'expired' }` only for a real key past its expiry: its holder learns nothing new,
   * and a typo and an expired key no longer answer alike. */
  constructor(details?: { reason: 'expired' }) {
    super('invalid_api_key', 401, 'Invalid or missing API key', details);
  }
}

export class InsufficientPermissionsError extends DbqError {
  constructor(details?: Details) {
    super('insufficient_permissions', 403, 'Insufficient permissions', details);
  }
}

export class NotFoundError extends DbqError {
  constructor(message = 'Not found') {
    super('not_found', 404, message);
  }
}

/** An MCP request whose Accept lacks what the Streamable HTTP transport answers with. The
 * transport requires the header; the refusal is the envelope every other HTTP error is. */
export class NotAcceptableError extends DbqError {
  constructor(message = 'Not acceptable', details?: Details) {
    super('not_acceptable', 406, message, details);
  }
}

/** A known path asked with a method it does not answer; the response's `Allow` lists those it does. */
export class MethodNotAllowedError extends DbqError {
  constructor(details?: Details) {
    super('method_not_allowed', 405, 'Method not allowed', details);
  }
}

export class WorkspaceNotFoundError extends DbqError {
  constructor() {
    super('workspace_not_found', 404, 'Workspace not found');
  }
}

export class ConnectionNotFoundError extends DbqError {
  constructor() {
    super('connection_not_found', 404, 'Connection not found');
  }
}

/** A curated tool that does not exist, was deleted, or is on a connection the caller may not use. */
export class ToolNotFoundError extends DbqError {
  constructor() {
    super('tool_not_found', 404, 'Tool not found');
  }
}

export class QueryNotFoundError extends DbqError {
  constructor() {
    super('query_not_found', 404, 'Query not found');
  }
}

export class ConflictError extends DbqError {
  constructor(message: string, details?: Details) {
    super('conflict', 409, message, details);
  }
}

export class PayloadTooLargeError extends DbqError {
  constructor() {
    super('payload_too_large', 413, 'Request body too large');
  }
}

/** Node's HTTP parser stopped reading headers past its limit (16 KiB). */
export class HeadersTooLargeError extends DbqError {
  constructor() {
    super('headers_too_large', 431, 'Request headers too large');
  }
}

/** The client did not finish sending its request's headers in time (Node's headersTimeout). */
export class RequestTimeoutError extends DbqError {
  constructor() {
    super('request_timeout', 408, 'Request timed out');
  }
}

export class QueryFailedError extends DbqError {
  constructor(message: string, details?: { sqlState?: string | null; position?: number | null } & Details, cause?: unknown) {
    super('query_failed', 422, message, details, cause);
  }
}

export class GenerationFailedError extends DbqError {
  constructor(reason: string, details?: Details) {
    super('generation_failed', 422, `Could not generate SQL: ${reason}`, details);
  }
}

export class RateLimitedError extends DbqError {
  /** The web sign-in limiter says what was limited; the API keeps the contract's message. */
  constructor(details?: Details, message = 'Rate limit exceeded') {
    super('rate_limited', 429, message, details);
  }
}

/** A key holds as many MCP sessions as it may on this process (DBQ_MCP_SESSIONS_PER_KEY) and
 * none of them is idle enough to give way (src/mcp/session-caps.ts). `details`: `scope`
 * (`key`), `limit`. Answered with `Retry-After`. */
export class TooManySessionsError extends DbqError {
  constructor(
    details?: Details,
    readonly retryAfterSeconds = 1,
  ) {
    super('too_many_sessions', 429, 'Too many MCP sessions for this API key', details);
  }
}

// The web app's own endpoints ({workspace_url}/ui/api/…) add these; the public API never
// sees a session, so they never appear under /api.

/** No session cookie, an unknown, expired or revoked session, or the user was disabled. */
export class SignInRequiredError extends DbqError {
  constructor() {
    super('sign_in_required', 401, 'Sign in required');
  }
}

/** The same message for an unknown email, a wrong password, a user without a password and a
 * disabled user, so the form cannot be used to learn who has an account. */
export class InvalidCredentialsError extends DbqError {
  constructor() {
    super('invalid_credentials', 401, 'Invalid email or password');
  }
}

export class CsrfError extends DbqError {
  constructor(reason: string) {
    super('csrf_failed', 403, 'Invalid or missing CSRF token', { reason });
  }
}

/** Wrong or used setup token, or the workspace already has users. One message for all. */
export class SetupUnavailableError extends DbqError {
  constructor() {
    super('setup_unavailable', 403, 'This setup link is invalid or has already been used');
  }
}

/** Wrong, used or expired "set your password" link. One message for all. */
export class PasswordLinkUnavailableError extends DbqError {
  constructor() {
    super('password_link_unavailable', 403, 'This password link is invalid, expired or has already been used');
  }
}

/** The client went away or asked for cancellation; nobody normally sees this body. */
export class QueryCanceledError extends DbqError {
  constructor(message = 'Query was canceled') {
    super('query_canceled', 499, message);
  }
}

export class InternalError extends DbqError {
  /** `details` only says what a client must know to act safely (a write's `statementRan`);
   * never what went wrong inside. */
  constructor(cause?: unknown, details?: Details) {
    super('internal_error', 500, 'Internal server error', details, cause);
  }
}

export class ConnectionFailedError extends DbqError {
  constructor(reason: string, cause?: unknown) {
    super('connection_failed', 502, `Could not connect to database: ${reason}`, undefined, cause);
  }
}

export class DatabaseBusyError extends DbqError {
  constructor() {
    super('database_busy', 503, 'Database busy');
  }
}

/** dbq's own store (PostgreSQL, DBQ_STORE_URL) cannot be reached right now: refused, dropped
 * or shutting down (src/store/store-errors.ts). Retryable; answered with `Retry-After`. A write
 * that got this far says in `details.statementRan` whether its statement ran. */
export class StoreUnavailableError extends DbqError {
  static readonly RETRY_AFTER_SECONDS = 1;
  constructor(details?: Details, cause?: unknown) {
    super('store_unavailable', 503, 'Store unavailable', details, cause);
  }
}

/** No room for another MCP session on this process: its workspace is at
 * DBQ_MCP_SESSIONS_PER_WORKSPACE, or the heap is near its limit, and no idle session can give
 * way. `details.scope`: `workspace` or `process`. Another process may have room: Retry-After. */
export class SessionCapacityError extends DbqError {
  constructor(
    details?: Details,
    readonly retryAfterSeconds = 1,
  ) {
    super('session_capacity', 503, 'No capacity for another MCP session', details);
  }
}

/** The process is stopping (SIGTERM): a request that arrives meanwhile, or a statement the
 * grace period cut (src/server/shutdown-gate.ts). Answered with `Retry-After` and
 * `Connection: close`, so a client or balancer retries on another process. */
export class ShuttingDownError extends DbqError {
  static readonly RETRY_AFTER_SECONDS = 1;
  constructor(message = 'Server is shutting down', details?: Details) {
    super('shutting_down', 503, message, details);
  }
}

export class QueryTimeoutError extends DbqError {
  constructor(timeoutMs: number) {
    super('query_timeout', 504, `Query timed out after ${timeoutMs} ms`, { timeoutMs });
  }
}

/** No space left where a write had to go (SQLITE_FULL, ENOSPC): dbq's own store, or the disk
 * of a SQLite connection's file (without it a full disk answered every SELECT with a bare 500,
 * since each one writes its history entry). Nothing to retry until space is freed. */
export class StorageFullError extends DbqError {
  constructor(where: 'store' | 'database', cause?: unknown) {
    const message =
      where === 'store'
        ? "Insufficient storage: dbq's store could not write (no space left on its disk)"
        : 'Insufficient storage: the SQLite database could not write (no space left on its disk)';
    super('storage_full', 507, message, { where }, cause);
  }
}

/** A connection's sealed secrets do not open with this server's secret key: the key was lost,
 * replaced, or is not the one the store was sealed with (a restore without its key). Not the
 * caller's fault and nothing a retry fixes, but worth more than a bare 500: it names the
 * connection and the two ways back. The key itself is never in it. */
export class SecretUnreadableError extends DbqError {
  constructor(connectionName: string, cause?: unknown) {
    super(
      'secret_unreadable',
      500,
      `The stored secrets of connection ${connectionName} cannot be opened with this server's secret key ` +
        '(was the key lost or replaced?). Put the key back (docs/upgrading.md), or set the password again: ' +
        'a connection update that gives a new password replaces the unreadable secrets.',
      { connection: connectionName },
      cause,
    );
  }
}

/** The workspace turned password sign-in off (its people sign in with SSO): refused before
 * any password is checked, so the answer says nothing about the account. */
export class PasswordSignInDisabledError extends DbqError {
  constructor() {
    super('password_sign_in_disabled', 403, 'Password sign-in is turned off for this workspace: use "Sign in with SSO"');
  }
}

/** A single sign-on that the workspace's rules refuse (another domain, an unverified email, a
 * disabled user) or that could not complete; `details.reason` names which, in one word the
 * sign-in page turns into a sentence. */
export class SsoSignInError extends DbqError {
  constructor(reason: string, message: string, cause?: unknown) {
    super('sso_sign_in_failed', 403, message, { reason }, cause);
  }
}

/** Every class above, for the docs/code agreement test and the OpenAPI error schema. */
export const ERROR_CLASSES = [
  InvalidRequestError,
  InvalidJsonError,
  InvalidApiKeyError,
  InsufficientPermissionsError,
  NotFoundError,
  MethodNotAllowedError,
  NotAcceptableError,
  WorkspaceNotFoundError,
  ConnectionNotFoundError,
  ToolNotFoundError,
  QueryNotFoundError,
  ConflictError,
  PayloadTooLargeError,
  HeadersTooLargeError,
  RequestTimeoutError,
  QueryFailedError,
  GenerationFailedError,
  RateLimitedError,
  TooManySessionsError,
  SignInRequiredError,
  InvalidCredentialsError,
  CsrfError,
  SetupUnavailableError,
  PasswordLinkUnavailableError,
  PasswordSignInDisabledError,
  SsoSignInError,
  QueryCanceledError,
  InternalError,
  ConnectionFailedError,
  DatabaseBusyError,
  StoreUnavailableError,
  SessionCapacityError,
  ShuttingDownError,
  QueryTimeoutError,
  StorageFullError,
  SecretUnreadableError,
] as const;
