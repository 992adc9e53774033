import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { InvalidLink, linkToken, useTokenOutOfAddressBar } from '../components/one-time-link.tsx';
import { NewPasswordFields, useNewPasswordForm } from '../components/password-fields.tsx';
import { href, STATUS, WORKSPACE } from '../env.ts';

const token = linkToken();

/** A one-time "set your password" link (a new user, or an admin's reset). */
export function SetPasswordPage() {
  const [done, setDone] = useState<string | null>(null);
  const { password, setPassword, confirm, setConfirm, error, busy, submit } = useNewPasswordForm(async (password) => {
    const { user } = await api.post<{ user: { email: string } }>('/set-password', { token, password });
    setDone(user.email);
  }, 'Could not set the password');
  useTokenOutOfAddressBar();

  if (STATUS !== 200 || !token) {
    return (
      <InvalidLink title="Password link not valid">
        This password link is invalid, expired or has already been used. Ask an admin for a new one.
      </InvalidLink>
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

  return (
    <main id="main" class="auth">
      <form class="card auth-card" onSubmit={submit} aria-labelledby="set-password-title">
        <div class="brand brand-large">
          <span class="logo" aria-hidden="true">
            ◆
          </span>{' '}
          dbq
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
        <NewPasswordFields password={password} confirm={confirm} onPassword={setPassword} onConfirm={setConfirm} autoFocus />
        <button type="submit" class="btn btn-primary btn-block" disabled={busy}>
          Set password
        </button>
      </form>
    </main>
  );
}
