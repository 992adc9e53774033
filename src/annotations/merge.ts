// Annotations over what the database says: a table's or column's description is the admin's
// when they wrote one, the database's own comment (COMMENT ON, MySQL COMMENT) otherwise;
// synonyms come from annotations only. Pure functions over the engine's SchemaTable rows.
import type { SchemaColumn, SchemaTable } from '../engines/engine.ts';
import type { Annotations, TableNote } from './annotations.ts';

/** Tables by bare name and by "schema.name", built once per document so resolving every key
 * stays linear in the schema plus the document (both may be thousands long). */
export class TableNames {
  private readonly byName = new Map<string, SchemaTable[]>();
  private readonly byQualified = new Map<string, SchemaTable>();

  constructor(tables: SchemaTable[]) {
    for (const t of tables) {
      const list = this.byName.get(t.name);
      if (list) list.push(t);
      else this.byName.set(t.name, [t]);
      if (t.schema !== null) this.byQualified.set(`${t.schema}.${t.name}`, t);
    }
  }

  /** The table a document key names: "schema.name" exactly, else a name found in one schema
   * only; 'ambiguous' when the bare name is in several. */
  resolve(key: string): SchemaTable | 'ambiguous' | null {
    const qualified = this.byQualified.get(key);
    if (qualified) return qualified;
    const named = this.byName.get(key) ?? [];
    if (named.length > 1) return 'ambiguous';
    return named[0] ?? null;
  }
}

/** The note for each table, by object identity (keys resolved once). */
function notesByTable(tables: SchemaTable[], annotations: Annotations): Map<SchemaTable, TableNote> {
  const names = new TableNames(tables);
  const notes = new Map<SchemaTable, TableNote>();
  for (const [key, note] of Object.entries(annotations.tables)) {
    const table = names.resolve(key);
    // A table dropped since the document was saved: its note waits, unused.
    if (table && table !== 'ambiguous') notes.set(table, note);
  }
  return notes;
}

function withNote<T extends SchemaTable | SchemaColumn>(item: T, note: { description?: string; synonyms?: string[] } | undefined): T {
  if (!note) return item;
  const out = { ...item };
  if (note.description) out.description = note.description;
  if (note.synonyms && note.synonyms.length > 0) out.synonyms = note.synonyms;
  return out;
}

/** New table objects with descriptions and synonyms applied; `tables` is left as it was
 * (it may be a cached schema). */
export function applyAnnotations(tables: SchemaTable[], annotations: Annotations): SchemaTable[] {
  if (Object.keys(annotations.tables).length === 0) return tables;
  const notes = notesByTable(tables, annotations);
  return tables.map((t) => {
    const note = notes.get(t);
    if (!note) return t;
    const columns = note.columns ? t.columns.map((c) => withNote(c, note.columns?.[c.name])) : t.columns;
    return { ...withNote(t, note), columns };
  });
}
