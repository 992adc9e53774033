// One MySQL/MariaDB connection's view definitions, as read-policy-mysql.ts judges them, kept
// fresh for the read decision (src/guard/connection-guard.ts owns one per connection). The
// engine only reads the rows (src/engines/mysql/mysql-catalog.ts).
//
// Freshness, as for PostgreSQL (postgres-catalog-cache.ts): no ordinary read is decided with
// view definitions read more than VIEW_CHECK_MS ago; the next decision after that reloads them
// (one load shared by every decision waiting). MySQL has no cheap change marker (no xmin; a
// checksum of the definitions costs the server what reading them costs, and CRC32 collisions
// are made to order), so the check is the reload itself; judgements are kept per definition
// text, so an unchanged view is not parsed again. A plan-only EXPLAIN of a write, which runs
// outside the read-only transaction, waits for a load that started after it was asked. DDL run
// through dbq drops the cache (invalidate()).
import type { MysqlViews } from '../engines/mysql/mysql-catalog.ts';
import { buildViewCatalog, type DefinitionJudgement, type MysqlViewCatalog } from './read-policy-mysql.ts';

export const VIEW_CHECK_MS = 1_000;

/** A judged view catalog with the default database it was read for. */
export interface LoadedViews {
  catalog: MysqlViewCatalog;
  database: string | null;
}

export class MysqlViewCache {
  private current: { loaded: LoadedViews; startedAt: number } | null = null;
  private loading: { promise: Promise<LoadedViews>; startedAt: number } | null = null;
  /** Judgements by definition text, pruned to the definitions of the latest load. */
  private readonly judged = new Map<string, Promise<DefinitionJudgement>>();

  constructor(private readonly read: () => Promise<MysqlViews>) {}

  /** A catalog whose load started at most `maxAgeMs` ago (0: after this call). */
  get(maxAgeMs: number): Promise<LoadedViews> {
    const since = performance.now() - maxAgeMs;
    if (maxAgeMs > 0 && this.current !== null && this.current.startedAt >= since) return Promise.resolve(this.current.loaded);
    if (maxAgeMs > 0 && this.loading !== null && this.loading.startedAt >= since) return this.loading.promise;
    return this.load();
  }

  invalidate(): void {
    this.current = null;
  }

  private load(): Promise<LoadedViews> {
    const startedAt = performance.now();
    const promise = this.read().then(({ database, views }) => {
      const definitions = new Set(views.map((row) => row.definition));
      for (const definition of this.judged.keys()) if (!definitions.has(definition)) this.judged.delete(definition);
      const loaded = { catalog: buildViewCatalog(views, this.judged), database };
      // Loads may overlap (a plan-only decision starts its own): the newest start wins.
      if (this.current === null || this.current.startedAt < startedAt) this.current = { loaded, startedAt };
      return loaded;
    });
    const entry = { promise, startedAt };
    this.loading = entry;
    const settle = () => {
      if (this.loading === entry) this.loading = null;
    };
    promise.then(settle, settle);
    return promise;
  }
}
