// One statement on a MySQL/MariaDB connection, collected into an ExecuteResult: rows are
// encoded as they arrive and kept up to maxRows/maxBytes; past that the rest is read and
// dropped, and if it keeps coming the statement is killed rather than drained.

import type { FieldPacket, PoolConnection, ResultSetHeader } from 'mysql2';
import type mysql from 'mysql2';
import { parameterCountMismatch } from '../parameter-count.ts';
import type { ExecuteOptions, ExecuteResult } from '../engine.ts';
import { ER_QUERY_INTERRUPTED, errnoOf } from './mysql-errors.ts';
import { createDecoder, mysqlTypeName, type Decoder } from './mysql-values.ts';
import { RowBudget, estimateRowSize } from '../row-budget.ts';

/** Past maxRows the rest of a result is read and dropped; if it keeps coming this long, the
 * statement is killed instead (cheaper than a side connection for a few extra rows). */
const DRAIN_BEFORE_KILL_MS = 100;

export interface StatementTarget {
  conn: PoolConnection;
  /** KILL QUERY the running statement; awaited before the connection is reused. */
  kill(): void;
}

/** JSON parameters for COM_STMT_EXECUTE: objects and arrays travel as JSON text. */
export function toMysqlParams(params: readonly unknown[]): never[] {
  return params.map((p) => (p !== null && typeof p === 'object' ? JSON.stringify(p) : p)) as never[];
}

/** COM_STMT_EXECUTE carries as many values as the prepared statement has placeholders, and
 * the server reads them by that count: three values for `SELECT ? + ?` answered 8.0893e-320
 * (the third value's bytes read as part of the second), and too few failed with "Incorrect
 * arguments to mysqld_stmt_execute". The count is the prepared statement's own: mysql2 keeps
 * the statement under the same key execute() uses (rowsAsArray), so the execute that follows
 * prepares nothing again. A statement that does not prepare fails here as it would there. */
export function checkParameterCount(conn: PoolConnection, sql: string, given: number): Promise<void> {
  return new Promise((resolve, reject) => {
    // The options form keys the statement as execute() does; the typings know only the text.
    conn.prepare({ sql, rowsAsArray: true } as never, (err, statement) => {
      if (err) return reject(err);
      const needed = (statement as unknown as { parameters: unknown[] }).parameters.length;
      if (needed === given) return resolve();
      reject(parameterCountMismatch(needed, given, { sqlState: null, position: null }));
    });
  });
}

/** Runs one statement, keeping at most maxRows rows / maxBytes. */
export function runStatement(session: StatementTarget, opts: ExecuteOptions): Promise<ExecuteResult> {
  return new Promise((resolve, reject) => {
    const { conn } = session;
    const binary = opts.params.length > 0;
    const cmd = binary
      ? conn.execute({ sql: opts.sql, values: toMysqlParams(opts.params), rowsAsArray: true })
      : conn.query({ sql: opts.sql, rowsAsArray: true });
    const budget = new RowBudget(opts.maxRows, opts.maxBytes);
    const rows: unknown[][] = [];
    let fields: FieldPacket[] | null = null;
    let decoders: Decoder[] = [];
    let header: ResultSetHeader | null = null;
    let ignoreRest = false;
    let killTimer: NodeJS.Timeout | undefined;
    let killed = false;
    const stopReading = () => {
      ignoreRest = true;
      killTimer ??= setTimeout(() => {
        killed = true;
        session.kill();
      }, DRAIN_BEFORE_KILL_MS);
    };
    const finish = () => {
      clearTimeout(killTimer);
      resolve({
        columns: (fields ?? []).map((f) => ({ name: f.name, type: mysqlTypeName(f) })),
        rows,
        rowCount: rows.length,
        truncated: budget.truncated,
        affectedRows: fields ? null : (header?.affectedRows ?? 0),
      });
    };
    cmd.on('fields', (f: FieldPacket[] | undefined) => {
      // An OK packet (a write) comes with fields undefined.
      if (!f) return;
      // A CALL can return several result sets: the first one is the result.
      if (fields) return void (ignoreRest = true);
      fields = f;
      decoders = f.map((field) => createDecoder(field, binary));
    });
    cmd.on('result', (row: unknown) => {
      if (!Array.isArray(row)) {
        header ??= row as ResultSetHeader;
        return;
      }
      if (ignoreRest) return;
      const encoded = row.map((value, i) => decoders[i](value));
      if (!budget.admit(estimateRowSize(encoded))) return stopReading();
      rows.push(encoded);
    });
    cmd.on('error', (err: Error) => {
      clearTimeout(killTimer);
      // Our own KILL QUERY of a result we had stopped reading: the rows we kept are the answer.
      if (killed && errnoOf(err) === ER_QUERY_INTERRUPTED) finish();
      else reject(err);
    });
    cmd.on('end', finish);
  });
}

export function query(conn: mysql.Connection | PoolConnection, sql: string): Promise<unknown> {
  return new Promise((resolve, reject) => conn.query({ sql, rowsAsArray: true }, (err, rows) => (err ? reject(err) : resolve(rows))));
}

export function execute(conn: PoolConnection, sql: string, values: unknown[]): Promise<unknown[][]> {
  return new Promise((resolve, reject) =>
    conn.execute({ sql, values: values as never[], rowsAsArray: true }, (err, rows) =>
      err ? reject(err) : resolve(rows as unknown as unknown[][]),
    ),
  );
}
