import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from '../api.ts';
import { href, STATUS, WORKSPACE } from '../env.ts';

// Read once, then taken out of the address bar so it does not linger in history or screenshots.
const token = new URLSearchParams(location.search).get('token') ?? '';
const PASSWORDS_DIFFER = 'The two passwords differ';

export function SetupPage() {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (location.search) history.replaceState(null, '', location.pathname);
  }, []);

  if (STATUS !== 200 || !token) {
    return (
      <main id="main" class="auth">
        <div class="card auth-card">
          <h1>Setup link not valid</h1>
          <p role="alert">This setup link is invalid or has already been used.</p>
          <p>
            <a href={href('/login')}>Go to sign in</a>
          </p>
        </div>
      </main>
    );
  }

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    if (password !== confirm) {
      setError(PASSWORDS_DIFFER);
      return;
    }
    setBusy(true);
    try {
      await api.post('/setup', { token, email, password });
      location.assign(href('/'));
    } catch (err) {
      setError(err instanceof ApiError ? err.message : 'Setup failed');
      setBusy(false);
    }
  };

  // Editing either password answers "they differ": left up, that banner sat beside the
  // browser's own "too short" bubble and the two read as one contradictory message.
  const editPassword = (set: (v: string) => void) => (e: { currentTarget: HTMLInputElement }) => {
    set(e.currentTarget.value);
    if (error === PASSWORDS_DIFFER) setError(null);
  };

  return (
    <main id="main" class="auth">
      <form class="card auth-card" onSubmit={submit} aria-labelledby="setup-title">
        <div class="brand brand-large">
          <span class="logo" aria-hidden="true">◆</span> dbq
        </div>
        <h1 id="setup-title">Create the first admin</h1>
        <p class="muted">
          Workspace <strong>{WORKSPACE}</strong> has no users yet. This account will be its administrator.
        </p>
        {error && (
          <div class="alert alert-error" role="alert">
            {error}
          </div>
        )}
        <label class="field">
          <span>Email</span>
          <input type="email" autocomplete="username" required autoFocus value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </label>
        <label class="field">
          <span>Password</span>
          <input type="password" autocomplete="new-password" minLength={8} required aria-describedby="password-hint" value={password} onInput={editPassword(setPassword)} />
        </label>
        <small id="password-hint" class="muted field-hint">At least 8 characters.</small>
        <label class="field">
          <span>Confirm password</span>
          <input type="password" autocomplete="new-password" minLength={8} required value={confirm} onInput={editPassword(setConfirm)} />
        </label>
        <button type="submit" class="btn btn-primary btn-block" disabled={busy}>
          Create admin
        </button>
      </form>
    </main>
  );
}
