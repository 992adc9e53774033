import { useEffect, useState } from 'preact/hooks';
import { api, handleSignedOut } from '../api.ts';
import { errorText } from '../error-text.ts';

/** A table as the console's schema read gives it; `comment` is the database's own. */
export interface DescribedTable {
  schema: string | null;
  name: string;
  comment?: string;
  columns: { name: string; type: string; comment?: string }[];
}

interface Note {
  description?: string;
  synonyms?: string[];
}
interface TableNote extends Note {
  columns?: Record<string, Note>;
}
interface Example {
  question: string;
  sql: string;
}
interface Annotations {
  version: number;
  tables: Record<string, TableNote>;
  examples: Example[];
}

/** The document's key for a table: its bare name unless another schema has the same name. */
function keyOf(t: DescribedTable, all: DescribedTable[]): string {
  return all.filter((o) => o.name === t.name).length > 1 && t.schema ? `${t.schema}.${t.name}` : t.name;
}

function noteOf(doc: Annotations, t: DescribedTable, all: DescribedTable[]): TableNote {
  return doc.tables[keyOf(t, all)] ?? (t.schema ? doc.tables[`${t.schema}.${t.name}`] : undefined) ?? {};
}

const splitSynonyms = (text: string): string[] =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

/** Drops empty fields so a saved document holds only what was written. */
function cleanNote<T extends Note>(note: T): T | null {
  const out = { ...note };
  if (!out.description?.trim()) delete out.description;
  if (!out.synonyms?.length) delete out.synonyms;
  return Object.keys(out).length > 0 ? out : null;
}

function cleanDocument(tables: Record<string, TableNote>, examples: Example[]): { tables: Record<string, TableNote>; examples: Example[] } {
  const out: Record<string, TableNote> = {};
  for (const [key, note] of Object.entries(tables)) {
    const columns: Record<string, Note> = {};
    for (const [name, c] of Object.entries(note.columns ?? {})) {
      const kept = cleanNote(c);
      if (kept) columns[name] = kept;
    }
    const kept = cleanNote({ description: note.description, synonyms: note.synonyms, ...(Object.keys(columns).length ? { columns } : {}) });
    if (kept) out[key] = kept;
  }
  return { tables: out, examples: examples.filter((e) => e.question.trim() !== '' || e.sql.trim() !== '') };
}

/** Beside the schema browser: what the connection's tables and columns mean, and example
 * questions with their SQL (the annotations the AI and MCP agents read). Everyone sees them;
 * admins edit them, and each save is a new version. */
export function AnnotationsPanel({ connectionId, tables, admin }: { connectionId: string; tables: DescribedTable[]; admin: boolean }) {
  const [doc, setDoc] = useState<Annotations | null>(null);
  const [failed, setFailed] = useState(false);
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState<Record<string, TableNote>>({});
  const [examples, setExamples] = useState<Example[]>([]);
  const [message, setMessage] = useState<{ kind: 'error' | 'ok'; text: string } | null>(null);
  const [saving, setSaving] = useState(false);

  useEffect(() => {
    const ctrl = new AbortController();
    setDoc(null);
    setFailed(false);
    setEditing(false);
    setMessage(null);
    api.get<Annotations>(`/connections/${encodeURIComponent(connectionId)}/annotations`, ctrl.signal).then(setDoc, (err) => {
      if (ctrl.signal.aborted || handleSignedOut(err)) return;
      setFailed(true);
    });
    return () => ctrl.abort();
  }, [connectionId]);

  if (failed) return <p class="muted">The business context could not be read.</p>;
  if (!doc) return null;

  const startEditing = () => {
    const copy: Record<string, TableNote> = {};
    for (const t of tables) copy[keyOf(t, tables)] = structuredClone(noteOf(doc, t, tables));
    setDraft(copy);
    setExamples(doc.examples.map((e) => ({ ...e })));
    setMessage(null);
    setEditing(true);
  };
  const setTable = (key: string, change: Partial<TableNote>) => setDraft((d) => ({ ...d, [key]: { ...d[key], ...change } }));
  const setColumn = (key: string, column: string, change: Partial<Note>) =>
    setDraft((d) => ({
      ...d,
      [key]: { ...d[key], columns: { ...d[key]?.columns, [column]: { ...d[key]?.columns?.[column], ...change } } },
    }));
  const save = async () => {
    setSaving(true);
    setMessage(null);
    try {
      const saved = await api.put<Annotations>(
        `/connections/${encodeURIComponent(connectionId)}/annotations`,
        cleanDocument(draft, examples),
      );
      setDoc(saved);
      setEditing(false);
      setMessage({ kind: 'ok', text: `Saved as version ${saved.version}.` });
    } catch (err) {
      if (!handleSignedOut(err)) setMessage({ kind: 'error', text: errorText(err) });
    } finally {
      setSaving(false);
    }
  };

  const described = tables.filter((t) => {
    const note = noteOf(doc, t, tables);
    return note.description || t.comment || t.columns.some((c) => note.columns?.[c.name]?.description || c.comment);
  });

  return (
    <section class="annotations" aria-labelledby="annotations-title">
      <div class="annotations-head">
        <h2 id="annotations-title">Business context</h2>
        {doc.version > 0 && <span class="muted">v{doc.version}</span>}
        {admin && !editing && (
          <button type="button" class="btn btn-ghost btn-small" onClick={startEditing}>
            Edit
          </button>
        )}
      </div>
      {message && (
        <p class={message.kind === 'error' ? 'alert alert-error' : 'muted'} role={message.kind === 'error' ? 'alert' : 'status'}>
          {message.text}
        </p>
      )}
      {!editing ? (
        <>
          {described.length === 0 && doc.examples.length === 0 && (
            <p class="muted">
              {admin ? 'No descriptions yet: say what tables and columns mean, for people and the AI.' : 'No descriptions yet.'}
            </p>
          )}
          <dl class="annotations-list">
            {described.map((t) => {
              const note = noteOf(doc, t, tables);
              return (
                <div key={keyOf(t, tables)} data-table={t.name}>
                  <dt>
                    {t.name}
                    {note.synonyms?.length ? <span class="muted"> ({note.synonyms.join(', ')})</span> : null}
                  </dt>
                  <dd>{note.description ?? t.comment ?? ''}</dd>
                  {t.columns.map((c) => {
                    const text = note.columns?.[c.name]?.description ?? c.comment;
                    return text ? (
                      <dd key={c.name} class="annotations-column" data-column={c.name}>
                        <code>{c.name}</code> {text}
                      </dd>
                    ) : null;
                  })}
                </div>
              );
            })}
          </dl>
          {doc.examples.length > 0 && (
            <>
              <h3>Examples</h3>
              <ul class="annotations-examples">
                {doc.examples.map((e, i) => (
                  <li key={i}>
                    <span>{e.question}</span>
                    <code>{e.sql}</code>
                  </li>
                ))}
              </ul>
            </>
          )}
        </>
      ) : (
        <form
          class="annotations-form"
          onSubmit={(e) => {
            e.preventDefault();
            void save();
          }}
        >
          {tables.map((t) => {
            const key = keyOf(t, tables);
            const note = draft[key] ?? {};
            return (
              <details key={key} class="annotations-table">
                <summary>{key}</summary>
                <label>
                  Description of {key}
                  <input
                    type="text"
                    maxLength={2000}
                    placeholder={t.comment ?? ''}
                    value={note.description ?? ''}
                    onInput={(e) => setTable(key, { description: e.currentTarget.value })}
                  />
                </label>
                <label>
                  Synonyms of {key} (comma-separated)
                  <input
                    type="text"
                    value={(note.synonyms ?? []).join(', ')}
                    onChange={(e) => setTable(key, { synonyms: splitSynonyms(e.currentTarget.value) })}
                  />
                </label>
                {t.columns.map((c) => (
                  <label key={c.name} class="annotations-column">
                    Description of {key}.{c.name}
                    <input
                      type="text"
                      maxLength={2000}
                      placeholder={c.comment ?? ''}
                      value={note.columns?.[c.name]?.description ?? ''}
                      onInput={(e) => setColumn(key, c.name, { description: e.currentTarget.value })}
                    />
                  </label>
                ))}
              </details>
            );
          })}
          <h3>Examples</h3>
          {examples.map((e, i) => (
            <fieldset key={i} class="annotations-example">
              <legend>Example {i + 1}</legend>
              <label>
                Question
                <input
                  type="text"
                  value={e.question}
                  onInput={(ev) => setExamples((xs) => xs.map((x, j) => (j === i ? { ...x, question: ev.currentTarget.value } : x)))}
                />
              </label>
              <label>
                SQL
                <textarea
                  rows={3}
                  value={e.sql}
                  onInput={(ev) => setExamples((xs) => xs.map((x, j) => (j === i ? { ...x, sql: ev.currentTarget.value } : x)))}
                />
              </label>
              <button type="button" class="btn btn-ghost btn-small" onClick={() => setExamples((xs) => xs.filter((_, j) => j !== i))}>
                Remove example {i + 1}
              </button>
            </fieldset>
          ))}
          <button type="button" class="btn btn-ghost btn-small" onClick={() => setExamples((xs) => [...xs, { question: '', sql: '' }])}>
            Add example
          </button>
          <div class="annotations-actions">
            <button type="submit" class="btn btn-primary btn-small" disabled={saving}>
              {saving ? 'Saving…' : 'Save'}
            </button>
            <button type="button" class="btn btn-ghost btn-small" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </div>
        </form>
      )}
    </section>
  );
}
