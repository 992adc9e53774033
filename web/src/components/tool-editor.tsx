// The admin's tool editor: a form rather than a JSON document. A connection picked from the
// workspace's, the SQL in the console's editor with `:name` placeholders marked, one typed row
// per parameter (constraints shown only where the type takes them, enum values as a list), and
// refusals in words that name the form's own fields. "Edit as JSON" keeps the raw definition
// (the body of POST /api/tools) for pasting one from elsewhere.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, handleSignedOut } from '../api.ts';
import { ConfirmDialog } from './confirm-dialog.tsx';
import { ErrorBox } from './layout.tsx';
import { RunForm, type RunResult } from './tool-run-form.tsx';
import { SqlEditor, type Dialect, type EditorHandle } from './sql-editor.tsx';

export interface ToolParam {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date' | 'enum' | 'array';
  description?: string;
  required?: boolean;
  default?: unknown;
  values?: (string | number)[];
  items?: { type: string; values?: (string | number)[] };
  min?: number | string;
  max?: number | string;
  maxLength?: number;
  pattern?: string;
}

export interface ToolDefinition {
  name: string;
  version: number;
  description: string;
  connectionId: string;
  parameters: ToolParam[];
  maxRows: number;
  sql?: string;
}

const TYPES: ToolParam['type'][] = ['string', 'integer', 'number', 'boolean', 'date', 'enum', 'array'];
const ITEM_TYPES = ['string', 'integer', 'number', 'date'];
const NAME = /^[a-z_][a-z0-9_]*$/;
/** `:name` and `:caller.email`, not the `::type` of a PostgreSQL cast. */
export const PLACEHOLDER = /(?<![:\w]):([A-Za-z_]\w*(?:\.\w+)?)/g;

/** One parameter row as the form holds it: every value as typed text. */
interface Row {
  name: string;
  type: ToolParam['type'];
  required: boolean;
  description: string;
  default: string;
  min: string;
  max: string;
  maxLength: string;
  pattern: string;
  values: string[];
  itemType: string;
}

function rowOf(p: ToolParam): Row {
  const text = (v: unknown) => (v === undefined || v === null ? '' : Array.isArray(v) ? v.join(', ') : String(v));
  return {
    name: p.name,
    type: p.type,
    required: p.required === true,
    description: p.description ?? '',
    default: text(p.default),
    min: text(p.min),
    max: text(p.max),
    maxLength: text(p.maxLength),
    pattern: p.pattern ?? '',
    values: (p.values ?? p.items?.values ?? []).map(String),
    itemType: p.items?.type ?? 'string',
  };
}

const blankRow = (name = ''): Row => rowOf({ name, type: 'string' });

const numeric = (t: string) => t === 'integer' || t === 'number';

function scalar(type: string, text: string): string | number {
  return numeric(type) ? Number(text) : text;
}

/** The row as the definition's JSON; constraints the type does not take are left out. */
function paramOf(r: Row): ToolParam {
  const p: ToolParam = { name: r.name.trim(), type: r.type };
  if (r.description.trim()) p.description = r.description.trim();
  if (r.required) p.required = true;
  const elementType = r.type === 'array' ? r.itemType : r.type;
  const values = r.values.map((v) => v.trim()).filter(Boolean);
  if (r.default.trim()) {
    const d = r.default.trim();
    p.default =
      r.type === 'boolean'
        ? d === 'true'
        : r.type === 'array'
          ? d.split(',').map((s) => scalar(r.itemType, s.trim()))
          : scalar(r.type === 'enum' && values.every((v) => !isNaN(Number(v))) ? 'number' : r.type, d);
  }
  if (numeric(elementType) || elementType === 'date' || r.type === 'array') {
    const bound = (t: string) => (t.trim() === '' ? undefined : numeric(elementType) || r.type === 'array' ? Number(t) : t.trim());
    const min = bound(r.min);
    const max = bound(r.max);
    if (min !== undefined) p.min = min;
    if (max !== undefined) p.max = max;
  }
  if (r.type === 'string') {
    if (r.maxLength.trim()) p.maxLength = Number(r.maxLength);
    if (r.pattern.trim()) p.pattern = r.pattern.trim();
  }
  if (r.type === 'enum') p.values = values.map((v) => (values.every((x) => !isNaN(Number(x))) ? Number(v) : v));
  if (r.type === 'array') p.items = { type: r.itemType };
  return p;
}

/** What is wrong with the form, in words, before anything is sent. */
export function formProblem(f: { name: string; connectionId: string; sql: string; rows: Row[]; isNew: boolean }): string | null {
  if (f.isNew && !NAME.test(f.name)) return 'Name: use lower-case letters, digits and _, starting with a letter (e.g. orders_by_customer).';
  if (!f.connectionId) return 'Connection: choose the database this tool queries.';
  if (!f.sql.trim()) return 'SQL: write the statement this tool runs.';
  const seen = new Set<string>();
  for (const [i, r] of f.rows.entries()) {
    const label = `Parameter ${i + 1}${r.name ? ` (${r.name})` : ''}`;
    if (!NAME.test(r.name)) return `${label}: its name must be lower-case letters, digits and _, starting with a letter.`;
    if (r.name === 'caller') return `${label}: "caller" is taken by :caller.email, :caller.userId and :caller.keyId.`;
    if (seen.has(r.name)) return `${label}: another parameter already has this name.`;
    seen.add(r.name);
    if (r.type === 'enum' && !r.values.some((v) => v.trim())) return `${label}: an enum needs at least one allowed value.`;
    for (const [what, text] of [
      ['minimum', r.min],
      ['maximum', r.max],
    ] as const) {
      if (text.trim() && (numeric(r.type) || r.type === 'array') && isNaN(Number(text))) return `${label}: the ${what} must be a number.`;
    }
  }
  const declared = new Set(f.rows.map((r) => r.name));
  const used = [...f.sql.matchAll(PLACEHOLDER)].map((m) => m[1]).filter((n) => !n.startsWith('caller.'));
  const missing = used.find((n) => !declared.has(n));
  if (missing) return `SQL: :${missing} has no parameter. Add a parameter named ${missing}, or remove it from the SQL.`;
  const unused = f.rows.find((r) => !used.includes(r.name));
  if (unused)
    return `Parameter ${unused.name} is not used in the SQL: write :${unused.name} where its value goes, or remove the parameter.`;
  return null;
}

const FIELD_WORDS: [RegExp, (m: RegExpMatchArray) => string][] = [
  [/^connectionId\b/, () => 'Connection'],
  [/^sql\b/, () => 'SQL'],
  [/^name\b/, () => 'Name'],
  [/^description\b/, () => 'Description'],
  [/^maxRows\b/, () => 'Row limit'],
  [/^parameters\[(\d+)\]\.?(\S*)/, (m) => `Parameter ${Number(m[1]) + 1}${m[2] ? ` (${m[2]})` : ''}`],
];

/** A server refusal with the body's field path (`parameters[0].min`) said as the form says it. */
export function refusalInWords(err: unknown): string {
  if (!(err instanceof ApiError)) return String(err);
  const field = typeof err.details?.field === 'string' ? err.details.field : null;
  const text = err.message.replace(/^Invalid request: /, '');
  if (!field) return text;
  for (const [re, words] of FIELD_WORDS) {
    const m = field.match(re);
    if (m) return `${words(m)}: ${text.replace(field, '').replace(/^[\s:]+/, '')}`;
  }
  return text;
}

function ValuesList({ values, onChange, label }: { values: string[]; onChange: (v: string[]) => void; label: string }) {
  const list = values.length ? values : [''];
  return (
    <fieldset class="field values-list" aria-label={label}>
      <legend>Allowed values</legend>
      {list.map((v, i) => (
        <div class="values-row" key={i}>
          <input
            aria-label={`${label} ${i + 1}`}
            value={v}
            onInput={(e) => onChange(list.map((x, k) => (k === i ? e.currentTarget.value : x)))}
          />
          <button
            type="button"
            class="btn btn-small btn-ghost"
            aria-label={`Remove value ${i + 1}`}
            onClick={() => onChange(list.filter((_, k) => k !== i))}
          >
            ×
          </button>
        </div>
      ))}
      <button type="button" class="btn btn-small" onClick={() => onChange([...list, ''])}>
        Add value
      </button>
    </fieldset>
  );
}

function ParamRow({ row, index, onChange, onRemove }: { row: Row; index: number; onChange: (r: Row) => void; onRemove: () => void }) {
  const set = (patch: Partial<Row>) => onChange({ ...row, ...patch });
  const label = row.name || `parameter ${index + 1}`;
  const element = row.type === 'array' ? row.itemType : row.type;
  const bounds = numeric(element) || element === 'date' || row.type === 'array';
  const boundType = row.type === 'array' ? 'number' : element === 'date' ? 'date' : 'number';
  return (
    <fieldset class="param-row card" aria-label={`Parameter ${label}`}>
      <div class="grid-form">
        <label class="field">
          <span>Name</span>
          <input value={row.name} spellcheck={false} placeholder="customer_id" onInput={(e) => set({ name: e.currentTarget.value })} />
        </label>
        <label class="field">
          <span>Type</span>
          <select value={row.type} onChange={(e) => set({ type: e.currentTarget.value as Row['type'] })}>
            {TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        {row.type === 'array' && (
          <label class="field">
            <span>Element type</span>
            <select value={row.itemType} onChange={(e) => set({ itemType: e.currentTarget.value })}>
              {ITEM_TYPES.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          </label>
        )}
        <label class="field">
          <span>Default</span>
          <input
            value={row.default}
            placeholder={row.type === 'array' ? 'a, b, c' : row.type === 'boolean' ? 'true or false' : 'none'}
            onInput={(e) => set({ default: e.currentTarget.value })}
          />
        </label>
        <label class="check">
          <input type="checkbox" checked={row.required} onChange={(e) => set({ required: e.currentTarget.checked })} /> Required
        </label>
        {bounds && (
          <>
            <label class="field">
              <span>{row.type === 'array' ? 'Fewest elements' : 'Minimum'}</span>
              <input type={boundType} value={row.min} onInput={(e) => set({ min: e.currentTarget.value })} />
            </label>
            <label class="field">
              <span>{row.type === 'array' ? 'Most elements' : 'Maximum'}</span>
              <input type={boundType} value={row.max} onInput={(e) => set({ max: e.currentTarget.value })} />
            </label>
          </>
        )}
        {row.type === 'string' && (
          <>
            <label class="field">
              <span>Longest (characters)</span>
              <input type="number" min={1} value={row.maxLength} onInput={(e) => set({ maxLength: e.currentTarget.value })} />
            </label>
            <label class="field">
              <span>Pattern (regular expression)</span>
              <input value={row.pattern} spellcheck={false} onInput={(e) => set({ pattern: e.currentTarget.value })} />
            </label>
          </>
        )}
        <label class="field span-2">
          <span>Description</span>
          <input
            value={row.description}
            placeholder="What the caller should pass"
            onInput={(e) => set({ description: e.currentTarget.value })}
          />
        </label>
      </div>
      {row.type === 'enum' && <ValuesList label={`Values of ${label}`} values={row.values} onChange={(values) => set({ values })} />}
      <button type="button" class="btn btn-small btn-danger-outline" onClick={onRemove}>
        Remove parameter
      </button>
    </fieldset>
  );
}

export function ToolEditor({
  tool,
  onSaved,
  onCancel,
}: {
  tool: ToolDefinition | null;
  onSaved: (name: string, tryIt: boolean) => void;
  onCancel: () => void;
}) {
  const [connections, setConnections] = useState<{ id: string; name: string; engine: Dialect }[]>([]);
  const [name, setName] = useState(tool?.name ?? '');
  const [description, setDescription] = useState(tool?.description ?? '');
  const [connectionId, setConnectionId] = useState(tool?.connectionId ?? '');
  const [maxRows, setMaxRows] = useState(String(tool?.maxRows ?? 100));
  const [rows, setRows] = useState<Row[]>(() => (tool?.parameters ?? []).map(rowOf));
  const [sql, setSql] = useState(tool?.sql ?? '');
  const [asJson, setAsJson] = useState(false);
  const [json, setJson] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  /** The draft shown in the "Try it" panel (null: closed); a snapshot, taken when opened. */
  const [trying, setTrying] = useState<ReturnType<typeof definition> | null>(null);
  /** Set while the "this changes data" question is open: answers it. */
  const [confirmWrite, setConfirmWrite] = useState<((run: boolean) => void) | null>(null);
  const editor = useRef<EditorHandle | null>(null);

  useEffect(() => {
    api.get<{ connections: { id: string; name: string; engine: Dialect }[] }>('/connections').then(
      (d) => {
        setConnections(d.connections);
        if (!tool && d.connections.length === 1) setConnectionId(d.connections[0].id);
      },
      (err) => handleSignedOut(err),
    );
  }, []);

  const definition = () => ({
    ...(tool ? {} : { name: name.trim() }),
    description: description.trim(),
    connectionId,
    sql: editor.current?.getValue() ?? sql,
    parameters: rows.map(paramOf),
    maxRows: Number(maxRows) || 100,
  });

  const toJson = () => {
    setJson(JSON.stringify(definition(), null, 2));
    setAsJson(true);
  };

  const send = async (body: unknown, tryIt: boolean) => {
    setBusy(true);
    try {
      if (tool) await api.patch(`/tools/${tool.name}`, body);
      else await api.post('/tools', body);
      onSaved(tool?.name ?? String((body as { name?: unknown }).name ?? ''), tryIt);
    } catch (err) {
      if (!handleSignedOut(err)) setError(refusalInWords(err));
    } finally {
      setBusy(false);
    }
  };

  const save = (tryIt: boolean) => (e: Event) => {
    e.preventDefault();
    setError(null);
    if (asJson) {
      let body: unknown;
      try {
        body = JSON.parse(json);
      } catch (err) {
        setError(`The definition is not valid JSON: ${(err as Error).message}`);
        return;
      }
      void send(body, tryIt);
      return;
    }
    const text = editor.current?.getValue() ?? sql;
    const problem = formProblem({ name: name.trim(), connectionId, sql: text, rows, isNew: !tool });
    if (problem) {
      setError(problem);
      return;
    }
    void send(definition(), tryIt);
  };

  /** "Try it": the unsaved definition, run once by POST /ui/api/tools/try. */
  const openTry = () => {
    setError(null);
    if (asJson) {
      try {
        setTrying(JSON.parse(json) as ReturnType<typeof definition>);
      } catch (err) {
        setError(`The definition is not valid JSON: ${(err as Error).message}`);
      }
      return;
    }
    const text = editor.current?.getValue() ?? sql;
    const problem = formProblem({ name: name.trim() || 'draft', connectionId, sql: text, rows, isNew: !tool });
    if (problem) {
      setError(problem);
      return;
    }
    setTrying(definition());
  };

  const tryDraft = async (draft: ReturnType<typeof definition>, params: Record<string, unknown>): Promise<RunResult> => {
    const body = { tool: draft, params };
    try {
      try {
        return await api.post<RunResult>('/tools/try', body);
      } catch (err) {
        if (!(err instanceof ApiError) || err.details?.reason !== 'write_needs_confirmation') throw err;
        const run = await new Promise<boolean>((resolve) => setConfirmWrite(() => resolve));
        setConfirmWrite(null);
        if (!run) throw new Error('Not run: nothing was changed.', { cause: err });
        return await api.post<RunResult>('/tools/try', { ...body, allowWrite: true });
      }
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) throw err;
      throw new Error(refusalInWords(err), { cause: err });
    }
  };

  /** Rows for the placeholders the SQL uses and no row declares yet. */
  const addFromSql = () => {
    const text = editor.current?.getValue() ?? sql;
    const declared = new Set(rows.map((r) => r.name));
    const fresh = [...new Set([...text.matchAll(PLACEHOLDER)].map((m) => m[1]))].filter(
      (n) => !n.startsWith('caller.') && !declared.has(n),
    );
    if (fresh.length) setRows([...rows, ...fresh.map((n) => blankRow(n))]);
    setError(null);
  };

  const dialect = connections.find((c) => c.id === connectionId)?.engine ?? 'postgres';
  return (
    <form class="card tool-editor" onSubmit={save(false)} aria-label={tool ? `Edit ${tool.name}` : 'New tool'} noValidate>
      <div class="tool-editor-head">
        <h2>{tool ? `Edit ${tool.name} (saves version ${tool.version + 1})` : 'New tool'}</h2>
        <button type="button" class="btn btn-small" aria-pressed={asJson} onClick={() => (asJson ? setAsJson(false) : toJson())}>
          {asJson ? 'Edit as form' : 'Edit as JSON'}
        </button>
      </div>
      {asJson ? (
        <label class="field">
          <span>Definition (JSON)</span>
          <textarea class="mono" rows={16} value={json} onInput={(e) => setJson(e.currentTarget.value)} spellcheck={false} />
        </label>
      ) : (
        <>
          <div class="grid-form">
            {!tool && (
              <label class="field">
                <span>Name</span>
                <input value={name} spellcheck={false} placeholder="orders_by_customer" onInput={(e) => setName(e.currentTarget.value)} />
              </label>
            )}
            <label class="field">
              <span>Connection</span>
              <select value={connectionId} onChange={(e) => setConnectionId(e.currentTarget.value)}>
                <option value="">Choose a connection…</option>
                {connections.map((c) => (
                  <option key={c.id} value={c.id}>
                    {c.name} ({c.engine})
                  </option>
                ))}
              </select>
            </label>
            <label class="field">
              <span>Row limit</span>
              <input type="number" min={1} value={maxRows} onInput={(e) => setMaxRows(e.currentTarget.value)} />
            </label>
            <label class="field span-2">
              <span>Description</span>
              <input
                value={description}
                placeholder="What the tool answers, for people and AI agents"
                onInput={(e) => setDescription(e.currentTarget.value)}
              />
            </label>
          </div>
          <div class="field">
            <span id="tool-sql-label">SQL</span>
            <div class="editor-wrap">
              <SqlEditor
                labelledBy="tool-sql-label"
                initial={sql}
                dialect={dialect}
                schema={{}}
                params
                onRun={() => {}}
                onChange={setSql}
                handle={editor}
              />
            </div>
            <small class="muted">
              <code>:name</code> is a parameter's value; <code>:caller.email</code>, <code>:caller.userId</code> and{' '}
              <code>:caller.keyId</code> are bound from whoever runs the tool.
            </small>
          </div>
          <h3 class="params-title">Parameters</h3>
          {rows.length === 0 && <p class="muted">None yet.</p>}
          {rows.map((r, i) => (
            <ParamRow
              key={i}
              row={r}
              index={i}
              onChange={(nr) => setRows(rows.map((x, k) => (k === i ? nr : x)))}
              onRemove={() => setRows(rows.filter((_, k) => k !== i))}
            />
          ))}
          <div class="form-actions">
            <button type="button" class="btn" onClick={() => setRows([...rows, blankRow()])}>
              Add parameter
            </button>
            <button type="button" class="btn btn-ghost" onClick={addFromSql}>
              Add the SQL's placeholders
            </button>
          </div>
        </>
      )}
      <ErrorBox error={error} />
      <div class="form-actions tool-editor-actions">
        <button type="submit" class="btn btn-primary" disabled={busy}>
          Save
        </button>
        <button type="button" class="btn" disabled={busy} onClick={openTry}>
          Try it
        </button>
        <button type="button" class="btn" disabled={busy} onClick={save(true)}>
          Save and try it
        </button>
        <button type="button" class="btn btn-ghost" onClick={onCancel}>
          Cancel
        </button>
      </div>
      {trying && (
        <section class="tool-try" aria-label="Try the unsaved tool">
          <div class="tool-editor-head">
            <h3>Try it (not saved)</h3>
            <button type="button" class="btn btn-small btn-ghost" onClick={() => setTrying(null)}>
              Close
            </button>
          </div>
          <p class="muted">Runs this definition once with the values below. Changed the form? Press "Try it" again.</p>
          <RunForm
            key={JSON.stringify(trying)}
            label="Try the unsaved tool"
            parameters={trying.parameters ?? []}
            maxRows={trying.maxRows ?? 100}
            run={(params) => tryDraft(trying, params)}
          />
        </section>
      )}
      <ConfirmDialog
        open={confirmWrite !== null}
        title="Run a statement that changes data?"
        confirmLabel="Run it"
        danger
        onConfirm={() => confirmWrite?.(true)}
        onCancel={() => confirmWrite?.(false)}
      >
        <p>This tool's SQL writes. Trying it changes the database for real; it is not rolled back.</p>
      </ConfirmDialog>
    </form>
  );
}
