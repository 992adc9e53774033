import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from '../api.ts';
import { href, STATUS, WORKSPACE } from '../env.ts';

// Read once, then taken out of the address bar so it does not linger in history or screenshots.
const token = new URLSearchParams(location.search).get('token') ?? '';

/** A one-time "set your password" link (a new user, or an admin's reset). */
export function SetPasswordPage() {
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<string | null>(null);

  useEffect(() => {
    if (location.search) history.replaceState(null, '', location.pathname);
  }, []);

  if (STATUS !== 200 || !token) {
    return (
      <main id="main" class="auth">
        <div class="card auth-card">
          <h1>Password link not valid</h1>
          <p role="alert">This password link is invalid, expired or has already been used. Ask an admin for a new one.</p>
          <p>
            <a href={href('/login')}>Go to sign in</a>
          </p>
        </div>
      </main>
    );
  }

  if (done) {
    return (
      <main id="main" class="auth">
        <div class="card auth-card">
          <h1>Password set</h1>
          <p role="status">The password of {done} is set.</p>
          <p>
            <a class="btn btn-primary" href={href('/login')}>
              Sign in
            </a>
          </p>
        </div>
      </main>
    );
  }

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    if (password !== confirm) {
      setError('The two passwords differ');
      return;
    }
    setBusy(true);
    try {
      const { user } = await api.post<{ user: { email: string } }>('/set-password', { token, password });
      setDone(user.email);
    } catch (err) {
      setError(err instanceof ApiError ? err.message : 'Could not set the password');
      setBusy(false);
    }
  };

  return (
    <main id="main" class="auth">
      <form class="card auth-card" onSubmit={submit} aria-labelledby="set-password-title">
        <div class="brand brand-large">
          <span class="logo" aria-hidden="true">◆</span> dbq
        </div>
        <h1 id="set-password-title">Set your password</h1>
        <p class="muted">
          Workspace <strong>{WORKSPACE}</strong>. At least 8 characters.
        </p>
        {error && (
          <div class="alert alert-error" role="alert">
            {error}
          </div>
        )}
        <label class="field">
          <span>New password</span>
          <input type="password" autocomplete="new-password" minLength={8} required autoFocus value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        </label>
        <label class="field">
          <span>Confirm password</span>
          <input type="password" autocomplete="new-password" minLength={8} required value={confirm} onInput={(e) => setConfirm(e.currentTarget.value)} />
        </label>
        <button type="submit" class="btn btn-primary btn-block" disabled={busy}>
          Set password
        </button>
      </form>
    </main>
  );
}
