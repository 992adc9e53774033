// `POST /query` with `"async": true`: the statement is prepared (connection, guard, permission:
// refusals are ordinary 400/403/404 answers) and then runs in the background through the same
// executePrepared as a synchronous query (same timeout, cancel, encoding, one history entry).
// The outcome is kept here, in this process, for DBQ_RESULT_TTL seconds after it finished.
//
// Results are stored as their serialised JSON (exactly what GET sends, and exactly the memory
// it takes) within a byte budget: past it, or past MAX_FINISHED entries, the oldest finished
// results are dropped early and answer 404 like expired ones. With several dbq processes a
// GET must reach the process that ran the query (sticky routing): see docs/queries.md.
import { keyAllowsConnection } from '../access/scope.ts';
import { DbqError, QueryNotFoundError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { Services } from '../services.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { StopController } from '../engines/stop.ts';
import { executePrepared, prepareQuery, statusOf, type QueryInput } from './run.ts';
import { runningSince } from './running.ts';

export type AsyncStatus = 'running' | 'succeeded' | 'failed' | 'canceled' | 'timed_out';

/** Every finished result together stays under this (each one is already capped by
 * DBQ_MAX_RESULT_BYTES); with the default cap, at least 8 whole results fit. */
export const DEFAULT_BUDGET_BYTES = 256 * 1024 * 1024;
const MAX_FINISHED = 10_000;
/** How long cancel waits for the statement to end before answering with the status it has. */
const CANCEL_WAIT_MS = 5_000;

export interface AsyncError {
  message: string;
  code: string;
  details?: Record<string, unknown>;
}

interface Entry {
  queryId: string;
  workspaceId: string;
  userId: string;
  connectionId: string;
  status: AsyncStatus;
  submittedAt: string;
  finishedAt: string | null;
  expiresAt: number;
  /** JSON text of the /query result (succeeded only). */
  resultJson: string | null;
  error: AsyncError | null;
  bytes: number;
  controller: StopController;
  done: Promise<void>;
}

export interface AsyncQueryOptions {
  ttlSeconds: number;
  budgetBytes?: number;
  maxFinished?: number;
  logger?: Logger;
}

export class AsyncQueries {
  private readonly entries = new Map<string, Entry>();
  private readonly ttlMs: number;
  private readonly budgetBytes: number;
  private readonly maxFinished: number;
  private readonly logger: Logger | undefined;
  private storedBytes = 0;
  private readonly sweeper: NodeJS.Timeout;

  constructor(opts: AsyncQueryOptions) {
    this.ttlMs = opts.ttlSeconds * 1000;
    this.budgetBytes = opts.budgetBytes ?? DEFAULT_BUDGET_BYTES;
    this.maxFinished = opts.maxFinished ?? MAX_FINISHED;
    this.logger = opts.logger;
    this.sweeper = setInterval(() => this.sweep(), Math.min(this.ttlMs, 60_000)).unref();
  }

  /** Prepares now (refusals throw), runs in the background; answers `{queryId, status}`. */
  async start(svc: Services, principal: Principal, input: QueryInput): Promise<{ queryId: string; status: AsyncStatus }> {
    const q = await prepareQuery(svc, principal, input, { source: 'api' });
    const entry: Entry = {
      queryId: q.queryId,
      workspaceId: principal.workspace.id,
      userId: principal.user.id,
      connectionId: q.connection.id,
      status: 'running',
      submittedAt: new Date().toISOString(),
      finishedAt: null,
      expiresAt: Infinity,
      resultJson: null,
      error: null,
      bytes: 0,
      controller: new StopController(),
      done: Promise.resolve(),
    };
    this.entries.set(entry.queryId, entry);
    entry.done = executePrepared(svc, q, input, { controller: entry.controller }).then(
      (result) => {
        const json = JSON.stringify(result);
        this.finish(entry, 'succeeded', json, null);
      },
      (err: unknown) => {
        if (!(err instanceof DbqError)) this.logger?.error({ err, queryId: entry.queryId }, 'async query failed');
        const e = err instanceof DbqError ? err : null;
        const error: AsyncError = e ? { message: e.message, code: e.code } : { message: 'Internal server error', code: 'internal_error' };
        if (e?.details && Object.keys(e.details).length > 0) error.details = e.details;
        this.finish(entry, statusOf(err) as AsyncStatus, null, error);
      },
    );
    return { queryId: entry.queryId, status: 'running' };
  }

  /** The caller's own query, or undefined (someone else's, expired, unknown). */
  find(principal: Principal, queryId: string): Entry | undefined {
    const entry = this.entries.get(queryId);
    if (!entry || entry.workspaceId !== principal.workspace.id || entry.userId !== principal.user.id) return undefined;
    // A key scoped to other connections does not see the user's queries on this one.
    if (!keyAllowsConnection(principal, entry.connectionId)) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.drop(entry);
      return undefined;
    }
    return entry;
  }

  /** `{"success":true,"data":{…}}` as JSON text, the stored result spliced in unparsed. */
  envelopeJson(entry: Entry): string {
    const head = JSON.stringify({
      queryId: entry.queryId,
      status: entry.status,
      connectionId: entry.connectionId,
      submittedAt: entry.submittedAt,
      finishedAt: entry.finishedAt,
      error: entry.error,
    });
    return `{"success":true,"data":${head.slice(0, -1)},"result":${entry.resultJson ?? 'null'}}}`;
  }

  /** Aborts a running query and waits (bounded) for it to end. */
  async cancel(entry: Entry): Promise<void> {
    if (entry.status !== 'running') return;
    entry.controller.abort();
    await waitAtMost(entry.done, CANCEL_WAIT_MS);
  }

  get size(): number {
    return this.entries.size;
  }

  close(): void {
    clearInterval(this.sweeper);
  }

  private finish(entry: Entry, status: AsyncStatus, resultJson: string | null, error: AsyncError | null): void {
    entry.status = status;
    entry.finishedAt = new Date().toISOString();
    entry.expiresAt = Date.now() + this.ttlMs;
    entry.resultJson = resultJson;
    entry.error = error;
    entry.bytes = (resultJson?.length ?? 0) + 256;
    if (!this.entries.has(entry.queryId)) return;
    this.storedBytes += entry.bytes;
    this.evict(entry);
  }

  /** Oldest finished first (Map order is insertion order, i.e. submission order); the result
   * that just arrived stays even if it alone is over the budget. */
  private evict(keep: Entry): void {
    let finished = 0;
    for (const e of this.entries.values()) if (e.status !== 'running') finished++;
    for (const e of this.entries.values()) {
      if (this.storedBytes <= this.budgetBytes && finished <= this.maxFinished) break;
      if (e.status === 'running' || e === keep) continue;
      this.drop(e);
      finished--;
    }
  }

  private drop(entry: Entry): void {
    if (!this.entries.delete(entry.queryId)) return;
    if (entry.status !== 'running') this.storedBytes -= entry.bytes;
  }

  private sweep(): void {
    const now = Date.now();
    for (const e of this.entries.values()) if (e.expiresAt <= now) this.drop(e);
  }
}

/** GET /query/{queryId}: an async query's state, or a running statement of the caller's
 * (a synchronous query or export, listed by GET /query/running). JSON text of the envelope. */
export function describeQuery(svc: Services, principal: Principal, queryId: string): string {
  const entry = svc.asyncQueries.find(principal, queryId);
  if (entry) return svc.asyncQueries.envelopeJson(entry);
  const running = svc.running.findOwned(principal, queryId);
  if (!running) throw new QueryNotFoundError();
  return JSON.stringify({ success: true, data: runningView(running.queryId, running.connectionId, runningSince(running), 'running') });
}

/** POST /query/{queryId}/cancel: aborts the caller's own running statement (cancelled on the
 * database server) and answers with the status it ended with; a finished query is left as is. */
export async function cancelQuery(svc: Services, principal: Principal, queryId: string): Promise<string> {
  const entry = svc.asyncQueries.find(principal, queryId);
  if (entry) {
    await svc.asyncQueries.cancel(entry);
    return svc.asyncQueries.envelopeJson(entry);
  }
  const running = svc.running.findOwned(principal, queryId);
  if (!running) throw new QueryNotFoundError();
  running.controller.abort();
  let status: AsyncStatus = 'running';
  await waitAtMost(
    running.done.then(
      () => void (status = 'succeeded'),
      (err: unknown) => void (status = statusOf(err) as AsyncStatus),
    ),
    CANCEL_WAIT_MS,
  );
  return JSON.stringify({ success: true, data: runningView(running.queryId, running.connectionId, runningSince(running), status) });
}

function runningView(queryId: string, connectionId: string, startedAt: string, status: AsyncStatus) {
  return {
    queryId,
    status,
    connectionId,
    submittedAt: startedAt,
    finishedAt: status === 'running' ? null : new Date().toISOString(),
    error: null,
    result: null,
  };
}

function waitAtMost(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work.then(
      () => {},
      () => {},
    ),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
  ]).finally(() => clearTimeout(timer));
}
