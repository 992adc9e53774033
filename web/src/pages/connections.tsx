import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, handleSignedOut } from '../api.ts';
import { ConfirmDialog } from '../components/confirm-dialog.tsx';
import { ConnectionAccess } from '../components/connection-access.tsx';
import { ErrorBox, Layout } from '../components/layout.tsx';
import { href } from '../env.ts';
import { useMe } from '../hooks.ts';

type Engine = 'postgres' | 'mysql' | 'sqlite';

export interface Connection {
  id: string;
  name: string;
  engine: Engine;
  host: string | null;
  port: number | null;
  database: string;
  user: string | null;
  ssl: boolean;
  readOnly: boolean;
  maxConnections: number;
  /** Who reads log in as (reader credentials); null: the connection's user. */
  readUser: string | null;
  readAccess: ReadAccess | null;
  /** The SSH bastion, without its key or password; hostKey is the pinned SHA256 fingerprint. */
  ssh?: PublicSsh | null;
}

interface PublicSsh {
  host: string;
  port: number;
  user: string;
  hostKey: string;
}

interface ReadAccess {
  level: 'read_only' | 'can_write' | 'superuser';
  findings: string[];
}

type TestOutcome = ({ ok: true; latencyMs: number; serverVersion: string } | { ok: false; latencyMs: number; error: string }) & {
  readAccess?: ReadAccess | null;
};

const ENGINE_LABEL: Record<Engine, string> = { postgres: 'PostgreSQL', mysql: 'MySQL / MariaDB', sqlite: 'SQLite' };
const DEFAULT_PORT: Record<Engine, string> = { postgres: '5432', mysql: '3306', sqlite: '' };

interface FormState {
  mode: 'fields' | 'url';
  name: string;
  engine: Engine;
  url: string;
  host: string;
  port: string;
  database: string;
  user: string;
  password: string;
  ssl: boolean;
  /** PEM texts for verify-full against a private CA and a client certificate: write-only,
   * sent only when typed (blank on an edit keeps the stored ones). */
  sslCa: string;
  sslCert: string;
  sslKey: string;
  readOnly: boolean;
  maxConnections: string;
  createReader: boolean;
  /** Reach the database through an SSH bastion. */
  ssh: boolean;
  sshHost: string;
  sshPort: string;
  sshUser: string;
  sshAuth: 'key' | 'password';
  sshPrivateKey: string;
  sshPassword: string;
  sshHostKey: string;
}

const EMPTY: FormState = {
  mode: 'fields',
  name: '',
  engine: 'postgres',
  url: '',
  host: '',
  port: '5432',
  database: '',
  user: '',
  password: '',
  ssl: false,
  sslCa: '',
  sslCert: '',
  sslKey: '',
  readOnly: false,
  maxConnections: '10',
  createReader: false,
  ssh: false,
  sshHost: '',
  sshPort: '22',
  sshUser: '',
  sshAuth: 'key',
  sshPrivateKey: '',
  sshPassword: '',
  sshHostKey: '',
};

function formOf(c: Connection): FormState {
  return {
    ...EMPTY,
    name: c.name,
    engine: c.engine,
    host: c.host ?? '',
    port: c.port ? String(c.port) : DEFAULT_PORT[c.engine],
    database: c.database,
    user: c.user ?? '',
    ssl: c.ssl,
    readOnly: c.readOnly,
    maxConnections: String(c.maxConnections),
    // The bastion as stored: never its key or password (the record has neither).
    ...(c.ssh ? { ssh: true, sshHost: c.ssh.host, sshPort: String(c.ssh.port), sshUser: c.ssh.user, sshHostKey: c.ssh.hostKey } : {}),
  };
}

/** The `ssh` part of a request body: the bastion when the section is on (its key or password
 * only when typed; left blank on an edit, the stored one is kept for the same host, port and
 * user), null to remove a stored one, nothing otherwise. */
function sshOf(f: FormState, had: boolean): Record<string, unknown> | null | undefined {
  if (isSqlite(f)) return undefined;
  if (!f.ssh) return had ? null : undefined;
  const ssh: Record<string, unknown> = { host: f.sshHost.trim(), user: f.sshUser.trim(), hostKey: f.sshHostKey.trim() };
  if (f.sshPort) ssh.port = Number(f.sshPort);
  if (f.sshAuth === 'key' && f.sshPrivateKey.trim()) ssh.privateKey = f.sshPrivateKey.trim() + '\n';
  if (f.sshAuth === 'password' && f.sshPassword) ssh.password = f.sshPassword;
  return ssh;
}

/** The request body: secrets only when typed (the form never shows a saved one). */
function bodyOf(f: FormState, editing: boolean, hadSsh = false): Record<string, unknown> {
  const common: Record<string, unknown> = { name: f.name.trim(), readOnly: f.readOnly, maxConnections: Number(f.maxConnections) || 10 };
  if (f.createReader && !isSqlite(f)) common.createReader = true;
  const ssh = sshOf(f, hadSsh);
  if (ssh !== undefined) common.ssh = ssh;
  if (f.mode === 'url') return { ...common, url: f.url.trim() };
  const body: Record<string, unknown> = { ...common, engine: f.engine, database: f.database.trim() };
  if (f.engine !== 'sqlite') {
    body.host = f.host.trim();
    if (f.port) body.port = Number(f.port);
    body.user = f.user.trim();
    body.ssl = f.ssl;
    if (f.password || !editing) body.password = f.password || null;
    if (f.ssl) {
      const pem = (text: string) => `${text.trim()}\n`;
      if (f.sslCa.trim()) body.sslCa = pem(f.sslCa);
      if (f.sslCert.trim()) body.sslCert = pem(f.sslCert);
      if (f.sslKey.trim()) body.sslKey = pem(f.sslKey);
    } else if (editing) {
      // TLS off drops a stored CA and client certificate with it (the API refuses ssl: false
      // beside them).
      body.sslCa = null;
      body.sslCert = null;
      body.sslKey = null;
    }
  }
  return body;
}

function isSqlite(f: FormState): boolean {
  return f.mode === 'url' ? /^sqlite:/i.test(f.url.trim()) : f.engine === 'sqlite';
}

const LEVEL_LABEL: Record<ReadAccess['level'], string> = { read_only: 'read-only', can_write: 'can write', superuser: 'superuser' };

function describe(c: Connection): string {
  if (c.engine === 'sqlite') return c.database;
  return `${c.user ? `${c.user}@` : ''}${c.host}:${c.port}/${c.database}`;
}

export function ConnectionsPage() {
  const { me } = useMe();
  const isAdmin = me?.user.role === 'admin';
  const [connections, setConnections] = useState<Connection[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [editing, setEditing] = useState<Connection | 'new' | null>(null);
  const [form, setForm] = useState<FormState>(EMPTY);
  const [formError, setFormError] = useState<string | null>(null);
  const [formTest, setFormTest] = useState<TestOutcome | null>(null);
  const [busy, setBusy] = useState(false);
  const [tests, setTests] = useState<Record<string, TestOutcome | 'running'>>({});
  const [deleting, setDeleting] = useState<Connection | null>(null);
  const [access, setAccess] = useState<Connection | null>(null);
  const nameRef = useRef<HTMLInputElement>(null);

  const fail = (err: unknown, set = setError) => {
    if (!handleSignedOut(err)) set(err instanceof ApiError ? err.message : String(err));
  };
  const load = () =>
    api.get<{ connections: Connection[] }>('/connections').then(
      (d) => setConnections(d.connections),
      (e) => fail(e),
    );

  useEffect(() => {
    if (me) void load();
  }, [me]);
  useEffect(() => {
    if (editing) nameRef.current?.focus();
  }, [editing]);

  const open = (target: Connection | 'new') => {
    setEditing(target);
    setForm(target === 'new' ? EMPTY : formOf(target));
    setFormError(null);
    setFormTest(null);
  };
  const set = (patch: Partial<FormState>) => setForm((f) => ({ ...f, ...patch }));

  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setFormError(null);
    try {
      if (editing === 'new') await api.post('/connections', bodyOf(form, false));
      else if (editing) await api.patch(`/connections/${encodeURIComponent(editing.id)}`, bodyOf(form, true, Boolean(editing.ssh)));
      setEditing(null);
      await load();
    } catch (err) {
      // An earlier green test result beside this red refusal would read as "saved".
      setFormTest(null);
      fail(err, setFormError);
    } finally {
      setBusy(false);
    }
  };

  const testForm = async () => {
    setFormTest(null);
    setFormError(null);
    try {
      const { name: _name, createReader: _createReader, ...settings } = bodyOf(form, false);
      setFormTest(await api.post<TestOutcome>('/connections/test', settings));
    } catch (err) {
      fail(err, setFormError);
    }
  };

  const test = async (c: Connection) => {
    setTests((t) => ({ ...t, [c.id]: 'running' }));
    try {
      const outcome = await api.post<TestOutcome>('/connections/test', { connectionId: c.id });
      setTests((t) => ({ ...t, [c.id]: outcome }));
      // The test audits what reads can do and stores it on the record.
      if (outcome.ok && outcome.readAccess) {
        const readAccess = outcome.readAccess;
        setConnections((list) => list && list.map((x) => (x.id === c.id ? { ...x, readAccess } : x)));
      }
    } catch (err) {
      setTests((t) => ({ ...t, [c.id]: { ok: false, latencyMs: 0, error: err instanceof ApiError ? err.message : String(err) } }));
    }
  };

  const remove = async () => {
    if (!deleting) return;
    setBusy(true);
    try {
      await api.del(`/connections/${encodeURIComponent(deleting.id)}`);
      setDeleting(null);
      await load();
    } catch (err) {
      setDeleting(null);
      fail(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Layout me={me}>
      <div class="page-head">
        <div>
          <h1>Connections</h1>
          <p class="muted">
            {isAdmin
              ? 'Databases this workspace can query. Passwords are stored encrypted and never shown again.'
              : 'Databases this workspace can query. Only admins can add or change them.'}
          </p>
        </div>
        {isAdmin && !editing && (
          <button type="button" class="btn btn-primary" onClick={() => open('new')}>
            Add connection
          </button>
        )}
      </div>
      <ErrorBox error={error} />
      {editing && (
        <form class="card conn-form" onSubmit={save} aria-labelledby="conn-form-title">
          <h2 id="conn-form-title">{editing === 'new' ? 'New connection' : `Edit ${editing.name}`}</h2>
          <ErrorBox error={formError} />
          <div class="grid-form">
            <label class="field">
              <span>Name</span>
              <input
                ref={nameRef}
                required
                pattern="[A-Za-z0-9][A-Za-z0-9_.\-]*"
                title="Letters, digits, _ . -"
                value={form.name}
                onInput={(e) => set({ name: e.currentTarget.value })}
              />
            </label>
            <fieldset class="field segmented">
              <legend>Configure with</legend>
              <label>
                <input type="radio" name="mode" checked={form.mode === 'fields'} onChange={() => set({ mode: 'fields' })} /> Fields
              </label>
              <label>
                <input type="radio" name="mode" checked={form.mode === 'url'} onChange={() => set({ mode: 'url' })} /> URL
              </label>
            </fieldset>
          </div>
          {form.mode === 'url' ? (
            <label class="field">
              <span>Connection URL</span>
              <input
                required
                autocomplete="off"
                spellcheck={false}
                placeholder="postgres://user:password@host:5432/db?sslmode=require · mysql://… · sqlite:file.db"
                value={form.url}
                onInput={(e) => set({ url: e.currentTarget.value })}
              />
              <small class="muted">Write-only: the URL's password is stored encrypted and never shown again.</small>
            </label>
          ) : (
            <div class="grid-form">
              <label class="field">
                <span>Engine</span>
                <select
                  value={form.engine}
                  onChange={(e) => {
                    const engine = e.currentTarget.value as Engine;
                    set({ engine, port: DEFAULT_PORT[engine] });
                  }}
                >
                  <option value="postgres">PostgreSQL</option>
                  <option value="mysql">MySQL / MariaDB</option>
                  <option value="sqlite">SQLite</option>
                </select>
              </label>
              {form.engine === 'sqlite' ? (
                <label class="field span-2">
                  <span>Database file</span>
                  <input
                    required
                    placeholder="sample.db (inside the server's SQLite directory)"
                    value={form.database}
                    onInput={(e) => set({ database: e.currentTarget.value })}
                  />
                </label>
              ) : (
                <>
                  <label class="field">
                    <span>Host</span>
                    <input required value={form.host} onInput={(e) => set({ host: e.currentTarget.value })} />
                  </label>
                  <label class="field">
                    <span>Port</span>
                    <input type="number" min={1} max={65535} value={form.port} onInput={(e) => set({ port: e.currentTarget.value })} />
                  </label>
                  <label class="field">
                    <span>Database</span>
                    <input required value={form.database} onInput={(e) => set({ database: e.currentTarget.value })} />
                  </label>
                  <label class="field">
                    <span>User</span>
                    <input autocomplete="off" value={form.user} onInput={(e) => set({ user: e.currentTarget.value })} />
                  </label>
                  <label class="field">
                    <span>Password</span>
                    <input
                      type="password"
                      autocomplete="new-password"
                      placeholder={editing === 'new' ? '' : 'Leave blank to keep'}
                      value={form.password}
                      onInput={(e) => set({ password: e.currentTarget.value })}
                    />
                  </label>
                  <label class="check">
                    <input type="checkbox" checked={form.ssl} onChange={(e) => set({ ssl: e.currentTarget.checked })} /> Require TLS (SSL)
                  </label>
                  {form.ssl && <TlsFields form={form} set={set} editing={editing !== 'new'} />}
                </>
              )}
            </div>
          )}
          {!isSqlite(form) && <SshSection key={editing === 'new' ? 'new' : editing.id} form={form} set={set} editing={editing !== 'new'} />}
          {!isSqlite(form) && (
            <label class="check">
              <input type="checkbox" checked={form.createReader} onChange={(e) => set({ createReader: e.currentTarget.checked })} />{' '}
              {editing !== 'new' && editing.readUser
                ? 'Replace the reads login with a new read-only login'
                : 'Create a read-only login for reads'}
              <small class="muted">dbq uses these credentials once to create a login that can only read; every read then runs as it.</small>
            </label>
          )}
          <div class="grid-form">
            <label class="check">
              <input type="checkbox" checked={form.readOnly} onChange={(e) => set({ readOnly: e.currentTarget.checked })} /> Read-only
              (every query runs as a read)
            </label>
            <label class="field">
              <span>Max connections</span>
              <input
                type="number"
                min={1}
                max={100}
                value={form.maxConnections}
                onInput={(e) => set({ maxConnections: e.currentTarget.value })}
              />
            </label>
          </div>
          {formTest && <TestResult outcome={formTest} />}
          <div class="form-actions">
            <button type="submit" class="btn btn-primary" disabled={busy}>
              Save
            </button>
            {editing === 'new' && (
              <button type="button" class="btn" onClick={testForm}>
                Test settings
              </button>
            )}
            <button type="button" class="btn btn-ghost" onClick={() => setEditing(null)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      {/* The reads-login warning and its fix are the admin's to act on; a reader gets what they may do. */}
      {connections && isAdmin && (
        <ReadAccessWarning connections={connections} workspace={me?.workspace.slug ?? 'default'} isAdmin={isAdmin} />
      )}
      {connections && me && !isAdmin && connections.length > 0 && (
        <div class="alert alert-info" role="status" data-testid="reader-can">
          Your role (read-only) may run read statements on these connections: in the <a href={href('/')}>console</a>, with{' '}
          <a href={href('/tools')}>tools</a>, or with an <a href={href('/settings/api-keys')}>API key</a>. Writes are refused whatever a
          connection allows.
        </div>
      )}
      {connections === null ? (
        <p class="muted">Loading…</p>
      ) : connections.length === 0 ? (
        <p class="empty">No connections yet.</p>
      ) : (
        <div class="table-wrap">
          <table class="data">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Engine</th>
                <th scope="col">Location</th>
                <th scope="col">Mode</th>
                <th scope="col">Test</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {connections.map((c) => {
                const t = tests[c.id];
                return (
                  <tr key={c.id}>
                    <td>
                      <strong>{c.name}</strong>
                    </td>
                    <td>{ENGINE_LABEL[c.engine]}</td>
                    <td>
                      <code>{describe(c)}</code>
                      {c.ssl && <span class="badge">TLS</span>}
                      {c.ssh && (
                        <span class="badge" title={`SSH ${c.ssh.user}@${c.ssh.host}:${c.ssh.port} · host key ${c.ssh.hostKey}`}>
                          SSH
                        </span>
                      )}
                    </td>
                    <td>
                      {!isAdmin ? (
                        <span class="badge">you: read</span>
                      ) : c.readOnly ? (
                        <span class="badge">read-only</span>
                      ) : (
                        <span class="muted">read/write</span>
                      )}
                      {isAdmin && c.readAccess && c.readAccess.level !== 'read_only' && (
                        <span class="badge badge-warn" title={c.readAccess.findings.join('\n')}>
                          reads: {LEVEL_LABEL[c.readAccess.level]}
                        </span>
                      )}
                      {isAdmin && c.readUser && <div class="muted hint">reads as {c.readUser}</div>}
                    </td>
                    <td class="test-cell" aria-live="polite">
                      {t === 'running' ? <span class="muted">Testing…</span> : t ? <TestResult outcome={t} /> : null}
                    </td>
                    <td class="actions">
                      <button type="button" class="btn btn-small" aria-label={`Test ${c.name}`} onClick={() => test(c)}>
                        Test
                      </button>
                      {isAdmin && (
                        <>
                          <button type="button" class="btn btn-small" aria-label={`Edit ${c.name}`} onClick={() => open(c)}>
                            Edit
                          </button>
                          <button type="button" class="btn btn-small" aria-label={`Access to ${c.name}`} onClick={() => setAccess(c)}>
                            Access
                          </button>
                          <button
                            type="button"
                            class="btn btn-small btn-danger-outline"
                            aria-label={`Delete ${c.name}`}
                            onClick={() => setDeleting(c)}
                          >
                            Delete
                          </button>
                        </>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {isAdmin && (
        <ConnectionAccess
          connection={access}
          onClose={() => setAccess(null)}
          onError={(err) => setError(err instanceof ApiError ? err.message : String(err))}
        />
      )}
      <ConfirmDialog
        open={deleting !== null}
        title="Delete connection?"
        confirmLabel="Delete"
        danger
        busy={busy}
        onConfirm={remove}
        onCancel={() => setDeleting(null)}
      >
        <p>
          <strong>{deleting?.name}</strong> will be removed from this workspace. Its query history stays. Programs using it by name will get
          “Connection not found”.
        </p>
      </ConfirmDialog>
    </Layout>
  );
}

/** Connections whose reads log in with more than read access, and the one command that fixes
 * each (docs/security.md, "Reader credentials"). Not shown while an audit is unknown. */
function ReadAccessWarning({ connections, workspace, isAdmin }: { connections: Connection[]; workspace: string; isAdmin: boolean }) {
  const flagged = connections.filter((c) => c.readAccess && c.readAccess.level !== 'read_only');
  if (!flagged.length) return null;
  return (
    <div class="alert alert-warn" role="status">
      <strong>Reads use a login that can do more than read.</strong> dbq's guard still refuses whatever is not known to be a read; a login
      that can only read is the layer that holds where the guard could miss. Fix with a read-only login made by dbq
      {isAdmin ? ' (or Edit → Create a read-only login for reads)' : ''}:
      <ul>
        {flagged.map((c) => (
          <li key={c.id}>
            <strong>{c.name}</strong>: {c.readAccess!.findings.join('; ')}
            <br />
            <code>
              dbq connection set-reader --workspace {workspace} --connection {c.name} --create
            </code>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** "SSH tunnel": reach the database through a bastion (docs/security.md, SSH tunnels). Secrets
 * are write-only: an edit shows the stored host, port, user and pinned host key, never the key
 * or password. */
function SshSection({ form, set, editing }: { form: FormState; set: (patch: Partial<FormState>) => void; editing: boolean }) {
  const keep = editing ? 'Leave blank to keep' : '';
  // Open at first when a bastion is set; then the summary decides.
  const [shown, setShown] = useState(form.ssh);
  return (
    <details class="ssh-section" open={shown} onToggle={(e) => setShown(e.currentTarget.open)}>
      <summary>SSH tunnel{form.ssh ? `: ${form.sshUser || '…'}@${form.sshHost || '…'}` : ''}</summary>
      <label class="check">
        <input type="checkbox" checked={form.ssh} onChange={(e) => set({ ssh: e.currentTarget.checked })} /> Connect through an SSH bastion
      </label>
      {form.ssh && (
        <div class="grid-form">
          <label class="field">
            <span>SSH host</span>
            <input
              required
              autocomplete="off"
              spellcheck={false}
              value={form.sshHost}
              onInput={(e) => set({ sshHost: e.currentTarget.value })}
            />
          </label>
          <label class="field">
            <span>SSH port</span>
            <input type="number" min={1} max={65535} value={form.sshPort} onInput={(e) => set({ sshPort: e.currentTarget.value })} />
          </label>
          <label class="field">
            <span>SSH user</span>
            <input
              required
              autocomplete="off"
              spellcheck={false}
              value={form.sshUser}
              onInput={(e) => set({ sshUser: e.currentTarget.value })}
            />
          </label>
          <fieldset class="field segmented">
            <legend>SSH authentication</legend>
            <label>
              <input type="radio" name="ssh-auth" checked={form.sshAuth === 'key'} onChange={() => set({ sshAuth: 'key' })} /> Use a private
              key
            </label>
            <label>
              <input type="radio" name="ssh-auth" checked={form.sshAuth === 'password'} onChange={() => set({ sshAuth: 'password' })} /> Use
              a password
            </label>
          </fieldset>
          {form.sshAuth === 'key' ? (
            <label class="field span-2">
              <span>SSH private key</span>
              <textarea
                rows={4}
                autocomplete="off"
                spellcheck={false}
                required={!editing}
                placeholder={editing ? 'Leave blank to keep the stored key' : '-----BEGIN OPENSSH PRIVATE KEY-----'}
                value={form.sshPrivateKey}
                onInput={(e) => set({ sshPrivateKey: e.currentTarget.value })}
              />
              <small class="muted">Unencrypted OpenSSH or PEM key. Write-only: stored encrypted and never shown again.</small>
            </label>
          ) : (
            <label class="field">
              <span>SSH password</span>
              <input
                type="password"
                autocomplete="new-password"
                required={!editing}
                placeholder={keep}
                value={form.sshPassword}
                onInput={(e) => set({ sshPassword: e.currentTarget.value })}
              />
            </label>
          )}
          <label class="field span-2">
            <span>SSH host key</span>
            <input
              required
              autocomplete="off"
              spellcheck={false}
              placeholder="ssh-ed25519 AAAA… · a known_hosts line · SHA256:…"
              value={form.sshHostKey}
              onInput={(e) => set({ sshHostKey: e.currentTarget.value })}
            />
            <small class="muted">The bastion's key is pinned: a server presenting another key is refused.</small>
          </label>
        </div>
      )}
    </details>
  );
}

function TestResult({ outcome }: { outcome: TestOutcome }) {
  return outcome.ok ? (
    <span class="test-ok">
      ✓ {outcome.latencyMs} ms · {outcome.serverVersion}
    </span>
  ) : (
    <span class="test-fail">
      ✗ {outcome.error} ({outcome.latencyMs} ms)
    </span>
  );
}

/** A private CA and a client certificate, for TLS that verifies the server (verify-full): the
 * server's certificate must chain to the CA given (the system CAs without one) and name the
 * host dialled. Write-only, like the password: an edit shows blanks and keeps what is stored. */
function TlsFields({ form, set, editing }: { form: FormState; set: (p: Partial<FormState>) => void; editing: boolean }) {
  const keep = editing ? 'Leave blank to keep the stored one (if any)' : '';
  const area = (label: string, field: 'sslCa' | 'sslCert' | 'sslKey', placeholder: string) => (
    <label class="field span-2">
      <span>{label}</span>
      <textarea
        rows={3}
        autocomplete="off"
        spellcheck={false}
        placeholder={keep || placeholder}
        value={form[field]}
        onInput={(e) => set({ [field]: e.currentTarget.value })}
      />
    </label>
  );
  return (
    <>
      {area('CA certificate (PEM)', 'sslCa', '-----BEGIN CERTIFICATE----- (blank: the system CAs)')}
      {area('Client certificate (PEM)', 'sslCert', '-----BEGIN CERTIFICATE----- (only if the server asks for one)')}
      {area('Client key (PEM)', 'sslKey', '-----BEGIN PRIVATE KEY----- (with the client certificate)')}
      <small class="muted span-2">
        The server's certificate must chain to this CA and be issued for the host above. Stored encrypted with the password and never shown
        again; unticking TLS removes them.
      </small>
    </>
  );
}
