import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from '../api.ts';
import { BASE, href, WORKSPACE } from '../env.ts';
import { safeNextTarget } from '../next-target.ts';

/** Only a path inside this workspace is a valid target after sign-in (no open redirect). */
function nextTarget(): string {
  return safeNextTarget(new URLSearchParams(location.search).get('next'), location.origin, BASE);
}

// Set by GET /setup when the workspace already has users (src/console/routes/pages.ts).
const oldSetupLink = new URLSearchParams(location.search).get('setup') === 'used';

// Set by {workspace_url}/sso/callback when single sign-on was refused (src/console/routes/sso.ts):
// a word from this list, turned into a sentence here (never text from the URL shown as is).
const SSO_ERRORS: Record<string, string> = {
  domain: 'Your email domain may not sign in to this workspace. Ask an admin to add it to the allowed domains.',
  unverified: 'Your identity provider has not verified your email address. Verify it there, then try again.',
  no_email: 'Your identity provider did not share an email address with dbq. Ask an admin to check the "email" scope.',
  disabled: 'Your account is disabled in this workspace. Ask an admin to enable it.',
  other_identity:
    'This email belongs to a dbq user who signs in with another account at your identity provider. Ask an admin: setting up single sign-on again links users anew.',
  no_subject: 'Your identity provider did not identify your account. Ask an admin to check its settings.',
  not_configured: 'Single sign-on is not set up for this workspace.',
  expired: 'The single sign-on took too long or was started in another window. Try again.',
  unreachable: 'The identity provider could not be reached. Try again later, or ask an admin.',
  rate_limited: 'Too many sign-in attempts from your address. Try again in a few minutes.',
  failed: 'Single sign-on did not complete. Try again, or ask an admin to check its settings.',
};
const ssoErrorCode = new URLSearchParams(location.search).get('sso_error');
const ssoError = ssoErrorCode === null ? null : (SSO_ERRORS[ssoErrorCode] ?? SSO_ERRORS.failed);

export function LoginPage() {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [setupNeeded, setSetupNeeded] = useState(false);
  const [signIn, setSignIn] = useState<{ sso: boolean; passwordSignIn: boolean }>({ sso: false, passwordSignIn: true });

  useEffect(() => {
    api.get<{ signedIn: boolean; setupNeeded?: boolean }>('/session').then(
      (s) => {
        if (s.signedIn) location.replace(nextTarget());
        else setSetupNeeded(Boolean(s.setupNeeded));
      },
      () => {},
    );
    api.get<{ sso: boolean; passwordSignIn: boolean }>('/sso').then(setSignIn, () => {});
  }, []);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await api.post('/login', { email, password });
      location.assign(nextTarget());
    } catch (err) {
      setError(err instanceof ApiError ? err.message : 'Sign-in failed');
      setPassword('');
      setBusy(false);
    }
  };

  return (
    <main id="main" class="auth">
      <form class="card auth-card" onSubmit={submit} aria-labelledby="login-title">
        <div class="brand brand-large">
          <span class="logo" aria-hidden="true">
            ◆
          </span>{' '}
          dbq
        </div>
        <h1 id="login-title">Sign in</h1>
        <p class="muted">
          Workspace <strong>{WORKSPACE}</strong>
        </p>
        {ssoError && !error && (
          <div class="alert alert-error" role="alert" data-testid="sso-error">
            {ssoError}
          </div>
        )}
        {error && (
          <div class="alert alert-error" role="alert">
            {error}
          </div>
        )}
        {oldSetupLink && !setupNeeded && (
          <div class="alert alert-info" role="status" data-testid="setup-used">
            That setup link was already used or has expired: workspace <strong>{WORKSPACE}</strong> has its admin. Sign in, or ask an admin
            for a password link.
          </div>
        )}
        {setupNeeded && (
          <div class="alert alert-info" role="status">
            This workspace has no users yet. Open the setup link that <code>dbq serve</code> printed to create the first admin.
          </div>
        )}
        {signIn.sso && (
          <a class="btn btn-primary btn-block" href={`${href('/sso/start')}?next=${encodeURIComponent(nextTarget())}`}>
            Sign in with SSO
          </a>
        )}
        {signIn.sso && !signIn.passwordSignIn && (
          <p class="muted" data-testid="password-sign-in-off">
            Password sign-in is turned off for this workspace: use your organisation's sign-in above.
          </p>
        )}
        {signIn.passwordSignIn && (
          <>
            {signIn.sso && <p class="muted">or with your dbq password:</p>}
            <label class="field">
              <span>Email</span>
              <input
                type="email"
                name="email"
                autocomplete="username"
                required
                autoFocus
                value={email}
                onInput={(e) => setEmail(e.currentTarget.value)}
              />
            </label>
            <label class="field">
              <span>Password</span>
              <input
                type="password"
                name="password"
                autocomplete="current-password"
                required
                value={password}
                onInput={(e) => setPassword(e.currentTarget.value)}
              />
            </label>
            <button type="submit" class="btn btn-primary btn-block" disabled={busy}>
              {busy ? 'Signing in…' : 'Sign in'}
            </button>
          </>
        )}
      </form>
    </main>
  );
}
