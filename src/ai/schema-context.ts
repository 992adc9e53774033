// What a SQL generator knows about a connection: its tables (with keys) and a few distinct
// values of low-cardinality text columns, so "Berlin" or "shipped" can be tied to a column.
// Gathered once per connection by the caller (who caches it) through a read function, so
// this module works with every engine and never touches a driver.
import type { EngineName, SchemaColumn, SchemaTable } from '../engines/engine.ts';
import { quoteIdent, tableRef } from './dialect.ts';

export interface SchemaContext {
  engine: EngineName;
  tables: SchemaTable[];
  /** Key "table.column" (table name without schema) → distinct values, most frequent first. */
  samples: Record<string, string[]>;
  /** The connection's example questions with their SQL (annotations), when it has any. */
  examples?: { question: string; sql: string }[];
}

export type RunRead = (sql: string) => Promise<unknown[][]>;

export interface SampleOptions {
  /** Values kept per column (default 20). */
  maxValues?: number;
  /** Columns with more distinct values than this get none (default 50): names, emails and
   * free text are not vocabulary. */
  maxDistinct?: number;
  /** Rows looked at per table (default 10,000), so sampling a huge table stays cheap; the
   * values then come from the first rows the engine returns, not the whole table. */
  scanRows?: number;
  /** Longest value kept (default 60 characters). */
  maxLength?: number;
}

const TEXT_TYPE = /char|text|string|clob|enum|citext|name|varchar|nvarchar/i;

export function isTextType(type: string): boolean {
  return type.trim() === '' || TEXT_TYPE.test(type);
}
export function isNumericType(type: string): boolean {
  return /int|num|dec|real|float|double|money|serial|number/i.test(type) && !/interval|point/i.test(type);
}
export function isDateType(type: string): boolean {
  return /date|time/i.test(type) && !/interval/i.test(type);
}

export function sampleKey(table: string, column: string): string {
  return `${table}.${column}`;
}

function isKeyColumn(table: SchemaTable, col: SchemaColumn): boolean {
  return col.primaryKey || table.foreignKeys.some((fk) => fk.columns.includes(col.name));
}

/**
 * Distinct values of each text column with at most `maxDistinct` distinct values, at most
 * `maxValues` of them, most frequent first. One query per column through `runRead`; a column
 * whose query fails (permissions, odd type) is skipped, not fatal.
 */
export async function collectSamples(
  tables: SchemaTable[],
  runRead: RunRead,
  dialect: EngineName,
  opts: SampleOptions = {},
): Promise<Record<string, string[]>> {
  const maxValues = opts.maxValues ?? 20;
  const maxDistinct = opts.maxDistinct ?? 50;
  const scanRows = opts.scanRows ?? 10_000;
  const maxLength = opts.maxLength ?? 60;
  const samples: Record<string, string[]> = {};
  for (const table of tables) {
    for (const col of table.columns) {
      if (!isTextType(col.type) || isKeyColumn(table, col)) continue;
      const c = quoteIdent(dialect, col.name);
      const sql =
        `SELECT v, COUNT(*) AS n FROM (SELECT ${c} AS v FROM ${tableRef(dialect, table)} LIMIT ${scanRows}) s ` +
        `WHERE v IS NOT NULL GROUP BY v ORDER BY COUNT(*) DESC, v LIMIT ${maxDistinct + 1}`;
      let rows: unknown[][];
      try {
        rows = await runRead(sql);
      } catch {
        continue;
      }
      if (rows.length === 0 || rows.length > maxDistinct) continue;
      const values = rows
        .map((r) => r[0])
        .filter((v): v is string => typeof v === 'string' && v.trim() !== '' && v.length <= maxLength)
        .slice(0, maxValues);
      if (values.length > 0) samples[sampleKey(table.name, col.name)] = values;
    }
  }
  return samples;
}

/** Convenience: tables plus their samples. */
export async function buildSchemaContext(
  engine: EngineName,
  tables: SchemaTable[],
  runRead: RunRead,
  opts?: SampleOptions,
): Promise<SchemaContext> {
  return { engine, tables, samples: await collectSamples(tables, runRead, engine, opts) };
}

export interface RenderOptions {
  /** Only these tables (names), e.g. the ones relevant to a question. */
  tables?: string[];
  /** Sample values shown per column (default 10). */
  maxSamples?: number;
}

/** A description and synonyms as one line of an SQL comment ('' when neither): annotations
 * or the database's own comments, which may hold newlines. */
function describeNote(item: { description?: string; synonyms?: string[] }): string {
  const parts: string[] = [];
  if (item.description) parts.push(item.description.replace(/\s+/g, ' ').trim());
  if (item.synonyms && item.synonyms.length > 0) parts.push(`also called: ${item.synonyms.join(', ')}`);
  return parts.join('; ');
}

/** The schema as CREATE TABLE text with keys, descriptions and sample values, for LLM prompts. Pure. */
export function renderSchema(ctx: SchemaContext, opts: RenderOptions = {}): string {
  const wanted = opts.tables ? new Set(opts.tables) : null;
  const maxSamples = opts.maxSamples ?? 10;
  const out: string[] = [];
  for (const t of ctx.tables) if (!wanted || wanted.has(t.name)) out.push(renderTable(ctx, t, maxSamples));
  return out.join('\n\n');
}

/** One table's CREATE TABLE text, as renderSchema writes it. */
export function renderTable(ctx: SchemaContext, t: SchemaContext['tables'][number], maxSamples = 10): string {
  const d = ctx.engine;
  const lines: string[] = [];
  for (const c of t.columns) {
    let line = `  ${quoteIdent(d, c.name)} ${c.type || 'TEXT'}${c.nullable ? '' : ' NOT NULL'},`;
    const notes: string[] = [];
    const meaning = describeNote(c);
    if (meaning) notes.push(meaning);
    const sample = ctx.samples[sampleKey(t.name, c.name)];
    if (sample && sample.length > 0) {
      const shown = sample
        .slice(0, maxSamples)
        .map((v) => `'${v.replace(/'/g, "''")}'`)
        .join(', ');
      notes.push(`values: ${shown}${sample.length > maxSamples ? ', …' : ''}`);
    }
    if (notes.length > 0) line += ` -- ${notes.join('; ')}`;
    lines.push(line);
  }
  const pk = t.columns.filter((c) => c.primaryKey).map((c) => quoteIdent(d, c.name));
  if (pk.length > 0) lines.push(`  PRIMARY KEY (${pk.join(', ')}),`);
  for (const fk of t.foreignKeys) {
    const ref = tableRef(d, { schema: fk.refSchema, name: fk.refTable });
    lines.push(
      `  FOREIGN KEY (${fk.columns.map((c) => quoteIdent(d, c)).join(', ')}) REFERENCES ${ref} (${fk.refColumns.map((c) => quoteIdent(d, c)).join(', ')}),`,
    );
  }
  // Drop the separator after the last element, keeping any trailing comment.
  const last = lines.length - 1;
  lines[last] = lines[last].replace(/,(?=( -- .*)?$)/, '');
  const kind = t.kind === 'view' ? 'VIEW' : 'TABLE';
  const about = describeNote(t);
  return `${about ? `-- ${about}\n` : ''}CREATE ${kind} ${tableRef(d, t)} (\n${lines.join('\n')}\n);`;
}
