// Statements run through a portal: pg-query-stream's cursor (pg-cursor) speaks the extended
// protocol (Parse/Bind/Execute with a row limit), so one request is one statement at the
// server ("cannot insert multiple commands into a prepared statement") and maxRows is read
// with a row limit instead of by fetching everything.

import type pg from 'pg';
import QueryStream from 'pg-query-stream';
import type { Column, ExecuteOptions } from '../engine.ts';
import { decodeValue, type PgType } from './postgres-values.ts';
import { RowBudget } from '../row-budget.ts';

export type RawRow = Array<string | null>;

// Every value arrives as the server's text; postgres-values.ts decodes it by OID. Passed per
// pool and per cursor: pg.types.setTypeParser would change every pool in the process
// (node-postgres #1838).
export const TEXT_TYPES: pg.CustomTypesConfig = {
  getTypeParser: (() => (value: string) => value) as unknown as pg.CustomTypesConfig['getTypeParser'],
};

const FETCH_BATCH = 1_000;

/** The slice of pg-cursor used here (pg-query-stream exposes it as `cursor`). */
export interface Cursor {
  read(rows: number, cb: (err: Error | undefined, rows: RawRow[]) => void): void;
  close(cb: (err?: Error) => void): void;
  state: string;
}

export interface CursorResult {
  fields: pg.FieldDef[];
  command: string | null;
  rowCount: number | null;
}

export interface OpenCursor {
  cursor: Cursor;
  /** Fields once the first read returned; command/rowCount once the portal completed. */
  result(): CursorResult;
}

export function openCursor(client: pg.ClientBase, sql: string, params: readonly unknown[]): OpenCursor {
  const query = new QueryStream(sql, params.length ? [...params] : undefined, { rowMode: 'array', types: TEXT_TYPES });
  client.query(query);
  return { cursor: query.cursor as Cursor, result: () => query._result as CursorResult };
}

export function readCursor(cursor: Cursor, rows: number): Promise<RawRow[]> {
  return new Promise((resolve, reject) => cursor.read(rows, (err, batch) => (err ? reject(err) : resolve(batch))));
}

export function closeCursor(cursor: Cursor): Promise<void> {
  if (cursor.state === 'done' || cursor.state === 'error') return Promise.resolve();
  return new Promise((resolve, reject) => cursor.close((err) => (err ? reject(err) : resolve())));
}

/** Reads at most maxRows rows within maxBytes (sized on the raw text), then closes the portal. */
export async function readRows(
  client: pg.ClientBase,
  opts: Pick<ExecuteOptions, 'sql' | 'params' | 'maxRows' | 'maxBytes'>,
): Promise<CursorResult & { rows: RawRow[]; truncated: boolean }> {
  const { cursor, result } = openCursor(client, opts.sql, opts.params);
  const budget = new RowBudget(opts.maxRows, opts.maxBytes);
  const rows: RawRow[] = [];
  try {
    // One row past maxRows tells whether the result was cut.
    while (!budget.full) {
      const want = Math.min(FETCH_BATCH, opts.maxRows - rows.length + 1);
      const batch = await readCursor(cursor, want);
      for (const row of batch) {
        if (!budget.admit(rawRowSize(row))) break;
        rows.push(row);
      }
      if (batch.length < want) break;
    }
  } finally {
    await closeCursor(cursor);
  }
  const { fields, command, rowCount } = result();
  return { fields, command, rowCount, rows, truncated: budget.truncated };
}

export function batchSize(maxRows: number): number {
  return Math.max(1, Math.min(FETCH_BATCH, maxRows));
}

function rawRowSize(row: RawRow): number {
  let size = 2;
  for (const value of row) size += value === null ? 5 : value.length + 3;
  return size;
}

/** Decodes the row in place and returns it: the driver's array is not used again, and a new
 * array per row was a tenth of a large result's garbage. */
export function decodeRow(row: RawRow, types: PgType[]): unknown[] {
  const out = row as unknown[];
  for (let i = 0; i < out.length; i++) out[i] = decodeValue(row[i], types[i]);
  return out;
}

export function columnsOf(fields: pg.FieldDef[], types: PgType[]): Column[] {
  return fields.map((field, i) => ({ name: field.name, type: types[i].name }));
}
