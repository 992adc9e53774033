// The "Create API key" form: a name and, optionally, what the key may do less than its user —
// read only, some connections, curated tools only (or some tools), a lifetime in days. The
// server decides (never wider than the user, within the workspace's longest lifetime); the
// form only asks.
import { useEffect, useRef, useState } from 'preact/hooks';

export interface KeyRequest {
  name: string;
  readOnly?: boolean;
  connections?: string[];
  toolsOnly?: boolean;
  tools?: string[];
  expiresInDays?: number;
}

interface Props {
  connections: { id: string; name: string }[];
  /** The workspace's curated tools, each on the connection it queries. */
  tools: { name: string; connectionId: string; description: string }[];
  maxKeyDays: number | null;
  busy: boolean;
  onSubmit(request: KeyRequest): void;
  onCancel(): void;
}

export function NewKeyForm({ connections, tools: allTools, maxKeyDays, busy, onSubmit, onCancel }: Props) {
  const [name, setName] = useState('');
  const [readOnly, setReadOnly] = useState(false);
  const [chosen, setChosen] = useState<string[]>([]);
  const [toolsOnly, setToolsOnly] = useState(false);
  const [tools, setTools] = useState<string[]>([]);
  const [days, setDays] = useState(maxKeyDays ? String(maxKeyDays) : '');
  const nameRef = useRef<HTMLInputElement>(null);
  useEffect(() => nameRef.current?.focus(), []);

  const names = new Map(connections.map((c) => [c.id, c.name]));
  const toggleTool = (name: string, on: boolean) => setTools((t) => (on ? [...t, name] : t.filter((x) => x !== name)));
  const toggle = (id: string, on: boolean) => setChosen((c) => (on ? [...c, id] : c.filter((x) => x !== id)));

  const submit = (e: Event) => {
    e.preventDefault();
    const toolList = tools;
    onSubmit({
      name,
      ...(readOnly ? { readOnly: true } : {}),
      ...(chosen.length ? { connections: chosen } : {}),
      ...(toolsOnly ? { toolsOnly: true } : {}),
      ...(toolList.length ? { tools: toolList } : {}),
      ...(days.trim() ? { expiresInDays: Number(days) } : {}),
    });
  };

  return (
    <form class="card conn-form" onSubmit={submit} aria-label="New API key">
      <div class="grid-form">
        <label class="field">
          <span>Name</span>
          <input
            ref={nameRef}
            required
            maxLength={100}
            placeholder="e.g. ci-pipeline"
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </label>
        <label class="field">
          <span>Expires in (days)</span>
          <input
            type="number"
            min={1}
            max={maxKeyDays ?? 3650}
            placeholder={maxKeyDays ? String(maxKeyDays) : 'never'}
            value={days}
            onInput={(e) => setDays(e.currentTarget.value)}
          />
        </label>
        <label class="check">
          <input type="checkbox" checked={readOnly} onChange={(e) => setReadOnly(e.currentTarget.checked)} /> Read-only (reads only,
          whatever your role)
        </label>
        <label class="check">
          <input type="checkbox" checked={toolsOnly} onChange={(e) => setToolsOnly(e.currentTarget.checked)} /> Curated tools only (no raw
          SQL)
        </label>
      </div>
      {maxKeyDays !== null && <small class="field-hint muted">Keys of this workspace live at most {maxKeyDays} days.</small>}
      <fieldset class="field segmented" aria-label="Connections">
        <legend>Connections {chosen.length === 0 && <small class="muted">(none chosen: every connection you may use)</small>}</legend>
        {connections.map((c) => (
          <label class="check" key={c.id}>
            <input type="checkbox" checked={chosen.includes(c.id)} onChange={(e) => toggle(c.id, e.currentTarget.checked)} /> {c.name}
          </label>
        ))}
      </fieldset>
      <fieldset class="field segmented" aria-label="Tools">
        <legend>
          Tools <small class="muted">{tools.length === 0 ? '(none chosen: every tool)' : ''}</small>
        </legend>
        {allTools.length === 0 && <small class="muted">No tools in this workspace yet.</small>}
        {allTools.map((t) => (
          <label class="check" key={t.name} title={t.description}>
            <input type="checkbox" checked={tools.includes(t.name)} onChange={(e) => toggleTool(t.name, e.currentTarget.checked)} />{' '}
            {t.name} <small class="muted">on {names.get(t.connectionId) ?? t.connectionId}</small>
          </label>
        ))}
      </fieldset>
      <div class="form-actions">
        <button type="submit" class="btn btn-primary" disabled={busy}>
          Create
        </button>
        <button type="button" class="btn" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** "Read-only · warehouse · tools only" — what a key narrows, for the list. */
export function scopeText(
  scope: { readOnly?: boolean; connections?: string[]; toolsOnly?: boolean; tools?: string[] } | null,
  names: Map<string, string>,
): string {
  if (!scope) return 'Full (as its user)';
  const parts: string[] = [];
  if (scope.readOnly) parts.push('Read-only');
  if (scope.connections) parts.push(scope.connections.map((id) => names.get(id) ?? id).join(', '));
  if (scope.toolsOnly) parts.push('Tools only');
  if (scope.tools) parts.push(`tools: ${scope.tools.join(', ')}`);
  return parts.join(' · ');
}
