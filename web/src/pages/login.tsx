import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from '../api.ts';
import { BASE, WORKSPACE } from '../env.ts';
import { safeNextTarget } from '../next-target.ts';

/** Only a path inside this workspace is a valid target after sign-in (no open redirect). */
function nextTarget(): string {
  return safeNextTarget(new URLSearchParams(location.search).get('next'), location.origin, BASE);
}

// Set by GET /setup when the workspace already has users (src/console/routes/pages.ts).
const oldSetupLink = new URLSearchParams(location.search).get('setup') === 'used';

export function LoginPage() {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [setupNeeded, setSetupNeeded] = useState(false);

  useEffect(() => {
    api.get<{ signedIn: boolean; setupNeeded?: boolean }>('/session').then(
      (s) => {
        if (s.signedIn) location.replace(nextTarget());
        else setSetupNeeded(Boolean(s.setupNeeded));
      },
      () => {},
    );
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
      </form>
    </main>
  );
}
