import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, handleSignedOut } from '../api.ts';
import { ErrorBox, Layout } from '../components/layout.tsx';
import { formatTime } from '../format.ts';
import { useMe } from '../hooks.ts';

type Role = 'admin' | 'read_only';

interface User {
  id: string;
  email: string;
  role: Role;
  disabled: boolean;
  createdAt: string;
}

const ROLE_LABEL: Record<Role, string> = { admin: 'Admin', read_only: 'Read only' };

export function UsersPage() {
  const { me } = useMe();
  const [users, setUsers] = useState<User[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [adding, setAdding] = useState(false);
  const [form, setForm] = useState({ email: '', role: 'read_only' as Role, password: '' });
  const [busy, setBusy] = useState(false);
  const [link, setLink] = useState<{ email: string; url: string; expiresAt: string } | null>(null);
  const emailRef = useRef<HTMLInputElement>(null);

  const fail = (err: unknown) => {
    if (!handleSignedOut(err)) setError(err instanceof ApiError ? err.message : String(err));
  };
  const load = () => api.get<{ users: User[] }>('/users').then((d) => setUsers(d.users), fail);

  useEffect(() => {
    if (me) void load();
  }, [me]);
  useEffect(() => {
    if (adding) emailRef.current?.focus();
  }, [adding]);

  const create = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const { user } = await api.post<{ user: User }>('/users', form);
      setNotice(`Created ${user.email} (${ROLE_LABEL[user.role]}).`);
      setForm({ email: '', role: 'read_only', password: '' });
      setAdding(false);
      await load();
    } catch (err) {
      fail(err);
    } finally {
      setBusy(false);
    }
  };

  const update = async (user: User, change: { role?: Role; disabled?: boolean }, message: string) => {
    setError(null);
    try {
      await api.patch(`/users/${encodeURIComponent(user.id)}`, change);
      setNotice(message);
      await load();
    } catch (err) {
      fail(err);
      await load();
    }
  };

  // A one-time link, shown once: the admin passes it on; it sets a new password and signs the
  // user out everywhere.
  const resetLink = async (user: User) => {
    setError(null);
    setNotice(null);
    try {
      const made = await api.post<{ url: string; expiresAt: string }>(`/users/${encodeURIComponent(user.id)}/password-link`);
      setLink({ email: user.email, url: made.url, expiresAt: made.expiresAt });
    } catch (err) {
      fail(err);
    }
  };

  return (
    <Layout me={me}>
      <div class="page-head">
        <div>
          <h1>Users</h1>
          <p class="muted">Admins manage connections, users and every key; read-only users run read queries and manage their own keys.</p>
        </div>
        {!adding && (
          <button type="button" class="btn btn-primary" onClick={() => setAdding(true)}>
            Add user
          </button>
        )}
      </div>
      <ErrorBox error={error} />
      {notice && (
        <div class="alert alert-ok" role="status">
          {notice}
        </div>
      )}
      {link && (
        <div class="alert alert-ok" role="status" aria-label="Password link">
          <p>
            One-time link for {link.email} to set a new password (valid until {formatTime(link.expiresAt)}; shown only now):
          </p>
          <p>
            <code class="secret" data-testid="password-link">
              {link.url}
            </code>
          </p>
          <button type="button" class="btn btn-small" onClick={() => setLink(null)}>
            Done
          </button>
        </div>
      )}
      {adding && (
        <form class="card inline-form grid-form" onSubmit={create} aria-label="New user">
          <label class="field">
            <span>Email</span>
            <input
              ref={emailRef}
              type="email"
              required
              value={form.email}
              onInput={(e) => setForm({ ...form, email: e.currentTarget.value })}
            />
          </label>
          <label class="field">
            <span>Role</span>
            <select value={form.role} onChange={(e) => setForm({ ...form, role: e.currentTarget.value as Role })}>
              <option value="read_only">Read only</option>
              <option value="admin">Admin</option>
            </select>
          </label>
          <label class="field">
            <span>Initial password</span>
            <input
              type="password"
              autocomplete="new-password"
              minLength={8}
              required
              value={form.password}
              onInput={(e) => setForm({ ...form, password: e.currentTarget.value })}
            />
          </label>
          <div class="form-actions">
            <button type="submit" class="btn btn-primary" disabled={busy}>
              Create user
            </button>
            <button type="button" class="btn" onClick={() => setAdding(false)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      {users === null ? (
        <p class="muted">Loading…</p>
      ) : (
        <div class="table-wrap">
          <table class="data">
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {users.map((u) => {
                const self = u.id === me?.user.id;
                return (
                  <tr key={u.id} class={u.disabled ? 'revoked' : ''}>
                    <td>
                      {u.email} {self && <span class="muted">(you)</span>}
                    </td>
                    <td>
                      <select
                        aria-label={`Role of ${u.email}`}
                        value={u.role}
                        disabled={self}
                        onChange={(e) => {
                          const role = e.currentTarget.value as Role;
                          void update(u, { role }, `${u.email} is now ${ROLE_LABEL[role]}.`);
                        }}
                      >
                        <option value="read_only">Read only</option>
                        <option value="admin">Admin</option>
                      </select>
                    </td>
                    <td>{u.disabled ? <span class="badge badge-muted">Disabled</span> : <span class="badge badge-ok">Active</span>}</td>
                    <td>{formatTime(u.createdAt)}</td>
                    <td class="actions">
                      {!self && !u.disabled && (
                        <button
                          type="button"
                          class="btn btn-small"
                          aria-label={`Reset password of ${u.email}`}
                          onClick={() => resetLink(u)}
                        >
                          Reset password
                        </button>
                      )}{' '}
                      {!self &&
                        (u.disabled ? (
                          <button
                            type="button"
                            class="btn btn-small"
                            aria-label={`Enable ${u.email}`}
                            onClick={() => update(u, { disabled: false }, `${u.email} can sign in again.`)}
                          >
                            Enable
                          </button>
                        ) : (
                          <button
                            type="button"
                            class="btn btn-small btn-danger-outline"
                            aria-label={`Disable ${u.email}`}
                            onClick={() => update(u, { disabled: true }, `${u.email} is disabled: signed out, keys refused.`)}
                          >
                            Disable
                          </button>
                        ))}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </Layout>
  );
}
