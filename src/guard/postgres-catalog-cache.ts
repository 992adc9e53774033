// One PostgreSQL connection's judged catalog, kept fresh for the read decision
// (src/guard/connection-guard.ts owns one per connection): no decision uses a catalog that
// misses a change committed more than CHECK_MS before the decision asked. The engine reads the
// rows with a change stamp, and compares a stamp with the catalog as it is now
// (src/engines/postgres/postgres-catalog-freshness.ts says why that sees every committed
// change); this cache decides when to load, when to check and what to keep.
//
// A load or check that fails fails the decisions waiting on it: none falls back to a catalog
// nobody could check. Each decision waits for it only until its own deadline.
import type { Deadline } from '../engines/deadline.ts';

/** A decision never uses a catalog whose last check or load began longer ago than this. */
export const CHECK_MS = 1_000;
const MISS_RELOAD_MS = 1_000;

/** What the cache is given. `load`: the judged catalog with the stamp taken before its rows
 * were read. `check`: null when the catalog may have changed since `stamp`, else the newer
 * stamp to keep. Both are shared by every decision waiting, bounded by their own timeout. */
export interface CatalogSource<C, S> {
  load(): Promise<{ catalog: C; stamp: S }>;
  check(stamp: S): Promise<S | null>;
}

interface Cached<C, S> {
  catalog: C;
  stamp: S;
  /** performance.now() when the load or check that last vouched for it began: every change
   * committed before then is in it. */
  verifiedAt: number;
  loadedAt: number;
}

/** Loaded on first use and kept fresh as described above. Loads and checks are shared by every
 * decision waiting; each decision waits at most until its own deadline, while the shared work
 * keeps its own bound (the catalog session's timeout). */
export class CatalogCache<C, S> {
  private current: Cached<C, S> | null = null;
  private loading: Promise<void> | null = null;
  private checking: Promise<void> | null = null;
  /** Bumped by invalidate(): a load begun before it cannot vouch for what came after. */
  private generation = 0;

  constructor(private readonly source: CatalogSource<C, S>) {}

  /** The catalog to decide with now: verified by a snapshot taken no earlier than CHECK_MS
   * before this call. A failed load or check fails the decision (never a stale catalog). */
  async get(deadline?: Deadline): Promise<C> {
    const asked = performance.now();
    for (;;) {
      const current = this.current;
      if (current !== null && asked - current.verifiedAt <= CHECK_MS) return current.catalog;
      // A shared load or check begun before `asked` may vouch for too old a moment: the loop
      // then starts another, which begins after `asked`.
      const work = current === null ? this.load() : this.check(current);
      await (deadline ? deadline.race(work) : work);
    }
  }

  /** A name was missing: reload now unless that was just done. Returns the catalog to use. */
  async reloadForMiss(deadline?: Deadline): Promise<C | undefined> {
    const current = this.current;
    if (current !== null && performance.now() - current.loadedAt < MISS_RELOAD_MS) return undefined;
    const load = this.load();
    await (deadline ? deadline.race(load) : load);
    return this.get(deadline);
  }

  /** DDL ran through dbq: the next decision loads again. */
  invalidate(): void {
    this.generation++;
    this.current = null;
  }

  private load(): Promise<void> {
    this.loading ??= (async () => {
      const generation = this.generation;
      const began = performance.now();
      try {
        const loaded = await this.source.load();
        // Invalidated meanwhile: keep it (its stamp is older than the DDL, so a check finds the
        // change and costs less than a load), but have the next decision check first.
        const verifiedAt = generation === this.generation ? began : -Infinity;
        this.current = { catalog: loaded.catalog, stamp: loaded.stamp, verifiedAt, loadedAt: began };
      } finally {
        this.loading = null;
      }
    })();
    return this.loading;
  }

  private check(seen: Cached<C, S>): Promise<void> {
    this.checking ??= (async () => {
      const began = performance.now();
      try {
        const next = await this.source.check(seen.stamp);
        if (this.current !== seen) return;
        if (next === null) {
          this.current = null;
          return;
        }
        seen.stamp = next;
        seen.verifiedAt = began;
      } finally {
        this.checking = null;
      }
    })();
    return this.checking;
  }
}
