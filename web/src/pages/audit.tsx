import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, handleSignedOut } from '../api.ts';
import { ErrorBox, Layout } from '../components/layout.tsx';
import { formatTime } from '../format.ts';
import { useMe } from '../hooks.ts';

interface AuditEntry {
  id: string;
  action: string;
  actor: { userId: string | null; email: string | null; keyId: string | null };
  target: { type: string; id: string | null; name: string | null };
  changes: Record<string, unknown> | null;
  ip: string | null;
  source: 'api' | 'cli' | 'ui' | 'sso';
  createdAt: string;
}

// The audit actions the API knows (src/audit/audit.ts AUDIT_ACTIONS), in its order, for the filter: the browser
// app does not import server modules, so test/web-audit-actions-match.test.ts holds the two equal.
const ACTIONS = [
  'key.created',
  'key.revoked',
  'key.expired',
  'user.created',
  'user.role_changed',
  'user.disabled',
  'user.enabled',
  'connection.created',
  'connection.updated',
  'connection.deleted',
  'connection.grants_changed',
  'connection.annotations_changed',
  'tool.created',
  'tool.updated',
  'tool.deleted',
  'workspace.plan_changed',
  'workspace.settings_changed',
  'session.signed_in',
  'session.sign_in_failed',
  'sso.configured',
  'setup.used',
  'oauth.client_registered',
  'oauth.authorized',
  'oauth.revoked',
  'oauth.refresh_reuse_detected',
];
const SOURCE_LABEL: Record<AuditEntry['source'], string> = { api: 'API', cli: 'CLI', ui: 'Web', sso: 'SSO' };

interface Filters {
  action: string;
  actorId: string;
  targetId: string;
  since: string;
  until: string;
}
const NO_FILTERS: Filters = { action: '', actorId: '', targetId: '', since: '', until: '' };

/** Entries a page shows: a screenful at 1280×800 with the filters above it, not a scroll. */
const PAGE_SIZE = 25;

function queryOf(f: Filters, cursor: string | null): string {
  const q = new URLSearchParams({ limit: String(PAGE_SIZE) });
  if (f.action) q.set('action', f.action);
  if (f.actorId.trim()) q.set('actorId', f.actorId.trim());
  if (f.targetId.trim()) q.set('targetId', f.targetId.trim());
  // datetime-local is local time without a zone: turned into an instant here.
  if (f.since) q.set('since', new Date(f.since).toISOString());
  if (f.until) q.set('until', new Date(f.until).toISOString());
  if (cursor) q.set('cursor', cursor);
  return q.toString();
}

function changeText(value: unknown): string {
  if (value && typeof value === 'object' && 'from' in value && 'to' in value) {
    const v = value as { from: unknown; to: unknown };
    return `${JSON.stringify(v.from)} → ${JSON.stringify(v.to)}`;
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function Changes({ changes }: { changes: AuditEntry['changes'] }) {
  if (!changes || Object.keys(changes).length === 0) return <span class="muted">—</span>;
  return (
    <ul class="audit-changes">
      {Object.entries(changes).map(([k, v]) => (
        <li key={k}>
          <code>{k}</code>: {changeText(v)}
        </li>
      ))}
    </ul>
  );
}

export function AuditPage() {
  const { me } = useMe();
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [applied, setApplied] = useState<Filters>(NO_FILTERS);
  const [entries, setEntries] = useState<AuditEntry[] | null>(null);
  // Page by page, newest first: the cursor each page was read from (null for the first), and
  // the cursor of the page after the one shown (null when it is the last).
  const [starts, setStarts] = useState<(string | null)[]>([null]);
  const [next, setNext] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  /** Shows the page read from `pageStarts`' last cursor. */
  const load = async (f: Filters, pageStarts: (string | null)[]) => {
    setBusy(true);
    setError(null);
    try {
      const page = await api.get<{ entries: AuditEntry[]; nextCursor: string | null }>(
        `/audit?${queryOf(f, pageStarts[pageStarts.length - 1])}`,
      );
      setEntries(page.entries);
      setStarts(pageStarts);
      setNext(page.nextCursor);
    } catch (err) {
      if (!handleSignedOut(err)) setError(err instanceof ApiError ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };

  useEffect(() => {
    if (me) void load(NO_FILTERS, [null]);
  }, [me]);

  const apply = (e: Event) => {
    e.preventDefault();
    setApplied(filters);
    void load(filters, [null]);
  };
  const clear = () => {
    setFilters(NO_FILTERS);
    setApplied(NO_FILTERS);
    void load(NO_FILTERS, [null]);
  };
  const field = (name: keyof Filters) => (e: Event) => setFilters({ ...filters, [name]: (e.currentTarget as HTMLInputElement).value });

  return (
    <Layout me={me} wide>
      <div class="page-head">
        <div>
          <h1>Audit log</h1>
          <p class="muted">
            Who changed who may do what, from the API, the CLI and this web app, newest first. Secrets are never recorded.
          </p>
        </div>
      </div>
      <form class="card inline-form grid-form" onSubmit={apply} aria-label="Audit filters">
        <label class="field">
          <span>Action</span>
          <select value={filters.action} onChange={field('action')}>
            <option value="">Any action</option>
            {ACTIONS.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </label>
        <label class="field">
          <span>Actor</span>
          <input type="text" placeholder="email, user id or key id" value={filters.actorId} onInput={field('actorId')} />
        </label>
        <label class="field">
          <span>Target</span>
          <input type="text" placeholder="id or name" value={filters.targetId} onInput={field('targetId')} />
        </label>
        <label class="field">
          <span>From</span>
          <input type="datetime-local" value={filters.since} onInput={field('since')} />
        </label>
        <label class="field">
          <span>Until</span>
          <input type="datetime-local" value={filters.until} onInput={field('until')} />
        </label>
        <div class="form-actions">
          <button type="submit" class="btn btn-primary" disabled={busy}>
            Apply filters
          </button>
          <button type="button" class="btn" onClick={clear} disabled={busy}>
            Clear
          </button>
        </div>
      </form>
      <ErrorBox error={error} />
      {entries === null ? (
        <p class="muted">Loading…</p>
      ) : entries.length === 0 ? (
        <p class="muted empty-state">No audit entries{applied === NO_FILTERS ? '' : ' match these filters'}.</p>
      ) : (
        <div class="table-wrap">
          <table class="data audit">
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Action</th>
                <th scope="col">Actor</th>
                <th scope="col">Target</th>
                <th scope="col">Changes</th>
                <th scope="col">From</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((e) => (
                <tr key={e.id} data-id={e.id} data-action={e.action}>
                  <td title={e.createdAt}>{formatTime(e.createdAt)}</td>
                  <td>
                    <code>{e.action}</code>
                  </td>
                  <td>
                    {e.actor.email ?? e.actor.userId ?? '—'}
                    {e.actor.keyId && <div class="muted">key {e.actor.keyId}</div>}
                  </td>
                  <td>
                    <span class="muted">{e.target.type}</span> {e.target.name ?? e.target.id ?? '—'}
                  </td>
                  <td>
                    <Changes changes={e.changes} />
                  </td>
                  <td>
                    {SOURCE_LABEL[e.source]}
                    {e.ip && <div class="muted">{e.ip}</div>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {entries !== null && (starts.length > 1 || next) && (
        <nav class="form-actions pager" aria-label="Audit pages">
          <button type="button" class="btn" onClick={() => load(applied, starts.slice(0, -1))} disabled={busy || starts.length === 1}>
            Newer
          </button>
          <span class="muted" aria-live="polite">
            Page {starts.length}
          </span>
          <button type="button" class="btn" onClick={() => next && load(applied, [...starts, next])} disabled={busy || !next}>
            Older
          </button>
        </nav>
      )}
    </Layout>
  );
}
