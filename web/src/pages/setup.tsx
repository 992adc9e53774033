import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { InvalidLink, linkToken, useTokenOutOfAddressBar } from '../components/one-time-link.tsx';
import { NewPasswordFields, PASSWORDS_DIFFER, useNewPasswordForm } from '../components/password-fields.tsx';
import { href, STATUS, WORKSPACE } from '../env.ts';

const token = linkToken();

export function SetupPage() {
  const [email, setEmail] = useState('');
  const { password, setPassword, confirm, setConfirm, error, setError, busy, submit } = useNewPasswordForm(async (password) => {
    await api.post('/setup', { token, email, password });
    location.assign(href('/'));
  }, 'Setup failed');
  useTokenOutOfAddressBar();

  if (STATUS !== 200 || !token) {
    return <InvalidLink title="Setup link not valid">This setup link is invalid or has already been used.</InvalidLink>;
  }

  // Editing either password answers "they differ": left up, that banner sat beside the
  // browser's own "too short" bubble and the two read as one contradictory message.
  const editPassword = (set: (v: string) => void) => (value: string) => {
    set(value);
    if (error === PASSWORDS_DIFFER) setError(null);
  };

  return (
    <main id="main" class="auth">
      <form class="card auth-card" onSubmit={submit} aria-labelledby="setup-title">
        <div class="brand brand-large">
          <span class="logo" aria-hidden="true">
            ◆
          </span>{' '}
          dbq
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
        <NewPasswordFields
          password={password}
          confirm={confirm}
          onPassword={editPassword(setPassword)}
          onConfirm={editPassword(setConfirm)}
          label="Password"
          hint
        />
        <button type="submit" class="btn btn-primary btn-block" disabled={busy}>
          Create admin
        </button>
      </form>
    </main>
  );
}
