// "Connected apps" on the API keys page: the OAuth grants this user gave (an admin sees the
// workspace's), each revocable. A grant's scope reads like a scoped key's; revoking it ends
// the app's access and refresh tokens at their next use.
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, handleSignedOut } from '../api.ts';
import { formatTime, relativeTime } from '../format.ts';
import { ConfirmDialog } from './confirm-dialog.tsx';
import { scopeText } from './new-key-form.tsx';
import './oauth.css';

export interface Grant {
  id: string;
  client: { id: string; name: string; redirectHost: string };
  scope: { readOnly?: boolean; connections?: string[]; toolsOnly?: boolean; tools?: string[] } | null;
  user?: { id: string; email: string };
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
}

export function ConnectedApps({ names, all }: { names: Map<string, string>; all: boolean }) {
  const [grants, setGrants] = useState<Grant[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [revoking, setRevoking] = useState<Grant | null>(null);
  const [busy, setBusy] = useState(false);

  const fail = (err: unknown) => {
    if (!handleSignedOut(err)) setError(err instanceof ApiError ? err.message : String(err));
  };
  const load = () => api.get<{ grants: Grant[] }>(`/oauth/grants${all ? '?all=true' : ''}`).then((d) => setGrants(d.grants), fail);
  useEffect(() => {
    void load();
  }, [all]);

  const revoke = async () => {
    if (!revoking) return;
    setBusy(true);
    setError(null);
    try {
      await api.post(`/oauth/grants/${encodeURIComponent(revoking.id)}/revoke`);
      setRevoking(null);
      await load();
    } catch (err) {
      setRevoking(null);
      fail(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="connected-apps" aria-labelledby="connected-apps-title">
      <h2 id="connected-apps-title">Connected apps</h2>
      <p class="muted">
        Apps you allowed through OAuth (ChatGPT, claude.ai, any MCP client that signs in), with what each may do.
        {all ? ' As an admin you see every grant in this workspace.' : ''}
      </p>
      {error && (
        <div class="alert alert-error" role="alert">
          {error}
        </div>
      )}
      {grants === null ? (
        !error && <p class="muted">Loading…</p>
      ) : grants.length === 0 ? (
        <p class="empty">No connected apps.</p>
      ) : (
        <div class="table-wrap">
          <table class="data" aria-labelledby="connected-apps-title">
            <thead>
              <tr>
                <th scope="col">App</th>
                <th scope="col">Redirects to</th>
                {all && <th scope="col">User</th>}
                <th scope="col">Scope</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Expires</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {grants.map((g) => (
                <tr key={g.id}>
                  <td>{g.client.name}</td>
                  <td>
                    <code>{g.client.redirectHost}</code>
                  </td>
                  {all && <td>{g.user?.email ?? '—'}</td>}
                  <td>{scopeText(g.scope, names)}</td>
                  <td title={g.createdAt}>{formatTime(g.createdAt)}</td>
                  <td title={g.lastUsedAt ?? ''}>{relativeTime(g.lastUsedAt)}</td>
                  <td title={g.expiresAt ?? ''}>{g.expiresAt ? formatTime(g.expiresAt) : 'Never'}</td>
                  <td class="actions">
                    <button
                      type="button"
                      class="btn btn-small btn-danger-outline"
                      aria-label={`Revoke ${g.client.name}`}
                      onClick={() => setRevoking(g)}
                    >
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ConfirmDialog
        open={revoking !== null}
        title="Revoke app access?"
        confirmLabel="Revoke"
        danger
        busy={busy}
        onConfirm={revoke}
        onCancel={() => setRevoking(null)}
      >
        <p>
          <strong>{revoking?.client.name}</strong> (<code>{revoking?.client.redirectHost}</code>) loses access from its next request; to
          connect again it must ask you again.
        </p>
      </ConfirmDialog>
    </section>
  );
}
