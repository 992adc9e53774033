// runQuery() is the one way a query runs, for every front door (HTTP, MCP, AI execute, web
// console): resolve the connection → classify with the dialect's parser → permission →
// execute (reads inside the engine's read-only mode, timeout enforced by the database) →
// encode → exactly one history entry, whatever the outcome past the connection look-up (a
// write's is recorded `running` before the statement is sent and completed after: openHistory).
// The steps are split so exports (export.ts) and async queries (async-queries.ts) share them:
// prepareQuery() up to the permission check (prepare.ts), executePrepared() here for a JSON
// result, openHistory() (history-entry.ts) and trackRunning() for whatever runs the statement
// instead; the request's fields are checked in input.ts.
import { performance } from 'node:perf_hooks';
import type { Column, Engine, ExecuteOptions, ExecuteResult } from '../engines/engine.ts';
import { statementController, type StopController } from '../engines/stop.ts';
import type { Services } from '../services.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { historyErrorOf, openHistory, readHistory, statementRanAfter, statusOf, stoppedFor, type HistoryHandle } from './history-entry.ts';
import type { QueryInput } from './input.ts';
import { prepareQuery, type PreparedQuery, type RunOptions } from './prepare.ts';

// The steps live beside this file; importers of run.ts keep finding them here.
export * from './history-entry.ts';
export * from './input.ts';
export * from './prepare.ts';

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

/** How a caller can stop a statement: a signal to follow, or a controller of its own. */
export type Cancel = Pick<RunOptions, 'signal' | 'controller'>;

/** Lists the statement in svc.running (GET /query/running, cancel, shutdown drain) until
 * `done` settles. */
export function trackRunning(svc: Services, q: PreparedQuery, controller: StopController, done: Promise<unknown>): void {
  svc.running.add({
    queryId: q.queryId,
    workspaceId: q.principal.workspace.id,
    userId: q.principal.user.id,
    connectionId: q.connection.id,
    connectionName: q.connection.name,
    sql: q.sql,
    source: q.source,
    startedAt: Date.now(),
    controller,
    done,
  });
}

/** Writes that cannot change what a function, view or policy is (the catalog the read
 * allowlist is decided from); anything else (CREATE, ALTER, DROP, DO, CALL, …) may. */
const CATALOG_NEUTRAL = new Set([
  'SELECT',
  'INSERT',
  'UPDATE',
  'DELETE',
  'MERGE',
  'COPY',
  'TRUNCATE',
  'VACUUM',
  'ANALYZE',
  'SET',
  'RESET',
  'SHOW',
  'EXPLAIN',
]);

/** After a write ran: schema caches and the like hear about it; DDL through dbq reloads the
 * connection's catalog at the next read instead of waiting for the change check. */
export function announceWrite(svc: Services, q: PreparedQuery): void {
  if (q.verdict.kind !== 'write') return;
  for (const listener of svc.onWrite) listener(q.connection.id);
  if (!CATALOG_NEUTRAL.has(q.verdict.statementType)) svc.readGuards.of(svc.pools.forRead(q.connection)).invalidate();
}

export async function runQuery(svc: Services, principal: Principal, input: QueryInput, opts: RunOptions): Promise<QueryResult> {
  const q = await prepareQuery(svc, principal, input, opts);
  return executePrepared(svc, q, input, opts);
}

/** engine.execute for a prepared query: timeout, cancel, encoding, the history entry. */
export async function executePrepared(
  svc: Services,
  q: PreparedQuery,
  input: Pick<QueryInput, 'sql' | 'params' | 'maxRows' | 'timeoutMs' | 'rowFormat'>,
  cancel: Cancel,
): Promise<QueryResult> {
  const { controller, unlink } = statementController(cancel);
  const options: ExecuteOptions = {
    sql: input.sql,
    params: input.params,
    readOnly: q.readOnly,
    // Named rather than spread (a spread in a literal is V8's slow path); the engines read
    // both as `=== undefined` / `=== true`, so an absent option and an undefined one agree.
    planOnly: q.runOptions.planOnly,
    sessionUntouched: q.runOptions.sessionUntouched,
    timeoutMs: input.timeoutMs,
    maxRows: input.maxRows,
    maxBytes: svc.config.maxResultBytes,
    signal: controller.signal,
    deadline: q.deadline,
  };
  let history: HistoryHandle;
  let execution: Promise<ExecuteResult>;
  if (q.verdict.kind !== 'write') {
    // A read writes nothing before it runs: sent at once, without waiting a turn for a handle.
    history = readHistory(svc, q);
    execution = executeOn(q.engine, options);
    trackRunning(svc, q, controller, execution);
  } else {
    const opened = openHistory(svc, q);
    execution = opened.then(() => q.engine.execute(options));
    // Listed from the start, the write's `running` entry included: GET /query/running, cancel
    // and the shutdown drain see it while that entry is being written.
    trackRunning(svc, q, controller, execution);
    try {
      history = await opened;
    } catch (err) {
      unlink();
      throw err;
    }
  }
  let result;
  try {
    result = await execution;
  } catch (err) {
    const failure = stoppedFor(err, controller);
    await history.finish(statusOf(err), { error: historyErrorOf(failure) }, statementRanAfter(err));
    throw failure;
  } finally {
    unlink();
  }
  const durationMs = Math.round(performance.now() - q.started);
  await history.finish('succeeded', { rowCount: result.rowCount, affectedRows: result.affectedRows }, true);
  announceWrite(svc, q);

  return {
    queryId: q.queryId,
    connectionId: q.connection.id,
    statementType: q.verdict.statementType,
    columns: result.columns,
    rows: input.rowFormat === 'objects' ? toObjects(result.columns, result.rows) : result.rows,
    rowCount: result.rowCount,
    truncated: result.truncated,
    affectedRows: result.affectedRows,
    durationMs,
  };
}

/** engine.execute, a synchronous throw included, as one promise (as `.then` would give it). */
function executeOn(engine: Engine, options: ExecuteOptions): Promise<ExecuteResult> {
  try {
    return engine.execute(options);
  } catch (err) {
    return Promise.reject(err);
  }
}

/** With duplicate column names (`SELECT 1 AS a, 2 AS a`) the last one wins; `arrays` keeps all. */
export function toObjects(columns: Column[], rows: unknown[][]): Record<string, unknown>[] {
  return rows.map((r) => {
    const obj: Record<string, unknown> = {};
    for (let i = 0; i < columns.length; i++) obj[columns[i].name] = r[i];
    return obj;
  });
}
