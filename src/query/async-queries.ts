// `POST /query` with `"async": true`: the statement is prepared (connection, guard, permission:
// refusals are ordinary 400/403/404 answers) and then runs in the background through the same
// executePrepared as a synchronous query (same timeout, cancel, encoding, one history entry).
//
// Its state lives in the store every process shares (`async_queries`, async-store.ts): the
// 202 is sent once the row is committed, the outcome is written when the statement ends and
// kept DBQ_RESULT_TTL seconds, so GET and cancel answer the same on any process. Results are
// stored as their serialised JSON (exactly what GET sends) within a byte budget and a count
// shared by all processes: past either, the oldest finished results are dropped early and
// answer 404 like expired ones. A cancel asked of another process reaches the one running the
// statement through `running_queries` (shared-running.ts).
import type { Kysely } from 'kysely';
import { keyAllowsConnection } from '../access/scope.ts';
import { DbqError, QueryNotFoundError, ShuttingDownError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { Services } from '../services.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { StopController } from '../engines/stop.ts';
import { executePrepared, prepareQuery, statusOf, type QueryInput } from './run.ts';
import { runningSince, SHUTDOWN_CUT_MESSAGE, type RunningQueries, type RunningQueryView } from './running.ts';
import {
  evict,
  heartbeat,
  insertStarted,
  loadView,
  sweep,
  writeFinished,
  type AsyncError,
  type AsyncStatus,
  type AsyncView,
} from './async-store.ts';
import { runningRowOf, sharedDb, SharedRunning, type RunningRow, type SharedDb } from './shared-running.ts';

export type { AsyncError, AsyncStatus, AsyncView } from './async-store.ts';

/** Every finished result together stays under this (each one is already capped by
 * DBQ_MAX_RESULT_BYTES); with the default cap, at least 8 whole results fit. */
export const DEFAULT_BUDGET_BYTES = 256 * 1024 * 1024;
const MAX_FINISHED = 10_000;
/** How long cancel waits for the statement to end before answering with the status it has. */
const CANCEL_WAIT_MS = 5_000;
/** How often a cancel asked of another process looks whether the statement has ended. */
const CANCEL_POLL_MS = 100;
/** What each stored result counts beyond its JSON (its row's other fields). */
const ROW_OVERHEAD_BYTES = 256;

/** An async query this process runs: its controller, and its outcome until the store has it. */
interface Local {
  view: AsyncView;
  controller: StopController;
  done: Promise<void>;
}

export interface AsyncQueryOptions {
  ttlSeconds: number;
  /** The store every process shares (Services.db). */
  db: Kysely<any>;
  /** This process's statements in flight (Services.running). */
  running: RunningQueries;
  /** The cross-process running list; made here when not given. */
  shared?: SharedRunning;
  budgetBytes?: number;
  maxFinished?: number;
  logger?: Logger;
}

export class AsyncQueries {
  readonly shared: SharedRunning;
  private readonly local = new Map<string, Local>();
  private readonly db: SharedDb;
  private readonly ttlMs: number;
  private readonly budgetBytes: number;
  private readonly maxFinished: number;
  private readonly logger: Logger | undefined;
  private readonly ownsShared: boolean;
  private readonly sweeper: NodeJS.Timeout;
  private sweeping = false;

  constructor(opts: AsyncQueryOptions) {
    this.db = sharedDb(opts.db);
    this.ttlMs = opts.ttlSeconds * 1000;
    this.budgetBytes = opts.budgetBytes ?? DEFAULT_BUDGET_BYTES;
    this.maxFinished = opts.maxFinished ?? MAX_FINISHED;
    this.logger = opts.logger;
    this.ownsShared = !opts.shared;
    this.shared = opts.shared ?? new SharedRunning(this.db, opts.running, opts.logger);
    this.shared.onHeartbeat((now) => {
      const ids = [...this.local.values()].filter((l) => l.view.status === 'running').map((l) => l.view.queryId);
      return ids.length ? heartbeat(this.db, ids, now) : Promise.resolve();
    });
    this.sweeper = setInterval(() => void this.sweep(), Math.min(this.ttlMs, 60_000)).unref();
  }

  /** Prepares now (refusals throw), runs in the background; answers `{queryId, status}` once
   * every process can find the query. */
  async start(svc: Services, principal: Principal, input: QueryInput): Promise<{ queryId: string; status: AsyncStatus }> {
    const q = await prepareQuery(svc, principal, input, { source: 'api' });
    const now = Date.now();
    const view: AsyncView = {
      queryId: q.queryId,
      workspaceId: principal.workspace.id,
      userId: principal.user.id,
      connectionId: q.connection.id,
      status: 'running',
      submittedAt: new Date(now).toISOString(),
      finishedAt: null,
      expiresAt: null,
      resultJson: null,
      error: null,
    };
    const controller = new StopController();
    const running: RunningRow = runningRowOf(
      {
        queryId: q.queryId,
        workspaceId: view.workspaceId,
        userId: view.userId,
        connectionId: q.connection.id,
        connectionName: q.connection.name,
        sql: q.sql,
        source: q.source,
        startedAt: now,
      },
      this.shared.instanceId,
      now,
    );
    // The statement starts while its rows are written; its outcome is written after them.
    const inserted = insertStarted(
      this.db,
      {
        query_id: view.queryId,
        workspace_id: view.workspaceId,
        user_id: view.userId,
        connection_id: view.connectionId,
        instance_id: this.shared.instanceId,
        status: 'running',
        submitted_at: view.submittedAt,
        finished_at: null,
        heartbeat_at: now,
        expires_at: null,
        result_json: null,
        error_json: null,
        bytes: 0,
        parts: 0,
      },
      running,
    );
    const entry: Local = { view, controller, done: Promise.resolve() };
    this.local.set(view.queryId, entry);
    const execution = executePrepared(svc, q, input, { controller });
    entry.done = execution
      .then(
        (result) => this.finished(entry, 'succeeded', JSON.stringify(result), null),
        (err: unknown) => {
          if (!(err instanceof DbqError)) this.logger?.error({ err, queryId: view.queryId }, 'async query failed');
          const e = err instanceof DbqError ? err : null;
          const error: AsyncError = e ? { message: e.message, code: e.code } : { message: 'Internal server error', code: 'internal_error' };
          if (e?.details && Object.keys(e.details).length > 0) error.details = e.details;
          this.finished(entry, statusOf(err) as AsyncStatus, null, error);
        },
      )
      .then(() => this.persist(entry, inserted));
    try {
      await inserted;
    } catch (err) {
      // Nobody could ever ask for it: stop it and say why.
      controller.abort();
      this.local.delete(view.queryId);
      throw err;
    }
    this.shared.adopt(view.queryId, execution);
    return { queryId: view.queryId, status: 'running' };
  }

  /** The caller's own async query, or undefined (someone else's, expired, evicted, unknown). */
  async find(principal: Principal, queryId: string): Promise<AsyncView | undefined> {
    const view = await this.load(queryId);
    if (!view || view.workspaceId !== principal.workspace.id || view.userId !== principal.user.id) return undefined;
    // A key scoped to other connections does not see the user's queries on this one.
    if (!keyAllowsConnection(principal, view.connectionId)) return undefined;
    return view;
  }

  /** `{"success":true,"data":{…}}` as JSON text, the stored result spliced in unparsed. */
  envelopeJson(view: AsyncView): string {
    const head = JSON.stringify({
      queryId: view.queryId,
      status: view.status,
      connectionId: view.connectionId,
      submittedAt: view.submittedAt,
      finishedAt: view.finishedAt,
      error: view.error,
    });
    return `{"success":true,"data":${head.slice(0, -1)},"result":${view.resultJson ?? 'null'}}}`;
  }

  /** Stops a running query, here or in the process running it, and waits (bounded) for it to
   * end; answers the state it is in then. */
  async cancel(view: AsyncView): Promise<AsyncView> {
    if (view.status !== 'running') return view;
    const entry = this.local.get(view.queryId);
    if (entry) {
      entry.controller.abort();
      await waitAtMost(entry.done, CANCEL_WAIT_MS);
      return entry.view.status !== 'running' ? entry.view : ((await this.load(view.queryId)) ?? entry.view);
    }
    await this.shared.requestCancel(view.queryId);
    const deadline = Date.now() + CANCEL_WAIT_MS;
    for (;;) {
      await sleep(CANCEL_POLL_MS);
      const now = await this.load(view.queryId);
      if (!now) return view;
      if (now.status !== 'running' || Date.now() >= deadline) return now;
    }
  }

  /** Async queries this process is running or has not written the outcome of yet. */
  get size(): number {
    return this.local.size;
  }

  /** Stops the timers; cuts what still runs (a server's drain has done so already, after its
   * grace period) and waits, bounded, for the outcomes being written. */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    for (const e of this.local.values()) {
      if (e.view.status === 'running') e.controller.abort(new ShuttingDownError(SHUTDOWN_CUT_MESSAGE));
    }
    await waitAtMost(Promise.allSettled([...this.local.values()].map((e) => e.done)), CANCEL_WAIT_MS);
    if (this.ownsShared) await this.shared.close();
  }

  private async load(queryId: string): Promise<AsyncView | undefined> {
    const entry = this.local.get(queryId);
    if (entry) {
      if (entry.view.expiresAt !== null && entry.view.expiresAt <= Date.now()) {
        this.local.delete(queryId);
        return undefined;
      }
      return entry.view;
    }
    return loadView(this.db, queryId, this.ttlMs);
  }

  private finished(entry: Local, status: AsyncStatus, resultJson: string | null, error: AsyncError | null): void {
    const now = Date.now();
    entry.view = { ...entry.view, status, finishedAt: new Date(now).toISOString(), expiresAt: now + this.ttlMs, resultJson, error };
  }

  /** Writes the outcome once the start's rows are in, then keeps the finished results within
   * the budget. Until then this process answers from memory; if the store cannot take it,
   * this process keeps answering from memory until the result expires. */
  private async persist(entry: Local, inserted: Promise<void>): Promise<void> {
    try {
      await inserted;
    } catch {
      return; // start() has answered with the error; nothing was stored
    }
    const view = entry.view;
    try {
      await writeFinished(this.db, view, (view.resultJson?.length ?? 0) + ROW_OVERHEAD_BYTES);
      this.local.delete(view.queryId);
    } catch (err) {
      this.logger?.error({ err, queryId: view.queryId }, 'async query outcome could not be stored; kept in this process only');
      return;
    }
    try {
      await evict(this.db, view.queryId, this.budgetBytes, this.maxFinished);
    } catch (err) {
      this.logger?.warn({ err }, 'async results: eviction failed');
    }
  }

  private async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    const now = Date.now();
    for (const [id, e] of this.local) if (e.view.expiresAt !== null && e.view.expiresAt <= now) this.local.delete(id);
    try {
      await sweep(this.db, now, this.ttlMs);
    } catch (err) {
      this.logger?.warn({ err }, 'async results: sweep failed');
    } finally {
      this.sweeping = false;
    }
  }
}

/** GET /query/{queryId}: an async query's state, or a running statement of the caller's
 * (a synchronous query or export, listed by GET /query/running), in any process. JSON text
 * of the envelope. */
export async function describeQuery(svc: Services, principal: Principal, queryId: string): Promise<string> {
  const view = await svc.asyncQueries.find(principal, queryId);
  if (view) return svc.asyncQueries.envelopeJson(view);
  const running = svc.running.findOwned(principal, queryId);
  if (running) return envelope(runningView(running.queryId, running.connectionId, runningSince(running), 'running'));
  const other = await findOthersOwned(svc, principal, queryId);
  if (!other) throw new QueryNotFoundError();
  return envelope(runningView(other.query_id, other.connection_id, other.started_at, 'running'));
}

/** POST /query/{queryId}/cancel: aborts the caller's own running statement (cancelled on the
 * database server, by whichever process runs it) and answers with the status it ended with; a
 * finished query is left as is. */
export async function cancelQuery(svc: Services, principal: Principal, queryId: string): Promise<string> {
  const view = await svc.asyncQueries.find(principal, queryId);
  if (view) return svc.asyncQueries.envelopeJson(await svc.asyncQueries.cancel(view));
  const running = svc.running.findOwned(principal, queryId);
  if (running) {
    running.controller.abort();
    let status: AsyncStatus = 'running';
    await waitAtMost(
      running.done.then(
        () => void (status = 'succeeded'),
        (err: unknown) => void (status = statusOf(err) as AsyncStatus),
      ),
      CANCEL_WAIT_MS,
    );
    return envelope(runningView(running.queryId, running.connectionId, runningSince(running), status));
  }
  let other = await findOthersOwned(svc, principal, queryId);
  if (!other) throw new QueryNotFoundError();
  await svc.asyncQueries.shared.requestCancel(queryId);
  const deadline = Date.now() + CANCEL_WAIT_MS;
  while (other.outcome === null && Date.now() < deadline) {
    await sleep(CANCEL_POLL_MS);
    // Gone meanwhile: its process died (or swept it), the statement with it.
    other = (await svc.asyncQueries.shared.findOther(queryId)) ?? { ...other, outcome: 'canceled' };
  }
  return envelope(runningView(other.query_id, other.connection_id, other.started_at, (other.outcome ?? 'running') as AsyncStatus));
}

/** GET /query/running: this process's statements, then those the other processes publish
 * (async ones at once, others after a second: shared-running.ts). Readers see their own,
 * admins the workspace's. */
export async function listRunning(svc: Services, principal: Principal): Promise<RunningQueryView[]> {
  const mine = svc.running.list(principal);
  const seen = new Set(mine.map((q) => q.queryId));
  const others = await svc.asyncQueries.shared.listOthers(principal.workspace.id);
  for (const r of others) {
    if (seen.has(r.query_id)) continue;
    if (principal.user.role !== 'admin' && r.user_id !== principal.user.id) continue;
    // A key scoped to some connections sees statements on those only.
    if (!keyAllowsConnection(principal, r.connection_id)) continue;
    seen.add(r.query_id);
    mine.push({
      queryId: r.query_id,
      connectionId: r.connection_id,
      connectionName: r.connection_name,
      sql: r.sql,
      source: r.source,
      startedAt: r.started_at,
      user: { id: r.user_id },
    });
  }
  return mine;
}

/** Another process's statement still running, if it is the caller's own (the rule of
 * findOwned). One that ended is unknown, as in this process; an async query's outcome is its
 * own row's. */
async function findOthersOwned(svc: Services, principal: Principal, queryId: string): Promise<RunningRow | undefined> {
  const row = await svc.asyncQueries.shared.findOther(queryId);
  if (!row || row.outcome !== null) return undefined;
  if (row.workspace_id !== principal.workspace.id || row.user_id !== principal.user.id) return undefined;
  if (!keyAllowsConnection(principal, row.connection_id)) return undefined;
  return row;
}

function envelope(data: unknown): string {
  return JSON.stringify({ success: true, data });
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

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
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
