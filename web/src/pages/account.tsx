import { useState } from 'preact/hooks';
import { api, ApiError, handleSignedOut } from '../api.ts';
import { ErrorBox, Layout } from '../components/layout.tsx';
import { NewPasswordFields, passwordsDiffer } from '../components/password-fields.tsx';
import { useMe } from '../hooks.ts';

/** Your account: change your own password (current + new + confirm). Other sessions end. */
export function AccountPage() {
  const { me } = useMe();
  const [form, setForm] = useState({ current: '', next: '', confirm: '' });
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setNotice(null);
    const differ = passwordsDiffer(form.next, form.confirm, 'The two new passwords differ');
    if (differ) {
      setError(differ);
      return;
    }
    setBusy(true);
    try {
      await api.post('/password', { currentPassword: form.current, newPassword: form.next });
      setForm({ current: '', next: '', confirm: '' });
      setNotice('Password changed. Your other sessions are signed out.');
    } catch (err) {
      if (!handleSignedOut(err)) setError(err instanceof ApiError ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Layout me={me}>
      <div class="page-head">
        <div>
          <h1>Account</h1>
          <p class="muted">{me ? `Signed in as ${me.user.email}.` : ''}</p>
        </div>
      </div>
      <ErrorBox error={error} />
      {notice && (
        <div class="alert alert-ok" role="status">
          {notice}
        </div>
      )}
      <form class="card inline-form grid-form" onSubmit={submit} aria-label="Change password">
        <label class="field">
          <span>Current password</span>
          <input
            type="password"
            autocomplete="current-password"
            required
            value={form.current}
            onInput={(e) => setForm({ ...form, current: e.currentTarget.value })}
          />
        </label>
        <NewPasswordFields
          password={form.next}
          confirm={form.confirm}
          onPassword={(next) => setForm({ ...form, next })}
          onConfirm={(confirm) => setForm({ ...form, confirm })}
          confirmLabel="Confirm new password"
        />
        <div class="form-actions">
          <button type="submit" class="btn btn-primary" disabled={busy}>
            Change password
          </button>
        </div>
      </form>
    </Layout>
  );
}
