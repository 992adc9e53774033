// A tool's run form: one field per parameter (typed: number, date, list, enum, checkbox), the
// values sent as the JSON each parameter takes, and the answer in the console's table. The
// Tools page runs a saved tool with it; the tool editor's "Try it" runs the unsaved draft.
import { useState } from 'preact/hooks';
import { ApiError, handleSignedOut } from '../api.ts';
import { ErrorBox } from './layout.tsx';
import { ResultTable, type Column } from './result-table.tsx';
import type { ToolParam } from './tool-editor.tsx';

type Param = ToolParam;

export interface RunResult {
  columns: Column[];
  rows: unknown[][];
  rowCount: number;
  truncated: boolean;
  affectedRows: number | null;
  durationMs: number;
  /** A saved tool's run names it; a draft's has none. */
  tool?: { name: string; version: number };
}

export function message(err: unknown): string {
  return err instanceof ApiError || err instanceof Error ? err.message : String(err);
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

export function RunForm({
  label,
  parameters,
  maxRows,
  run: send,
  submitLabel = 'Run',
}: {
  /** The form's accessible name. */
  label: string;
  parameters: Param[];
  maxRows: number;
  run: (params: Record<string, unknown>) => Promise<RunResult>;
  submitLabel?: string;
}) {
  const [values, setValues] = useState<Record<string, string | boolean>>(() =>
    Object.fromEntries(parameters.map((p) => [p.name, initialValue(p)])),
  );
  const [result, setResult] = useState<RunResult | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const run = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const params: Record<string, unknown> = {};
    for (const p of parameters) {
      const v = toValue(p, values[p.name]);
      if (v !== undefined) params[p.name] = v;
    }
    try {
      setResult(await send(params));
    } catch (err) {
      if (!handleSignedOut(err)) setError(message(err));
      setResult(null);
    } finally {
      setBusy(false);
    }
  };
  return (
    // noValidate: the server checks every value and its message names the parameter.
    <form class="tool-run" onSubmit={run} aria-label={label} noValidate>
      {parameters.length > 0 && (
        <div class="grid-form">
          {parameters.map((p) => (
            <ParamField key={p.name} p={p} value={values[p.name]} onChange={(v) => setValues({ ...values, [p.name]: v })} />
          ))}
        </div>
      )}
      <button type="submit" class="btn btn-primary" disabled={busy}>
        {busy ? 'Running…' : submitLabel}
      </button>
      <ErrorBox error={error} />
      {result && (
        <div class="tool-result">
          <p class="muted" role="status">
            {result.rowCount} row{result.rowCount === 1 ? '' : 's'}
            {result.truncated ? ` (first ${maxRows})` : ''}
            {result.affectedRows !== null ? `, ${result.affectedRows} affected` : ''} · {result.durationMs} ms
            {result.tool ? ` · version ${result.tool.version}` : ''}
          </p>
          {result.columns.length > 0 && <ResultTable columns={result.columns} rows={result.rows} />}
        </div>
      )}
    </form>
  );
}
