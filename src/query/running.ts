// Statements in flight in this process: what `GET /query/running` lists, what
// `POST /query/{id}/cancel` and a disconnecting client abort, and what a graceful shutdown
// cancels once its grace period is over.
import { keyAllowsConnection } from '../access/scope.ts';
import type { StopController } from '../engines/stop.ts';
import { ShuttingDownError } from '../errors.ts';
import { LiveMap } from '../live-map.ts';
import type { Principal } from '../workspaces/api-keys.ts';

/** What the history and the client are told about a statement the grace period cut. */
export const SHUTDOWN_CUT_MESSAGE = 'Query was canceled: the server is shutting down';

export interface RunningQuery {
  queryId: string;
  workspaceId: string;
  userId: string;
  connectionId: string;
  connectionName: string;
  sql: string;
  source: string;
  /** Date.now() when it started: formatted (runningSince) only when someone asks, as
   * toISOString cost ~0.8 µs on every request. */
  startedAt: number;
  controller: StopController;
  done: Promise<unknown>;
}

export interface RunningQueryView {
  queryId: string;
  connectionId: string;
  connectionName: string;
  sql: string;
  source: string;
  startedAt: string;
  user: { id: string };
}

/** When a statement in flight started, as an ISO timestamp. */
export function runningSince(q: Pick<RunningQuery, 'startedAt'>): string {
  return new Date(q.startedAt).toISOString();
}

export class RunningQueries {
  // A LiveMap, not a Map: see src/live-map.ts (a Map's churn here promoted every request).
  private readonly byId = new LiveMap<string, RunningQuery>();

  add(q: RunningQuery): void {
    this.byId.set(q.queryId, q);
    // One reaction for either outcome (finally + catch were two promises a request); a failure
    // is the caller's to report, not this listing's.
    const forget = () => {
      this.byId.delete(q.queryId);
    };
    q.done.then(forget, forget);
  }

  get size(): number {
    return this.byId.size;
  }

  /** The statement with this id in this process, whoever's it is (the cross-process cancel:
   * shared-running.ts). */
  get(queryId: string): RunningQuery | undefined {
    return this.byId.get(queryId);
  }

  /** Every statement in flight in this process (shared-running.ts publishes the long ones). */
  values(): IterableIterator<RunningQuery> {
    return this.byId.values();
  }

  /** A query is visible to its own user; admins see the workspace's. */
  find(principal: Principal, queryId: string): RunningQuery | undefined {
    const q = this.byId.get(queryId);
    if (!q || q.workspaceId !== principal.workspace.id) return undefined;
    if (q.userId !== principal.user.id && principal.user.role !== 'admin') return undefined;
    if (!keyAllowsConnection(principal, q.connectionId)) return undefined;
    return q;
  }

  /** Only the query's own user: async queries and their cancel are private to their owner,
   * admins included (anyone else gets 404). */
  findOwned(principal: Principal, queryId: string): RunningQuery | undefined {
    const q = this.byId.get(queryId);
    if (!q || q.workspaceId !== principal.workspace.id || q.userId !== principal.user.id) return undefined;
    if (!keyAllowsConnection(principal, q.connectionId)) return undefined;
    return q;
  }

  list(principal: Principal): RunningQueryView[] {
    return (
      [...this.byId.values()]
        .filter((q) => q.workspaceId === principal.workspace.id && (principal.user.role === 'admin' || q.userId === principal.user.id))
        // A key scoped to some connections sees statements on those only.
        .filter((q) => keyAllowsConnection(principal, q.connectionId))
        .map((q) => ({
          queryId: q.queryId,
          connectionId: q.connectionId,
          connectionName: q.connectionName,
          sql: q.sql,
          source: q.source,
          startedAt: runningSince(q),
          user: { id: q.userId },
        }))
    );
  }

  /** Waits up to graceMs for in-flight statements, then aborts the rest and waits for them. */
  async drain(graceMs: number): Promise<void> {
    const all = () => Promise.allSettled([...this.byId.values()].map((q) => q.done));
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), graceMs);
    });
    const outcome = await Promise.race([all(), graceOver]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      for (const q of this.byId.values()) {
        try {
          q.controller.abort(new ShuttingDownError(SHUTDOWN_CUT_MESSAGE));
        } catch {
          // A failing cancel listener must not keep the other statements running.
        }
      }
      await all();
    }
  }
}
