// runQuery() is the one way a query runs, for every front door (HTTP, MCP, AI execute, web
// console): resolve the connection → classify with the dialect's parser → permission →
// execute (reads inside the engine's read-only mode, timeout enforced by the database) →
// encode → exactly one history entry, whatever the outcome past the connection look-up (a
// write's is recorded `running` before the statement is sent and completed after: openHistory).
// The steps are split so exports (export.ts) and async queries (async-queries.ts) share them:
// prepareQuery() up to the permission check, executePrepared() for a JSON result,
// openHistory()/trackRunning() for whatever runs the statement instead.
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { getConnectionFor } from '../access/grants.ts';
import { assertRawAccess } from '../access/scope.ts';
import { DEFAULT_STATEMENT_TIMEOUT_MS, type Column, type Engine, type ExecuteOptions } from '../engines/engine.ts';
import { Deadline } from '../engines/deadline.ts';
import { statementController, type StopController, type StopSignal } from '../engines/stop.ts';
import {
  DatabaseBusyError,
  DbqError,
  InsufficientPermissionsError,
  InternalError,
  InvalidRequestError,
  QueryCanceledError,
  QueryFailedError,
  QueryTimeoutError,
  StoreUnavailableError,
} from '../errors.ts';
import type { HistoryOutcome, HistorySource, HistoryStatus, NewHistoryEntry } from '../history/history.ts';
import { newId } from '../ids.ts';
import type { Services } from '../services.ts';
import { decideStatement, runOptionsOf } from '../guard/decide.ts';
import type { Verdict } from '../guard/verdict.ts';
import type { ConnectionRow } from '../store/schema.ts';
import type { Principal } from '../workspaces/api-keys.ts';

/** How deep a JSON object or array inside an object parameter may nest (it is bound as JSON text). */
export const PARAM_OBJECT_DEPTH = 32;

/** Why a number cannot be bound as given, or null. JSON.parse has already turned `1e400` into
 * Infinity and `9007199254740993` into …992: every integer literal it could not keep exactly
 * lands at or beyond 2^53, so refusing unsafe integers catches each silent change. */
function numberProblem(n: number): string | null {
  if (!Number.isFinite(n)) return 'is not a finite number; pass it as a string';
  if (Number.isInteger(n) && !Number.isSafeInteger(n))
    return 'is an integer beyond ±(2^53-1) that JSON numbers cannot carry exactly; pass it as a string';
  return null;
}

/** Checks one parameter without recursion (a body nested 5,000 levels deep once overflowed the
 * stack in the driver, and at 3,000 levels the RangeError's text came back as the database's
 * message): a scalar, an array of scalars (a PostgreSQL array parameter), or a plain object
 * bound as JSON text and nested at most PARAM_OBJECT_DEPTH levels. Returns the problem and the
 * path below the parameter where it is. */
export function paramProblem(value: unknown): { path: (string | number)[]; message: string } | null {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return null;
  if (typeof value === 'number') {
    const message = numberProblem(value);
    return message ? { path: [], message } : null;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (item === null || typeof item === 'string' || typeof item === 'boolean') continue;
      if (typeof item === 'number') {
        const message = numberProblem(item);
        if (message) return { path: [i], message };
        continue;
      }
      return { path: [i], message: 'must be a string, number, boolean or null (array parameters hold scalars only)' };
    }
    return null;
  }
  if (typeof value === 'object') {
    const stack: { value: unknown; path: (string | number)[] }[] = [{ value, path: [] }];
    while (stack.length > 0) {
      const { value: v, path } = stack.pop()!;
      if (typeof v === 'number') {
        const message = numberProblem(v);
        if (message) return { path, message };
      } else if (v !== null && typeof v === 'object') {
        if (path.length >= PARAM_OBJECT_DEPTH) return { path, message: `nests deeper than ${PARAM_OBJECT_DEPTH} levels` };
        for (const [k, child] of Object.entries(v)) stack.push({ value: child, path: [...path, Array.isArray(v) ? Number(k) : k] });
      }
    }
    return null;
  }
  return { path: [], message: 'must be a string, number, boolean, null, an array of those, or an object' };
}

const paramsSchema = z
  .array(z.unknown())
  .max(10_000)
  .superRefine((params, ctx) => {
    for (let i = 0; i < params.length; i++) {
      const problem = paramProblem(params[i]);
      if (problem) {
        ctx.addIssue({ code: 'custom', path: [i, ...problem.path], message: problem.message });
        return;
      }
    }
  });

export const queryInputShape = {
  connectionId: z.string().min(1).max(200),
  sql: z.string().min(1),
  params: paramsSchema.default([]),
  maxRows: z.number().int().min(1).max(10_000).default(1000),
  timeoutMs: z.number().int().min(1).max(300_000).default(DEFAULT_STATEMENT_TIMEOUT_MS),
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
  signal?: StopSignal;
  /** Instead of `signal`: a controller made for this one query (an HTTP request's), used as
   * the statement's own, so no second controller has to follow it. */
  controller?: StopController;
  /** Settles when the caller's plan limit admits the request (rejects when it does not). The
   * connection look-up starts before it is awaited, so the two round trips (Redis, a
   * PostgreSQL store) overlap; nothing runs and nothing is written until it has settled. */
  admitted?: Promise<void>;
  /** Forces the read-only path whatever the key (AI `execute` for read-only callers). */
  readOnly?: boolean;
  queryId?: string;
  /** Set when a curated tool runs the statement (src/tools/tools.ts): a toolsOnly key may run
   * it, and its history entry names the tool. */
  tool?: { name: string; version: number };
}

export function statusOf(err: unknown): HistoryOutcome['status'] {
  if (err instanceof QueryTimeoutError) return 'timed_out';
  if (err instanceof QueryCanceledError) return 'canceled';
  if (err instanceof InsufficientPermissionsError) return 'rejected';
  return 'failed';
}

/** The engines end every stopped statement with QueryCanceledError, whoever stopped it; a stop
 * that gave its reason (the shutdown's cut, src/query/running.ts) is reported as that reason,
 * not as a client that went away. */
export function stoppedFor(err: unknown, controller: StopController): unknown {
  return err instanceof QueryCanceledError && controller.reason ? controller.reason : err;
}

/** What a history entry needs to know about a statement, whatever became of it. */
export interface QueryIdentity {
  queryId: string;
  principal: Principal;
  connection: ConnectionRow;
  verdict: Verdict;
  sql: string;
  source: HistorySource;
  /** performance.now() when preparation began; durationMs counts from here. */
  started: number;
  tool?: { name: string; version: number };
}

/** A statement that passed the connection look-up, the guard and the permission check: what
 * every way of running it (runQuery, exports, async queries) starts from. */
export interface PreparedQuery extends QueryIdentity {
  engine: Engine;
  /** Runs inside the engine's read-only mode. */
  readOnly: boolean;
  /** What the decision tells the engine beside readOnly (a plan-only EXPLAIN of a write). */
  runOptions: Pick<ExecuteOptions, 'planOnly' | 'sessionUntouched'>;
  /** Start + timeoutMs: the decision's catalog wait, the pool, the connect and the statement
   * all end there (src/engines/deadline.ts). */
  deadline: Deadline;
}

export interface HistoryExtra {
  rowCount?: number | null;
  affectedRows?: number | null;
  error?: string;
}

/** A refused statement keeps its first REFUSED_SQL_KEPT characters in history, and its length:
 * refusals cost the sender nothing, so they must not fill the store at 100 KB apiece. */
export const REFUSED_SQL_KEPT = 10_240;

function historySql(sql: string, status: HistoryStatus): string {
  if (status !== 'rejected' || sql.length <= REFUSED_SQL_KEPT) return sql;
  return `${sql.slice(0, REFUSED_SQL_KEPT)}… [${sql.length} characters]`;
}

function historyEntryOf(q: QueryIdentity, status: HistoryStatus, extra: HistoryExtra): NewHistoryEntry {
  return {
    principal: q.principal,
    queryId: q.queryId,
    connection: { id: q.connection.id, name: q.connection.name },
    sql: historySql(q.sql, status),
    statementType: q.verdict.statementType,
    status,
    rowCount: extra.rowCount ?? null,
    affectedRows: extra.affectedRows ?? null,
    durationMs: performance.now() - q.started,
    error: extra.error ?? null,
    source: q.source,
    tool: q.tool ?? null,
  };
}

/** The one history entry of a prepared query. */
export function recordHistory(svc: Services, q: QueryIdentity, status: HistoryStatus, extra: HistoryExtra = {}): Promise<unknown> {
  return svc.history.write(historyEntryOf(q, status, extra));
}

/** Whether a statement may have changed anything: `true` once the engine answered; after a
 * failure, `false` when the database refused or aborted it (or it never got a connection),
 * else `"unknown"` (a connection lost while it ran, say: it may have committed). */
export type StatementRan = boolean | 'unknown';

export function statementRanAfter(err: unknown): StatementRan {
  return err instanceof QueryFailedError ||
    err instanceof QueryTimeoutError ||
    err instanceof QueryCanceledError ||
    err instanceof DatabaseBusyError
    ? false
    : 'unknown';
}

/** The store failure a write answers with, saying whether its statement ran and under which
 * query id, so a client knows whether retrying would run it twice. */
export function withStatementRan(err: unknown, statementRan: StatementRan, queryId: string): DbqError {
  const details = { statementRan, queryId };
  if (err instanceof StoreUnavailableError) return new StoreUnavailableError({ ...err.details, ...details }, err.cause ?? err);
  if (err instanceof DbqError) return new DbqError(err.code, err.status, err.message, { ...err.details, ...details }, err);
  return new InternalError(err, details);
}

/** The history entry of a statement about to run; finish() writes its outcome. */
export interface HistoryHandle {
  finish(status: HistoryOutcome['status'], extra: HistoryExtra, statementRan: StatementRan): Promise<void>;
}

/** A read's entry is written once, after it ran, in the next group commit. A write's is recorded
 * `running` before its statement is sent — durably, so nothing afterwards (the store failing,
 * the process killed) can leave a write that ran without a trace — and completed after. If the
 * store fails either time, the error says whether the statement ran. */
export async function openHistory(svc: Services, q: QueryIdentity): Promise<HistoryHandle> {
  if (q.verdict.kind !== 'write') {
    return {
      async finish(status, extra) {
        await recordHistory(svc, q, status, extra);
      },
    };
  }
  let id: string;
  try {
    id = (await svc.history.write({ ...historyEntryOf(q, 'running', {}), durationMs: 0 }, { durable: true })).id;
  } catch (err) {
    throw withStatementRan(err, false, q.queryId);
  }
  return {
    async finish(status, extra, statementRan) {
      try {
        await svc.history.complete(id, {
          status,
          rowCount: extra.rowCount ?? null,
          affectedRows: extra.affectedRows ?? null,
          durationMs: performance.now() - q.started,
          error: extra.error ?? null,
        });
      } catch (err) {
        throw withStatementRan(err, statementRan, q.queryId);
      }
    },
  };
}

/** History message of a failure: a DbqError's own message, nothing internal. */
export function historyErrorOf(err: unknown): string {
  return err instanceof DbqError ? err.message : 'Internal server error';
}

/** Connection look-up → guard → permission. A refusal writes its history entry and throws
 * (400 rejected / 403); an unknown connection throws 404 with no entry. */
export async function prepareQuery(
  svc: Services,
  principal: Principal,
  input: { connectionId: string; sql: string; timeoutMs?: number },
  opts: RunOptions,
): Promise<PreparedQuery> {
  const deadline = new Deadline(input.timeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS);
  // Observed at once: an early refusal below must not leave it unhandled. Awaited further down.
  opts.admitted?.catch(() => {});
  if (input.sql.length > svc.config.maxSqlLength) {
    throw new InvalidRequestError(`sql is longer than ${svc.config.maxSqlLength} characters`, { field: 'sql' });
  }
  // Before any look-up: a tools-only key learns nothing from raw SQL, not even which names exist.
  if (!opts.tool) assertRawAccess(principal);
  const lookup = getConnectionFor(svc, principal, input.connectionId);
  if (opts.admitted) {
    // A refused request answers 429 (not a 404 its look-up might have found) and does nothing.
    lookup.catch(() => {});
    await opts.admitted;
  }
  const row = await lookup;
  const started = performance.now();
  // Decided on the read engine: its catalog, its compiler, the reader login when there is one.
  const reader = svc.pools.forRead(row);
  const identity = {
    queryId: opts.queryId ?? newId('q'),
    principal,
    connection: row,
    sql: input.sql,
    source: opts.source,
    started,
    tool: opts.tool,
  };
  let verdict: Verdict;
  try {
    verdict = await decideStatement(svc.readGuards.of(reader), input.sql, deadline);
  } catch (err) {
    // The decision itself needed the database (its catalog, its compiler) and did not get it:
    // a failed query like any other, with its one history entry.
    await recordHistory(svc, { ...identity, verdict: { kind: 'write', statementType: 'UNKNOWN' } }, statusOf(err), {
      error: historyErrorOf(err),
    });
    throw err;
  }
  const q: QueryIdentity = { ...identity, verdict };

  if (verdict.kind === 'rejected') {
    const err = new InvalidRequestError(verdict.reason ?? 'Statement rejected', { field: 'sql' });
    await recordHistory(svc, q, 'rejected', { error: err.message });
    throw err;
  }
  if (verdict.kind === 'invalid') {
    // Not valid SQL for the engine: the same 422 the database would give, for every role.
    const err = new QueryFailedError(verdict.reason ?? 'syntax error', verdict.details);
    await recordHistory(svc, q, 'failed', { error: err.message });
    throw err;
  }
  if (verdict.kind === 'write') {
    const reason =
      principal.user.role !== 'admin'
        ? // A person signed in to the web app used no key: their role is what refuses.
          principal.apiKey === null
          ? 'your role (read-only) may run read statements only'
          : 'a read-only key may run read statements only'
        : row.read_only === 1
          ? 'the connection is read-only'
          : opts.readOnly
            ? 'only read statements may run here'
            : null;
    if (reason) {
      const err = new InsufficientPermissionsError({
        // A refusal that is the connection's own (its reads log in as a read-only user) says so.
        reason: verdict.refusal === 'plan_login' && verdict.reason !== undefined ? verdict.reason : reason,
        statementType: verdict.statementType,
        ...(verdict.reason === undefined ? {} : { why: verdict.reason }),
        ...verdict.details,
      });
      await recordHistory(svc, q, 'rejected', { error: `${err.message}: ${reason}` });
      throw err;
    }
  }
  const read = verdict.kind === 'read';
  return { ...q, engine: read ? reader : svc.pools.get(row), readOnly: read, runOptions: runOptionsOf(verdict), deadline };
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
    startedAt: new Date().toISOString(),
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
  const opened = openHistory(svc, q);
  const execution = opened.then(() =>
    q.engine.execute({
      sql: input.sql,
      params: input.params,
      readOnly: q.readOnly,
      ...q.runOptions,
      timeoutMs: input.timeoutMs,
      maxRows: input.maxRows,
      maxBytes: svc.config.maxResultBytes,
      signal: controller.signal,
      deadline: q.deadline,
    }),
  );
  // Listed from the start, the write's `running` entry included: GET /query/running, cancel and
  // the shutdown drain see it while that entry is being written.
  trackRunning(svc, q, controller, execution);

  let history: HistoryHandle;
  try {
    history = await opened;
  } catch (err) {
    unlink();
    throw err;
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

/** With duplicate column names (`SELECT 1 AS a, 2 AS a`) the last one wins; `arrays` keeps all. */
export function toObjects(columns: Column[], rows: unknown[][]): Record<string, unknown>[] {
  return rows.map((r) => {
    const obj: Record<string, unknown> = {};
    for (let i = 0; i < columns.length; i++) obj[columns[i].name] = r[i];
    return obj;
  });
}
