// A query's one history entry, whatever became of it: built from what the query is
// (QueryIdentity), written after a read ran (in the next group commit), or for a write
// `running` before its statement is sent and completed after (openHistory).
import { performance } from 'node:perf_hooks';
import type { StopController } from '../engines/stop.ts';
import {
  DatabaseBusyError,
  DbqError,
  InsufficientPermissionsError,
  InternalError,
  QueryCanceledError,
  QueryFailedError,
  QueryTimeoutError,
  StoreUnavailableError,
} from '../errors.ts';
import type { HistoryOutcome, HistorySource, HistoryStatus, NewHistoryEntry } from '../history/history.ts';
import type { Services } from '../services.ts';
import type { Verdict } from '../guard/verdict.ts';
import type { ConnectionRow } from '../store/schema.ts';
import type { Principal } from '../workspaces/api-keys.ts';

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

/** A read's handle: nothing to write before the statement, so no wait for it either. */
export function readHistory(svc: Services, q: QueryIdentity): HistoryHandle {
  return {
    finish: (status, extra) => recordHistory(svc, q, status, extra).then(noValue),
  };
}

function noValue(): void {}

/** A read's entry is written once, after it ran, in the next group commit. A write's is recorded
 * `running` before its statement is sent — durably, so nothing afterwards (the store failing,
 * the process killed) can leave a write that ran without a trace — and completed after. If the
 * store fails either time, the error says whether the statement ran. */
export async function openHistory(svc: Services, q: QueryIdentity): Promise<HistoryHandle> {
  if (q.verdict.kind !== 'write') return readHistory(svc, q);
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
