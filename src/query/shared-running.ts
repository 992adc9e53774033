// Statements in flight as every process of a deployment sees them, through the store all of
// them share (SQLite's file on one machine, or the PostgreSQL store). Each process keeps its
// own registry (running.ts) and lets the others see part of it in `running_queries`:
//  - async queries from their start (async-queries.ts inserts the row with the query's own);
//  - any other statement once it has run PUBLISH_AFTER_MS, found by a timer, so the
//    synchronous `POST /query` path writes nothing more to the store, and a statement too short
//    for anyone to cancel from elsewhere costs nothing at all;
//  - while it has published rows, the owner polls them every TICK_MS for a cancel request
//    another process set (`cancel_requested`), refreshes their heartbeat every HEARTBEAT_MS
//    (a row whose heartbeat is STALE_MS old belongs to a process that died), and records the
//    outcome when a statement ends (kept KEEP_ENDED_MS, for a cancel waiting on it).
// Polling rather than the store's change notification: SQLite has none (its data_version
// only says that *something* was committed), the PostgreSQL store's NOTIFY feeds the look-up
// caches, and a cancel that waits a quarter of a second matters little for a statement that
// has already run a second. See docs/decisions.md.
import type { Kysely } from 'kysely';
import type { Logger } from '../logger.ts';
import { newId } from '../ids.ts';
import { statusOf } from './history-entry.ts';
import { runningSince, type RunningQueries, type RunningQuery } from './running.ts';

/** A statement runs this long before the other processes see it. */
export const PUBLISH_AFTER_MS = 1_000;
const TICK_MS = 250;
const HEARTBEAT_MS = 2_000;
/** A running row (async or not) whose heartbeat is older than this: its process is gone. */
export const STALE_MS = 10_000;
const KEEP_ENDED_MS = 60_000;
const SWEEP_MS = 30_000;
/** Rows per INSERT: under SQLite's bound on parameters however many statements run. */
const INSERT_CHUNK = 500;

export interface RunningRow {
  query_id: string;
  instance_id: string;
  workspace_id: string;
  user_id: string;
  connection_id: string;
  connection_name: string;
  sql: string;
  source: string;
  started_at: string;
  heartbeat_at: number;
  cancel_requested: number;
  outcome: string | null;
  ended_at: number | null;
}

export interface AsyncRow {
  query_id: string;
  workspace_id: string;
  user_id: string;
  connection_id: string;
  instance_id: string;
  status: string;
  submitted_at: string;
  finished_at: string | null;
  heartbeat_at: number;
  expires_at: number | null;
  result_json: string | null;
  error_json: string | null;
  bytes: number;
  parts: number;
}

export interface AsyncPartRow {
  query_id: string;
  n: number;
  body: string;
}

/** The tables of migration 0011_async_queries, apart from the store's own Database type. */
export type SharedDb = Kysely<{ async_queries: AsyncRow; async_query_parts: AsyncPartRow; running_queries: RunningRow }>;

export function sharedDb(db: Kysely<any>): SharedDb {
  return db as SharedDb;
}

export function runningRowOf(q: Omit<RunningQuery, 'controller' | 'done'>, instanceId: string, now: number): RunningRow {
  return {
    query_id: q.queryId,
    instance_id: instanceId,
    workspace_id: q.workspaceId,
    user_id: q.userId,
    connection_id: q.connectionId,
    connection_name: q.connectionName,
    sql: q.sql,
    source: q.source,
    started_at: runningSince(q),
    heartbeat_at: now,
    cancel_requested: 0,
    outcome: null,
    ended_at: null,
  };
}

export class SharedRunning {
  /** This process, as the owner of its rows. */
  readonly instanceId = newId('proc');
  /** Published ids → the outcome once the statement ended (written at the next tick). */
  private readonly published = new Map<string, string | null>();
  private readonly heartbeats = new Set<(now: number) => Promise<void>>();
  private readonly timer: NodeJS.Timeout;
  private ticking: Promise<void> | null = null;
  private lastHeartbeat = 0;
  private lastSweep = 0;
  private closed = false;
  private failing = false;

  constructor(
    private readonly db: SharedDb,
    private readonly running: RunningQueries,
    private readonly logger?: Logger,
  ) {
    this.timer = setInterval(() => void this.tick(), TICK_MS).unref();
  }

  /** A row this process inserted itself (an async query's): heartbeat, cancel and outcome
   * from now on, as for the rows the timer publishes. */
  adopt(queryId: string, done: Promise<unknown>): void {
    this.published.set(queryId, null);
    done.then(
      () => this.ended(queryId, 'succeeded'),
      (err: unknown) => this.ended(queryId, statusOf(err)),
    );
  }

  /** Called with every heartbeat while this process has published rows (async-queries.ts
   * keeps its own rows alive with it). */
  onHeartbeat(beat: (now: number) => Promise<void>): void {
    this.heartbeats.add(beat);
  }

  /** Running statements of a workspace in the other processes that are alive. */
  async listOthers(workspaceId: string): Promise<RunningRow[]> {
    return this.db
      .selectFrom('running_queries')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('outcome', 'is', null)
      .where('instance_id', '<>', this.instanceId)
      .where('heartbeat_at', '>', Date.now() - STALE_MS)
      .orderBy('started_at')
      .execute();
  }

  /** Another process's row for this id, running or recently ended; undefined if none, or if
   * its process is gone. */
  async findOther(queryId: string): Promise<RunningRow | undefined> {
    const row = await this.db.selectFrom('running_queries').selectAll().where('query_id', '=', queryId).executeTakeFirst();
    if (!row || row.instance_id === this.instanceId) return undefined;
    if (row.outcome === null && row.heartbeat_at <= Date.now() - STALE_MS) return undefined;
    return row;
  }

  /** Asks the owner to stop the statement; it sees the request within TICK_MS. */
  async requestCancel(queryId: string): Promise<void> {
    await this.db
      .updateTable('running_queries')
      .set({ cancel_requested: 1 })
      .where('query_id', '=', queryId)
      .where('outcome', 'is', null)
      .execute();
  }

  /** Stops the timer and writes the outcomes of the statements that ended meanwhile. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.ticking;
    await this.writeOutcomes(Date.now()).catch((err: unknown) => this.logger?.warn({ err }, 'shared running list: final write failed'));
  }

  private ended(queryId: string, outcome: string): void {
    if (this.published.has(queryId)) this.published.set(queryId, outcome);
  }

  private tick(): Promise<void> | void {
    if (this.ticking || this.closed) return;
    if (this.running.size === 0 && this.published.size === 0 && Date.now() - this.lastSweep < SWEEP_MS) return;
    this.ticking = this.work()
      .then(
        () => {
          if (!this.failing) return;
          this.failing = false;
          this.logger?.info({}, 'shared running list: store updates work again');
        },
        (err: unknown) => {
          // Once per outage, not every TICK_MS; it is retried at the next tick.
          if (this.failing) return;
          this.failing = true;
          this.logger?.warn({ err }, 'shared running list: store update failed; other processes may not see or cancel statements here');
        },
      )
      .finally(() => (this.ticking = null));
    return this.ticking;
  }

  private async work(): Promise<void> {
    const now = Date.now();
    const fresh: RunningRow[] = [];
    const adopted: RunningQuery[] = [];
    for (const q of this.running.values()) {
      if (now - q.startedAt < PUBLISH_AFTER_MS || this.published.has(q.queryId)) continue;
      fresh.push(runningRowOf(q, this.instanceId, now));
      adopted.push(q);
    }
    for (let i = 0; i < fresh.length; i += INSERT_CHUNK) {
      await this.db
        .insertInto('running_queries')
        .values(fresh.slice(i, i + INSERT_CHUNK))
        .onConflict((oc) => oc.column('query_id').doNothing())
        .execute();
    }
    // Adopted once inserted: an outcome is never written before its row exists.
    for (const q of adopted) this.adopt(q.queryId, q.done);
    await this.writeOutcomes(now);
    if (this.published.size > 0) {
      const asked = await this.db
        .selectFrom('running_queries')
        .select('query_id')
        .where('instance_id', '=', this.instanceId)
        .where('outcome', 'is', null)
        .where('cancel_requested', '=', 1)
        .execute();
      for (const { query_id } of asked) {
        try {
          // The statement's own controller: it ends as a cancel from this process would.
          this.running.get(query_id)?.controller.abort();
        } catch (err) {
          this.logger?.warn({ err, queryId: query_id }, 'cancel from another process failed');
        }
      }
      if (now - this.lastHeartbeat >= HEARTBEAT_MS) {
        this.lastHeartbeat = now;
        await this.db
          .updateTable('running_queries')
          .set({ heartbeat_at: now })
          .where('instance_id', '=', this.instanceId)
          .where('outcome', 'is', null)
          .execute();
        for (const beat of this.heartbeats) await beat(now);
      }
    }
    if (now - this.lastSweep >= SWEEP_MS) {
      this.lastSweep = now;
      // Ended rows nobody waits for any more, and rows of processes that died.
      await this.db
        .deleteFrom('running_queries')
        .where((eb) =>
          eb.or([
            eb('ended_at', '<', now - KEEP_ENDED_MS),
            eb.and([eb('outcome', 'is', null), eb('heartbeat_at', '<', now - KEEP_ENDED_MS)]),
          ]),
        )
        .execute();
    }
  }

  private async writeOutcomes(now: number): Promise<void> {
    const byOutcome = new Map<string, string[]>();
    for (const [id, outcome] of this.published) {
      if (outcome === null) continue;
      const ids = byOutcome.get(outcome) ?? [];
      ids.push(id);
      byOutcome.set(outcome, ids);
    }
    for (const [outcome, ids] of byOutcome) {
      for (let i = 0; i < ids.length; i += INSERT_CHUNK) {
        const chunk = ids.slice(i, i + INSERT_CHUNK);
        await this.db
          .updateTable('running_queries')
          .set({ outcome, ended_at: now })
          .where('query_id', 'in', chunk)
          .where('instance_id', '=', this.instanceId)
          .execute();
        for (const id of chunk) this.published.delete(id);
      }
    }
  }
}
