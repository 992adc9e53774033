// A cheap "has anything that authentication depends on changed?" signal for the SQLite store,
// so the hot path can cache key and connection look-ups without ever serving a stale answer:
//  - PRAGMA data_version changes when ANOTHER connection (the CLI, a second process) commits;
//  - our own writes to any table but query_history are counted by a Kysely plugin.
// The epoch is the pair; a cached value is used only while the epoch is unchanged. The
// PostgreSQL store counts its own writes the same way and learns of other processes' writes
// through LISTEN/NOTIFY (pg-changes.ts).
import type Database from 'better-sqlite3';
import type {
  KyselyPlugin,
  OperationNode,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely';

// The audit log too: no look-up reads it, and a sign-in's entry must not empty every cache.
// Nor do the async queries' and running statements' rows (migration 0011_async_queries),
// written by every async query and by a heartbeat while long statements run.
const UNTRACKED = new Set(['query_history', 'audit_log', 'async_queries', 'async_query_parts', 'running_queries']);

function tableOf(node: OperationNode | undefined): string | null {
  if (!node) return null;
  const n = node as { kind: string; table?: { identifier?: { name?: string } }; node?: OperationNode; froms?: OperationNode[] };
  if (n.kind === 'TableNode') return n.table?.identifier?.name ?? null;
  if (n.kind === 'AliasNode') return tableOf(n.node);
  if (n.kind === 'FromNode') return tableOf(n.froms?.[0]);
  return null;
}

function writtenTable(node: RootOperationNode): string | null | undefined {
  const n = node as { kind: string; into?: OperationNode; table?: OperationNode; from?: OperationNode };
  if (n.kind === 'InsertQueryNode') return tableOf(n.into);
  if (n.kind === 'UpdateQueryNode') return tableOf(n.table);
  if (n.kind === 'DeleteQueryNode') return tableOf(n.from);
  return undefined; // not a write
}

/** Counts this process's writes to every table but the history, as a Kysely plugin. Counted
 * before the statement runs and again once it has: a look-up that ran concurrently with the
 * write (possible on PostgreSQL, where queries interleave) is never cached under the epoch
 * that follows the write. */
export class OwnWrites implements KyselyPlugin {
  count = 0;
  private readonly pending = new WeakSet<object>();

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    const table = writtenTable(args.node);
    if (table !== undefined && !(table && UNTRACKED.has(table))) {
      this.count++;
      this.pending.add(args.queryId);
    }
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    if (this.pending.has(args.queryId)) {
      this.pending.delete(args.queryId);
      this.count++;
    }
    return args.result;
  }
}

export class ChangeEpoch implements KyselyPlugin {
  private readonly own = new OwnWrites();
  // Prepared once: handle.pragma() would prepare the statement again on every request.
  private readonly dataVersion: Database.Statement;

  constructor(handle: Database.Database) {
    this.dataVersion = handle.prepare('PRAGMA data_version').pluck();
  }

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return this.own.transformQuery(args);
  }

  transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return this.own.transformResult(args);
  }

  /** Bumped by schema changes and raw SQL too, which the plugin may not see. */
  bump(): void {
    this.own.count++;
  }

  // The data_version read is cached for the rest of the current event-loop turn: a request
  // asks twice (key, then connection) within microseconds, and a commit by another process
  // in between would be seen one turn later at most — never by a later request.
  private cachedVersion: number | null = null;

  current(): string {
    if (this.cachedVersion === null) {
      this.cachedVersion = this.dataVersion.get() as number;
      setImmediate(() => {
        this.cachedVersion = null;
      });
    }
    return `${this.cachedVersion}:${this.own.count}`;
  }
}
