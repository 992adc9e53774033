import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, handleSignedOut } from '../api.ts';
import { ConfirmDialog } from '../components/confirm-dialog.tsx';
import { ConnectedApps } from '../components/connected-apps.tsx';
import { ErrorBox, Layout } from '../components/layout.tsx';
import { KeyLifetimeSetting } from '../components/key-lifetime-setting.tsx';
import { NewKeyForm, scopeText, type KeyRequest } from '../components/new-key-form.tsx';
import { formatTime, relativeTime } from '../format.ts';
import { useMe } from '../hooks.ts';

interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  user: { id: string; email: string };
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  scope: { readOnly?: boolean; connections?: string[]; toolsOnly?: boolean; tools?: string[] } | null;
  expiresAt: string | null;
  expiresSoon: boolean;
  expired: boolean;
}

function StatusBadge({ k }: { k: ApiKey }) {
  if (k.revokedAt)
    return (
      <span class="badge badge-muted" title={`Revoked ${formatTime(k.revokedAt)}`}>
        Revoked
      </span>
    );
  if (k.expired)
    return (
      <span class="badge badge-muted" title={`Expired ${formatTime(k.expiresAt!)}`}>
        Expired
      </span>
    );
  if (k.expiresSoon)
    return (
      <span class="badge badge-warn" title={`Expires ${formatTime(k.expiresAt!)}`}>
        Expires soon
      </span>
    );
  return <span class="badge badge-ok">Active</span>;
}

export function ApiKeysPage() {
  const { me } = useMe();
  const [keys, setKeys] = useState<ApiKey[] | null>(null);
  const [scope, setScope] = useState<'workspace' | 'own'>('own');
  const [error, setError] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const [connections, setConnections] = useState<{ id: string; name: string }[]>([]);
  const [maxKeyDays, setMaxKeyDays] = useState<number | null>(null);
  const [tools, setTools] = useState<{ name: string; connectionId: string; description: string }[]>([]);
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<{ apiKey: ApiKey; secret: string } | null>(null);
  const [copied, setCopied] = useState(false);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const [removing, setRemoving] = useState<ApiKey | null>(null);
  const secretRef = useRef<HTMLElement>(null);

  const names = new Map(connections.map((c) => [c.id, c.name]));
  const fail = (err: unknown) => {
    if (!handleSignedOut(err)) setError(err instanceof ApiError ? err.message : String(err));
  };
  const load = () =>
    api
      .get<{ apiKeys: ApiKey[]; scope: 'workspace' | 'own'; maxKeyDays: number | null; connections: { id: string; name: string }[] }>(
        '/keys',
      )
      .then((d) => {
        setKeys(d.apiKeys);
        setScope(d.scope);
        setMaxKeyDays(d.maxKeyDays);
        setConnections(d.connections);
      }, fail);

  useEffect(() => {
    if (me) void load();
  }, [me]);
  // The tools a key may be narrowed to, picked rather than typed.
  useEffect(() => {
    if (creating)
      api.get<{ tools: { name: string; connectionId: string; description: string }[] }>('/tools').then((d) => setTools(d.tools), fail);
  }, [creating]);
  const create = async (request: KeyRequest) => {
    setBusy(true);
    setError(null);
    try {
      const result = await api.post<{ apiKey: ApiKey; secret: string }>('/keys', request);
      setCreated(result);
      setCopied(false);
      setCreating(false);
      await load();
      secretRef.current?.focus();
    } catch (err) {
      // A green "created" card left above a red refusal reads as if this attempt worked.
      setCreated(null);
      fail(err);
    } finally {
      setBusy(false);
    }
  };

  const copy = async () => {
    if (!created) return;
    try {
      await navigator.clipboard.writeText(created.secret);
      setCopied(true);
    } catch {
      // Clipboard refused (permissions, plain http): select the text for a manual copy.
      const range = document.createRange();
      if (secretRef.current) {
        range.selectNodeContents(secretRef.current);
        getSelection()?.removeAllRanges();
        getSelection()?.addRange(range);
      }
    }
  };

  const revoke = async () => {
    if (!revoking) return;
    setBusy(true);
    try {
      await api.post(`/keys/${encodeURIComponent(revoking.id)}/revoke`);
      setRevoking(null);
      await load();
    } catch (err) {
      setRevoking(null);
      fail(err);
    } finally {
      setBusy(false);
    }
  };

  const remove = async () => {
    if (!removing) return;
    setBusy(true);
    setError(null);
    try {
      await api.del(`/keys/${encodeURIComponent(removing.id)}`);
      setRemoving(null);
      await load();
    } catch (err) {
      setRemoving(null);
      fail(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Layout me={me}>
      <div class="page-head">
        <div>
          <h1>API keys</h1>
          <p class="muted">
            Keys authenticate programs against <code>/api</code>, <code>/mcp</code> and <code>/sse</code> with your permissions, or fewer: a
            key can be read-only, limited to some connections or to curated tools, and expire.
            {scope === 'workspace' ? ' As an admin you see every key in this workspace.' : ' You see your own keys.'}
          </p>
        </div>
        {!creating && (
          <button
            type="button"
            class="btn btn-primary"
            onClick={() => {
              setCreating(true);
              setCreated(null);
            }}
          >
            Create API key
          </button>
        )}
      </div>
      <ErrorBox error={error} />
      {scope === 'workspace' && keys !== null && <KeyLifetimeSetting maxKeyDays={maxKeyDays} onSaved={setMaxKeyDays} onError={fail} />}
      {creating && (
        <NewKeyForm
          connections={connections}
          tools={tools}
          maxKeyDays={maxKeyDays}
          busy={busy}
          onSubmit={create}
          onCancel={() => setCreating(false)}
        />
      )}
      {created && (
        <section class="card new-key" role="status" aria-labelledby="new-key-title">
          <h2 id="new-key-title">API key “{created.apiKey.name}” created</h2>
          <p>
            <strong>This key will not be shown again.</strong> Copy it now and store it somewhere safe.
          </p>
          <div class="secret-row">
            <code class="secret" ref={secretRef} tabIndex={0} data-testid="new-key-secret">
              {created.secret}
            </code>
            <button type="button" class="btn" onClick={copy}>
              {copied ? 'Copied' : 'Copy'}
            </button>
          </div>
          <button type="button" class="btn btn-ghost" onClick={() => setCreated(null)}>
            Done
          </button>
        </section>
      )}
      {keys === null ? (
        <p class="muted">Loading…</p>
      ) : keys.length === 0 ? (
        <p class="empty">No API keys yet.</p>
      ) : (
        <div class="table-wrap">
          <table class="data">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Prefix</th>
                <th scope="col">Created by</th>
                <th scope="col">Scope</th>
                <th scope="col">Created</th>
                <th scope="col">Expires</th>
                <th scope="col">Last used</th>
                <th scope="col">Status</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr key={k.id} class={k.revokedAt ? 'revoked' : ''}>
                  <td>{k.name}</td>
                  <td>
                    <code>{k.prefix}…</code>
                  </td>
                  <td>{k.user.email}</td>
                  <td>{scopeText(k.scope, names)}</td>
                  <td title={k.createdAt}>{formatTime(k.createdAt)}</td>
                  <td title={k.expiresAt ?? ''}>{k.expiresAt ? formatTime(k.expiresAt) : 'Never'}</td>
                  <td title={k.lastUsedAt ?? ''}>{relativeTime(k.lastUsedAt)}</td>
                  <td>
                    <StatusBadge k={k} />
                  </td>
                  <td class="actions">
                    {k.revokedAt ? (
                      <button type="button" class="btn btn-small" aria-label={`Remove ${k.name}`} onClick={() => setRemoving(k)}>
                        Remove
                      </button>
                    ) : (
                      <button
                        type="button"
                        class="btn btn-small btn-danger-outline"
                        aria-label={`Revoke ${k.name}`}
                        onClick={() => setRevoking(k)}
                      >
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {keys !== null && <ConnectedApps names={names} all={scope === 'workspace'} />}
      <ConfirmDialog
        open={revoking !== null}
        title="Revoke API key?"
        confirmLabel="Revoke"
        danger
        busy={busy}
        onConfirm={revoke}
        onCancel={() => setRevoking(null)}
      >
        <p>
          Programs using <strong>{revoking?.name}</strong> (<code>{revoking?.prefix}…</code>) will be refused from their next request. This
          cannot be undone.
        </p>
      </ConfirmDialog>
      <ConfirmDialog
        open={removing !== null}
        title="Remove revoked key?"
        confirmLabel="Remove"
        busy={busy}
        onConfirm={remove}
        onCancel={() => setRemoving(null)}
      >
        <p>
          <strong>{removing?.name}</strong> (<code>{removing?.prefix}…</code>) leaves this list. Query history keeps the key's name on the
          queries it ran.
        </p>
      </ConfirmDialog>
    </Layout>
  );
}
