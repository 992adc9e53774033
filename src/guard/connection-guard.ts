// What the read decision (decide.ts) keeps about one connection, for as long as its engine lives
// (the pool registry gives an edited record, or the reader login, an engine of its own): the
// PostgreSQL catalog judged for the read allowlist, the MySQL/MariaDB view definitions, and the
// read login's privilege level for a plan-only EXPLAIN of a write. The engine only reads rows
// (src/engines/engine.ts); caching and judging them is the guard's, here.
import type { Engine, ReadAccessLevel } from '../engines/engine.ts';
import type { CatalogReference } from '../engines/postgres/postgres-catalog-freshness.ts';
import { buildCatalogOffThread } from './catalog-off-thread.ts';
import { MysqlViewCache } from './mysql-view-cache.ts';
import { CatalogCache } from './postgres-catalog-cache.ts';
import type { PostgresCatalog } from './read-policy.ts';

/** How long the read login's privilege level is trusted before it is audited again. */
const PLAN_LOGIN_TTL_MS = 60_000;

export class ConnectionGuard {
  /** PostgreSQL: the connection's catalog, judged on the guard's worker thread. */
  readonly catalog: CatalogCache<PostgresCatalog, CatalogReference>;
  /** MySQL/MariaDB: the views the login can see. */
  readonly views: MysqlViewCache;
  /** MySQL/MariaDB: the read login's privilege level (planLoginLevel). */
  private planLogin: { level: Promise<ReadAccessLevel | null>; at: number } | null = null;

  constructor(readonly engine: Engine) {
    this.catalog = new CatalogCache({
      load: async () => {
        const { text, stamp } = await engine.readCatalogRows!();
        // Judging parses every view, policy and user function body: tens of milliseconds on a
        // large database, done on the guard's worker thread rather than the event loop.
        return { catalog: await buildCatalogOffThread(text), stamp };
      },
      check: (stamp) => engine.checkCatalogStamp!(stamp),
    });
    this.views = new MysqlViewCache(() => engine.readViews!());
  }

  /** DDL ran on the connection: the next decision reads the catalog and the views again. */
  invalidate(): void {
    this.catalog.invalidate();
    this.views.invalidate();
  }

  /** The read login's privilege level (SHOW GRANTS on a side connection), kept
   * PLAN_LOGIN_TTL_MS. Null when the audit fails: the engine's own refusal (1142) then answers
   * at run time. */
  planLoginLevel(): Promise<ReadAccessLevel | null> {
    const cached = this.planLogin;
    if (cached !== null && performance.now() - cached.at < PLAN_LOGIN_TTL_MS) return cached.level;
    const level = this.engine.readAccess!().then(
      (access) => access.level,
      () => null,
    );
    this.planLogin = { level, at: performance.now() };
    return level;
  }
}

/** One ConnectionGuard per engine (Services.readGuards). Keyed weakly: an engine the pool
 * registry has replaced takes its guard with it. */
export class ReadGuards {
  private readonly guards = new WeakMap<Engine, ConnectionGuard>();

  of(engine: Engine): ConnectionGuard {
    let guard = this.guards.get(engine);
    if (guard === undefined) {
      guard = new ConnectionGuard(engine);
      this.guards.set(engine, guard);
    }
    return guard;
  }
}
