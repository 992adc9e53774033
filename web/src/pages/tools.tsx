// The Tools page: the curated tools the signed-in user may run, each with a form generated
// from its parameters and the result in the console's table; admins also create, edit (a new
// version) and delete them. Everything goes through /ui/api/tools, which calls the same core
// functions as /api/tools.
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, handleSignedOut } from '../api.ts';
import { ErrorBox, Layout } from '../components/layout.tsx';
import { ResultTable, type Column } from '../components/result-table.tsx';
import { ToolEditor, type ToolDefinition, type ToolParam } from '../components/tool-editor.tsx';
import { useMe } from '../hooks.ts';

type Param = ToolParam;
type Tool = ToolDefinition;

interface RunResult {
  columns: Column[];
  rows: unknown[][];
  rowCount: number;
  truncated: boolean;
  affectedRows: number | null;
  durationMs: number;
  tool: { name: string; version: number };
}

function message(err: unknown): string {
  return err instanceof ApiError ? err.message : String(err);
}

/** A form value (always text) as the JSON the parameter takes; undefined leaves it out. */
function toValue(p: Param, raw: string | boolean): unknown {
  if (p.type === 'boolean') return raw;
  const text = String(raw).trim();
  if (text === '') return undefined;
  if (p.type === 'integer' || p.type === 'number') return Number(text);
  if (p.type === 'enum' && typeof p.values?.[0] === 'number') return Number(text);
  if (p.type === 'array') {
    const parts = text
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    return p.items?.type === 'integer' || p.items?.type === 'number' ? parts.map(Number) : parts;
  }
  return text;
}

function initialValue(p: Param): string | boolean {
  if (p.type === 'boolean') return p.default === true;
  if (p.default === undefined || p.default === null) return '';
  return Array.isArray(p.default) ? p.default.join(', ') : String(p.default);
}

function ParamField({ p, value, onChange }: { p: Param; value: string | boolean; onChange: (v: string | boolean) => void }) {
  const label = (
    <span>
      {p.name}
      {p.required ? ' *' : ''} <small class="muted">{p.type === 'array' ? `list of ${p.items?.type}, comma-separated` : p.type}</small>
    </span>
  );
  const hint = p.description ? <small class="muted">{p.description}</small> : null;
  if (p.type === 'boolean') {
    return (
      <label class="field">
        {label}
        <input
          type="checkbox"
          name={p.name}
          checked={value === true}
          onChange={(e) => onChange((e.currentTarget as HTMLInputElement).checked)}
        />
        {hint}
      </label>
    );
  }
  if (p.type === 'enum') {
    return (
      <label class="field">
        {label}
        <select name={p.name} value={String(value)} onChange={(e) => onChange((e.currentTarget as HTMLSelectElement).value)}>
          {!p.required && <option value="">—</option>}
          {p.values?.map((v) => (
            <option key={String(v)} value={String(v)}>
              {String(v)}
            </option>
          ))}
        </select>
        {hint}
      </label>
    );
  }
  const type = p.type === 'date' ? 'date' : p.type === 'integer' || p.type === 'number' ? 'number' : 'text';
  return (
    <label class="field">
      {label}
      <input
        type={type}
        name={p.name}
        value={String(value)}
        required={p.required}
        step={p.type === 'number' ? 'any' : undefined}
        min={p.min === undefined ? undefined : String(p.min)}
        max={p.max === undefined ? undefined : String(p.max)}
        maxLength={p.maxLength}
        onInput={(e) => onChange((e.currentTarget as HTMLInputElement).value)}
      />
      {hint}
    </label>
  );
}

function RunForm({ tool }: { tool: Tool }) {
  const [values, setValues] = useState<Record<string, string | boolean>>(() =>
    Object.fromEntries(tool.parameters.map((p) => [p.name, initialValue(p)])),
  );
  const [result, setResult] = useState<RunResult | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const run = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const params: Record<string, unknown> = {};
    for (const p of tool.parameters) {
      const v = toValue(p, values[p.name]);
      if (v !== undefined) params[p.name] = v;
    }
    try {
      setResult(await api.post<RunResult>(`/tools/${tool.name}/run`, { params }));
    } catch (err) {
      if (!handleSignedOut(err)) setError(message(err));
      setResult(null);
    } finally {
      setBusy(false);
    }
  };
  return (
    // noValidate: the server checks every value and its message names the parameter.
    <form class="tool-run" onSubmit={run} aria-label={`Run ${tool.name}`} noValidate>
      {tool.parameters.length > 0 && (
        <div class="grid-form">
          {tool.parameters.map((p) => (
            <ParamField key={p.name} p={p} value={values[p.name]} onChange={(v) => setValues({ ...values, [p.name]: v })} />
          ))}
        </div>
      )}
      <button type="submit" class="btn btn-primary" disabled={busy}>
        {busy ? 'Running…' : 'Run'}
      </button>
      <ErrorBox error={error} />
      {result && (
        <div class="tool-result">
          <p class="muted" role="status">
            {result.rowCount} row{result.rowCount === 1 ? '' : 's'}
            {result.truncated ? ` (first ${tool.maxRows})` : ''}
            {result.affectedRows !== null ? `, ${result.affectedRows} affected` : ''} · {result.durationMs} ms · version{' '}
            {result.tool.version}
          </p>
          {result.columns.length > 0 && <ResultTable columns={result.columns} rows={result.rows} />}
        </div>
      )}
    </form>
  );
}

export function ToolsPage() {
  const { me } = useMe();
  const [tools, setTools] = useState<Tool[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [editing, setEditing] = useState<Tool | 'new' | null>(null);
  const isAdmin = me?.user.role === 'admin';

  const load = async () => {
    try {
      setTools((await api.get<{ tools: Tool[] }>('/tools')).tools);
    } catch (err) {
      if (!handleSignedOut(err)) setError(message(err));
    }
  };
  useEffect(() => {
    if (me) void load();
  }, [me]);

  const remove = async (tool: Tool) => {
    if (!confirm(`Delete tool ${tool.name}? Its runs stay in history.`)) return;
    try {
      await api.del(`/tools/${tool.name}`);
      await load();
    } catch (err) {
      if (!handleSignedOut(err)) setError(message(err));
    }
  };

  return (
    <Layout me={me} wide>
      <div class="page-head">
        <div>
          <h1>Tools</h1>
          <p class="muted">
            Named statements with typed parameters, defined by admins. The same tools are in the API (/api/tools) and in every MCP client's
            tool list.
          </p>
        </div>
        {isAdmin && editing === null && (
          <button type="button" class="btn btn-primary" onClick={() => setEditing('new')}>
            New tool
          </button>
        )}
      </div>
      <ErrorBox error={error} />
      {editing !== null && (
        <ToolEditor
          tool={editing === 'new' ? null : editing}
          onCancel={() => setEditing(null)}
          onSaved={(name, tryIt) => {
            setEditing(null);
            // "Save and try it" opens the saved version's run form.
            if (tryIt) setOpen(name);
            void load();
          }}
        />
      )}
      {tools !== null && tools.length === 0 && (
        <p class="card muted">No tools yet.{isAdmin ? ' Create one with New tool.' : ' An admin can define some.'}</p>
      )}
      <ul class="tool-list">
        {tools?.map((t) => (
          <li key={t.name} class="card">
            <div class="tool-head">
              <div>
                <h2>
                  <code>{t.name}</code> <small class="muted">v{t.version}</small>
                </h2>
                <p>{t.description}</p>
              </div>
              <div class="actions">
                <button type="button" class="btn" aria-expanded={open === t.name} onClick={() => setOpen(open === t.name ? null : t.name)}>
                  {open === t.name ? 'Close' : 'Run…'}
                </button>
                {isAdmin && (
                  <>
                    <button type="button" class="btn" onClick={() => setEditing(t)}>
                      Edit
                    </button>
                    <button type="button" class="btn btn-danger" onClick={() => remove(t)}>
                      Delete
                    </button>
                  </>
                )}
              </div>
            </div>
            {open === t.name && <RunForm tool={t} />}
          </li>
        ))}
      </ul>
    </Layout>
  );
}
