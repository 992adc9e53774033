import type { SQLNamespace } from '@codemirror/lang-sql';
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, handleSignedOut } from '../api.ts';
import { AnnotationsPanel } from '../components/annotations-panel.tsx';
import { Chart } from '../components/chart.tsx';
import { Layout } from '../components/layout.tsx';
import { ResultTable, type Column } from '../components/result-table.tsx';
import { SqlEditor, type EditorHandle } from '../components/sql-editor.tsx';
import { downloadCsv } from '../csv.ts';
import { errorText } from '../error-text.ts';
import { WORKSPACE, href } from '../env.ts';
import { plural, relativeTime } from '../format.ts';
import { useMe } from '../hooks.ts';
import type { Connection } from './connections.tsx';

interface QueryResult {
  queryId: string;
  statementType: string;
  columns: Column[];
  rows: unknown[][];
  rowCount: number;
  truncated: boolean;
  affectedRows: number | null;
  durationMs: number;
}

interface HistoryEntry {
  id: string;
  connectionId: string;
  connectionName: string;
  sql: string;
  status: string;
  rowCount: number | null;
  durationMs: number;
  error: string | null;
  source: string;
  createdAt: string;
  /** The curated tool a run came from; its SQL alone reads as `… = ?`. */
  tool?: { name: string; version: number } | null;
}

interface SchemaTable {
  schema: string | null;
  name: string;
  columns: { name: string; type: string }[];
}

const storageKey = (what: string) => `dbq:${WORKSPACE}:${what}`;
const DEFAULT_SCHEMAS = new Set(['public', 'main']);

/** The name as a query would write it: schema-qualified outside the default schema. */
function tableName(t: SchemaTable): string {
  return t.schema && !DEFAULT_SCHEMAS.has(t.schema) ? `${t.schema}.${t.name}` : t.name;
}

function completionSchema(tables: SchemaTable[]): SQLNamespace {
  const ns: Record<string, string[]> = {};
  for (const t of tables) ns[tableName(t)] = t.columns.map((c) => c.name);
  return ns;
}

/** Tables, columns and types of the connection, from the same introspection as completion,
 * the AI and MCP; a click puts the name into the editor at the cursor. */
function SchemaBrowser({
  tables,
  onInsert,
  noConnections,
}: {
  tables: SchemaTable[] | 'failed' | null;
  onInsert: (name: string) => void;
  noConnections: ComponentChildren;
}) {
  const [open, setOpen] = useState<Record<string, boolean>>({});
  return (
    <aside class="schema-browser" aria-labelledby="schema-title">
      <h2 id="schema-title">Schema</h2>
      {noConnections ? (
        <p class="muted">{noConnections}</p>
      ) : tables === null ? (
        <p class="muted">Loading…</p>
      ) : tables === 'failed' ? (
        <p class="muted">The schema could not be read.</p>
      ) : tables.length === 0 ? (
        <p class="muted">No tables.</p>
      ) : (
        <ul class="schema-list">
          {tables.map((t) => {
            const name = tableName(t);
            const expanded = open[name] ?? false;
            return (
              <li key={name}>
                <div class="schema-table">
                  <button
                    type="button"
                    class="schema-toggle"
                    aria-expanded={expanded}
                    aria-label={`${expanded ? 'Hide' : 'Show'} columns of ${name}`}
                    onClick={() => setOpen((o) => ({ ...o, [name]: !expanded }))}
                  >
                    {expanded ? '▾' : '▸'}
                  </button>
                  <button type="button" class="schema-name" title="Insert into the editor" onClick={() => onInsert(name)}>
                    {name}
                  </button>
                </div>
                {expanded && (
                  <ul class="schema-columns">
                    {t.columns.map((c) => (
                      <li key={c.name}>
                        <button type="button" class="schema-name" title="Insert into the editor" onClick={() => onInsert(c.name)}>
                          {c.name}
                        </button>
                        <span class="schema-type">{c.type}</span>
                      </li>
                    ))}
                  </ul>
                )}
              </li>
            );
          })}
        </ul>
      )}
    </aside>
  );
}

export function ConsolePage() {
  const { me } = useMe();
  const [connections, setConnections] = useState<Connection[] | null>(null);
  const [connectionId, setConnectionId] = useState<string>(() => localStorage.getItem(storageKey('connection')) ?? '');
  const [schema, setSchema] = useState<SQLNamespace>({});
  const [tables, setTables] = useState<SchemaTable[] | 'failed' | null>(null);
  const [maxRows, setMaxRows] = useState(1000);
  const [running, setRunning] = useState(false);
  const [result, setResult] = useState<QueryResult | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [view, setView] = useState<'table' | 'chart'>('table');
  const [history, setHistory] = useState<HistoryEntry[]>([]);
  const [prompt, setPrompt] = useState('');
  const [asking, setAsking] = useState(false);
  const [askMessage, setAskMessage] = useState<{ kind: 'error' | 'info'; text: string } | null>(null);
  const editor = useRef<EditorHandle | null>(null);
  const inflight = useRef<AbortController | null>(null);

  const connection = connections?.find((c) => c.id === connectionId) ?? null;
  const noConnections =
    connections !== null && connections.length === 0 ? (
      me?.user.role === 'admin' ? (
        <>
          No connections yet. <a href={href('/settings/connections')}>Add one</a>
        </>
      ) : (
        `No connections yet, or none shared with you. Ask an admin of workspace ${WORKSPACE} to add one or to give you access.`
      )
    ) : null;

  const loadHistory = useCallback(() => {
    api.get<{ entries: HistoryEntry[] }>('/history?limit=30').then(
      (d) => setHistory(d.entries),
      (err) => handleSignedOut(err),
    );
  }, []);

  useEffect(() => {
    if (!me) return;
    api.get<{ connections: Connection[] }>('/connections').then(
      (d) => {
        setConnections(d.connections);
        if (!d.connections.some((c) => c.id === connectionId)) setConnectionId(d.connections[0]?.id ?? '');
      },
      (err) => {
        if (!handleSignedOut(err)) setError(err instanceof ApiError ? err.message : String(err));
      },
    );
    loadHistory();
  }, [me]);

  useEffect(() => {
    if (!connectionId) return;
    localStorage.setItem(storageKey('connection'), connectionId);
    setSchema({});
    setTables(null);
    const ctrl = new AbortController();
    api.get<{ tables: SchemaTable[] }>(`/connections/${encodeURIComponent(connectionId)}/schema`, ctrl.signal).then(
      (d) => {
        setSchema(completionSchema(d.tables));
        setTables(d.tables);
      },
      (err) => {
        // Completion is a convenience: an unreachable database still lets people type.
        if ((err as Error).name !== 'AbortError') setTables('failed');
      },
    );
    return () => ctrl.abort();
  }, [connectionId]);

  const run = useCallback(async () => {
    const sql = editor.current?.getValue().trim() ?? '';
    if (!sql || !connectionId) return;
    editor.current?.closeCompletion();
    inflight.current?.abort();
    const ctrl = new AbortController();
    inflight.current = ctrl;
    setRunning(true);
    setError(null);
    // A failed Ask belongs to the prompt, not to what runs now; left up it reads as current.
    setAskMessage((m) => (m?.kind === 'error' ? null : m));
    try {
      const r = await api.post<QueryResult>('/query', { connectionId, sql, maxRows, rowFormat: 'arrays' }, ctrl.signal);
      setResult(r);
    } catch (err) {
      if ((err as Error).name === 'AbortError') return;
      if (!handleSignedOut(err)) {
        setResult(null);
        setError(errorText(err));
      }
    } finally {
      if (inflight.current === ctrl) {
        inflight.current = null;
        setRunning(false);
        loadHistory();
      }
    }
  }, [connectionId, maxRows]);

  const cancel = () => {
    // Aborting the request closes it; the server cancels the statement on the database.
    inflight.current?.abort();
    inflight.current = null;
    setRunning(false);
    setError('Query canceled');
    setTimeout(loadHistory, 300);
  };

  const ask = async (e: Event) => {
    e.preventDefault();
    if (!prompt.trim() || !connectionId) return;
    setAsking(true);
    setAskMessage(null);
    try {
      const g = await api.post<{ sql: string; explanation?: string; validated: boolean }>('/ai/generate', { connectionId, prompt });
      editor.current?.setValue(g.sql);
      editor.current?.focus();
      // The error below belonged to the SQL just replaced; left there it reads as this SQL's.
      setError(null);
      setAskMessage({
        kind: 'info',
        text: `${g.validated ? 'Generated SQL is in the editor' : 'Generated SQL (not validated by the database) is in the editor'}${g.explanation ? `: ${g.explanation}` : '.'}`,
      });
    } catch (err) {
      if (!handleSignedOut(err)) setAskMessage({ kind: 'error', text: err instanceof ApiError ? err.message : String(err) });
    } finally {
      setAsking(false);
    }
  };

  const loadEntry = (h: HistoryEntry) => {
    editor.current?.setValue(h.sql);
    if (connections?.some((c) => c.id === h.connectionId)) setConnectionId(h.connectionId);
    editor.current?.focus();
  };

  const exportCsv = () => {
    if (!result) return;
    const stamp = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19);
    downloadCsv(`${connection?.name ?? 'result'}-${stamp}.csv`, result.columns, result.rows);
  };

  return (
    <Layout me={me} wide>
      <div class="console">
        <section class="console-main" aria-label="Query">
          {noConnections ? (
            <div class="alert alert-info" role="status">
              {noConnections}
            </div>
          ) : null}
          <form class="ask" onSubmit={ask}>
            <label class="field inline grow">
              <span>Ask</span>
              <input
                placeholder="e.g. top 5 customers by revenue"
                value={prompt}
                maxLength={4000}
                onInput={(e) => setPrompt(e.currentTarget.value)}
              />
            </label>
            <button type="submit" class="btn" disabled={asking || !connectionId}>
              {asking ? 'Generating…' : 'Generate SQL'}
            </button>
          </form>
          {askMessage && (
            <div
              class={askMessage.kind === 'error' ? 'alert alert-error' : 'alert alert-info'}
              role={askMessage.kind === 'error' ? 'alert' : 'status'}
              data-testid="ask-message"
            >
              {askMessage.text}
            </div>
          )}
          <div class="toolbar">
            <label class="field inline">
              <span>Connection</span>
              <select value={connectionId} onChange={(e) => setConnectionId(e.currentTarget.value)} disabled={!connections?.length}>
                {(connections ?? []).map((c) => (
                  <option key={c.id} value={c.id}>
                    {c.name} ({c.engine})
                  </option>
                ))}
              </select>
            </label>
            <label class="field inline">
              <span>Row limit</span>
              <select value={String(maxRows)} onChange={(e) => setMaxRows(Number(e.currentTarget.value))}>
                {[100, 1000, 10000].map((n) => (
                  <option key={n} value={String(n)}>
                    {n.toLocaleString()}
                  </option>
                ))}
              </select>
            </label>
            <span class="spacer-flex" />
            <span class="muted hint">
              <kbd>Ctrl</kbd>/<kbd>⌘</kbd>+<kbd>Enter</kbd> runs
            </span>
            {running ? (
              <button type="button" class="btn" onClick={cancel}>
                Cancel
              </button>
            ) : null}
            <button type="button" class="btn btn-primary" onClick={run} disabled={running || !connectionId}>
              {running ? 'Running…' : 'Run'}
            </button>
          </div>
          <div class="editor-wrap">
            <span id="sql-label" class="editor-label">
              SQL
            </span>
            <SqlEditor
              labelledBy="sql-label"
              initial={localStorage.getItem(storageKey('draft')) ?? 'SELECT 1;'}
              dialect={connection?.engine ?? 'postgres'}
              schema={schema}
              onRun={run}
              onChange={(text) => localStorage.setItem(storageKey('draft'), text)}
              handle={editor}
            />
          </div>
          <section class="results" aria-label="Result" aria-busy={running}>
            {error && (
              <div class="alert alert-error" role="alert">
                {error}
              </div>
            )}
            {result && (
              <>
                <div class="result-bar">
                  <div class="result-meta" role="status">
                    <strong>
                      {result.affectedRows !== null && result.columns.length === 0
                        ? plural(result.affectedRows, 'row') + ' affected'
                        : plural(result.rowCount, 'row')}
                    </strong>
                    <span>{result.durationMs} ms</span>
                    <span class="muted">{result.statementType}</span>
                    {result.truncated && (
                      <span class="badge badge-warn" title="Raise the row limit or use /api/query/export for everything">
                        Truncated at {result.rowCount.toLocaleString()} rows
                      </span>
                    )}
                  </div>
                  <div class="segmented-buttons" role="group" aria-label="Result view">
                    <button type="button" class="btn btn-small" aria-pressed={view === 'table'} onClick={() => setView('table')}>
                      Table
                    </button>
                    <button
                      type="button"
                      class="btn btn-small"
                      aria-pressed={view === 'chart'}
                      onClick={() => setView('chart')}
                      disabled={result.rows.length === 0}
                    >
                      Chart
                    </button>
                  </div>
                  <button type="button" class="btn btn-small" onClick={exportCsv} disabled={result.columns.length === 0}>
                    Export CSV
                  </button>
                </div>
                {result.columns.length === 0 ? (
                  <p class="muted">The statement returned no rows.</p>
                ) : result.rows.length === 0 ? (
                  <p class="muted empty-result" data-testid="no-rows">
                    No rows. <span class="no-rows-columns">Columns: {result.columns.map((c) => c.name).join(', ')}</span>
                  </p>
                ) : view === 'table' ? (
                  <ResultTable columns={result.columns} rows={result.rows} />
                ) : (
                  <Chart columns={result.columns} rows={result.rows} />
                )}
              </>
            )}
            {!result && !error && <p class="muted empty-result">Run a query to see its result here.</p>}
          </section>
        </section>
        <div class="console-side">
          <SchemaBrowser tables={tables} noConnections={noConnections} onInsert={(name) => editor.current?.insert(name)} />
          {connectionId && Array.isArray(tables) && (
            <AnnotationsPanel connectionId={connectionId} tables={tables} admin={me?.user.role === 'admin'} />
          )}
          <aside class="history" aria-labelledby="history-title">
            <div class="history-head">
              <h2 id="history-title">History</h2>
              <button type="button" class="btn btn-ghost btn-small" onClick={loadHistory}>
                Refresh
              </button>
            </div>
            {history.length === 0 ? (
              <p class="muted">Your queries will appear here.</p>
            ) : (
              <ul class="history-list">
                {history.map((h) => (
                  <li key={h.id}>
                    <button type="button" class="history-item" onClick={() => loadEntry(h)} title="Load into the editor">
                      {h.tool && (
                        <span class="history-tool">
                          Tool <strong>{h.tool.name}</strong> v{h.tool.version}
                        </span>
                      )}
                      <code class="history-sql">{h.sql.length > 160 ? `${h.sql.slice(0, 160)}…` : h.sql}</code>
                      <span class="history-meta">
                        <span class={`dot-status status-${h.status}`} aria-hidden="true" />
                        <span>{h.status}</span>
                        <span>{h.connectionName}</span>
                        {h.rowCount !== null && <span>{plural(h.rowCount, 'row')}</span>}
                        <span>{relativeTime(h.createdAt)}</span>
                        {h.source !== 'ui' && <span class="badge">{h.source}</span>}
                      </span>
                    </button>
                  </li>
                ))}
              </ul>
            )}
          </aside>
        </div>
      </div>
    </Layout>
  );
}
