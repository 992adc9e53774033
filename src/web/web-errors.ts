// Errors of the web app's own endpoints ({workspace_url}/ui/api/…). They are DbqErrors, so the
// one error handler turns them into the usual envelope; their codes are listed in docs/web.md
// (they are not part of the public API contract, which never sees a session).
import { DbqError } from '../errors.ts';

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

export class TooManySignInAttemptsError extends DbqError {
  readonly retryAfterSeconds: number;

  constructor(retryAfterSeconds: number) {
    super('rate_limited', 429, 'Too many sign-in attempts. Try again later.', { retryAfter: retryAfterSeconds });
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
