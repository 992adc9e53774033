// runQuery() is the one way a query runs, for every front door (HTTP, MCP, AI execute, web
// console): resolve the connection → classify with the dialect's parser → permission →
// execute (reads inside the engine's read-only mode, timeout enforced by the database) →
// encode → exactly one history entry, whatever the outcome past the connection look-up.
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { getConnectionRow } from '../connections/connections.ts';
import type { Column } from '../engines/engine.ts';
import {
  DbqError,
  InsufficientPermissionsError,
  InvalidRequestError,
  QueryCanceledError,
  QueryTimeoutError,
} from '../errors.ts';
import { writeHistory, type HistorySource, type HistoryStatus } from '../history/history.ts';
import { newId } from '../ids.ts';
import type { Services } from '../services.ts';
import { classifyStatement } from '../sql/guard.ts';
import type { Principal } from '../workspaces/api-keys.ts';

export const queryInputShape = {
  connectionId: z.string().min(1).max(200),
  sql: z.string().min(1),
  params: z.array(z.unknown()).max(10_000).default([]),
  maxRows: z.number().int().min(1).max(10_000).default(1000),
  timeoutMs: z.number().int().min(1).max(300_000).default(30_000),
  rowFormat: z.enum(['arrays', 'objects']).default('arrays'),
};
export const queryInputSchema = z.object({ ...queryInputShape, async: z.boolean().optional() }).strict();
export type QueryInput = z.output<typeof queryInputSchema>;

export interface QueryResult {
  queryId: string;
  connectionId: string;
  statementType: string;
  columns: Column[];
  rows: unknown[][] | Record<string, unknown>[];
  rowCount: number;
  truncated: boolean;
  affectedRows: number | null;
  durationMs: number;
}

export interface RunOptions {
  source: HistorySource;
  /** Aborted when the client goes away (or an async query is cancelled). */
  signal?: AbortSignal;
  /** Forces the read-only path whatever the key (AI `execute` for read-only callers). */
  readOnly?: boolean;
  queryId?: string;
}

export function statusOf(err: unknown): HistoryStatus {
  if (err instanceof QueryTimeoutError) return 'timed_out';
  if (err instanceof QueryCanceledError) return 'canceled';
  if (err instanceof InsufficientPermissionsError) return 'rejected';
  return 'failed';
}

export async function runQuery(svc: Services, principal: Principal, input: QueryInput, opts: RunOptions): Promise<QueryResult> {
  if (input.sql.length > svc.config.maxSqlLength) {
    throw new InvalidRequestError(`sql is longer than ${svc.config.maxSqlLength} characters`, { field: 'sql' });
  }
  const row = await getConnectionRow(svc.db, principal.workspace.id, input.connectionId, svc.store.memo);
  const queryId = opts.queryId ?? newId('q');
  const started = performance.now();
  const verdict = await classifyStatement(row.engine, input.sql);
  const record = (status: HistoryStatus, extra: { rowCount?: number; affectedRows?: number | null; error?: string } = {}) =>
    writeHistory(svc.db, {
      principal,
      queryId,
      connection: { id: row.id, name: row.name },
      sql: input.sql,
      statementType: verdict.statementType,
      status,
      rowCount: extra.rowCount ?? null,
      affectedRows: extra.affectedRows ?? null,
      durationMs: performance.now() - started,
      error: extra.error ?? null,
      source: opts.source,
    });

  if (verdict.kind === 'rejected') {
    const err = new InvalidRequestError(verdict.reason ?? 'Statement rejected', { field: 'sql' });
    await record('rejected', { error: err.message });
    throw err;
  }
  if (verdict.kind === 'write') {
    const reason =
      principal.user.role !== 'admin'
        ? 'a read-only key may run read statements only'
        : row.read_only === 1
          ? 'the connection is read-only'
          : opts.readOnly
            ? 'only read statements may run here'
            : null;
    if (reason) {
      const err = new InsufficientPermissionsError({ reason, statementType: verdict.statementType });
      await record('rejected', { error: `${err.message}: ${reason}` });
      throw err;
    }
  }

  const engine = svc.pools.get(row);
  const controller = new AbortController();
  const onAbort = () => controller.abort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  const execution = engine.execute({
    sql: input.sql,
    params: input.params,
    readOnly: verdict.kind === 'read',
    timeoutMs: input.timeoutMs,
    maxRows: input.maxRows,
    maxBytes: svc.config.maxResultBytes,
    signal: controller.signal,
  });
  svc.running.add({
    queryId,
    workspaceId: principal.workspace.id,
    userId: principal.user.id,
    connectionId: row.id,
    connectionName: row.name,
    sql: input.sql,
    source: opts.source,
    startedAt: new Date().toISOString(),
    controller,
    done: execution,
  });
  if (opts.signal?.aborted) controller.abort();

  let result;
  try {
    result = await execution;
  } catch (err) {
    const message = err instanceof DbqError ? err.message : 'Internal server error';
    await record(statusOf(err), { error: message });
    throw err;
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
  }
  const durationMs = Math.round(performance.now() - started);
  await record('succeeded', { rowCount: result.rowCount, affectedRows: result.affectedRows });
  if (verdict.kind === 'write') for (const listener of svc.onWrite) listener(row.id);

  return {
    queryId,
    connectionId: row.id,
    statementType: verdict.statementType,
    columns: result.columns,
    rows: input.rowFormat === 'objects' ? toObjects(result.columns, result.rows) : result.rows,
    rowCount: result.rowCount,
    truncated: result.truncated,
    affectedRows: result.affectedRows,
    durationMs,
  };
}

/** With duplicate column names (`SELECT 1 AS a, 2 AS a`) the last one wins; `arrays` keeps all. */
function toObjects(columns: Column[], rows: unknown[][]): Record<string, unknown>[] {
  return rows.map((r) => {
    const obj: Record<string, unknown> = {};
    for (let i = 0; i < columns.length; i++) obj[columns[i].name] = r[i];
    return obj;
  });
}
