// The catalog change check once went stale without bound. It compared row counts
// and the newest xmin; a transaction that took its id before the cache was loaded and commits
// a CREATE OR REPLACE … VOLATILE late changes neither (a younger transaction had already
// committed a newer xmin), so the cached catalog kept calling the function safe. Here, on a
// database of the test's own: that late commit, the same from inside a subtransaction, and a
// pure DELETE (DROP FUNCTION) are each seen within one check interval; the old fingerprint,
// run beside, is shown unchanged by the first two (the positive control).
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createEngine } from '../src/engines/index.ts';
import type { Engine } from '../src/engines/engine.ts';
import {
  checkFingerprint,
  readFingerprint,
  type CatalogReference,
  type CatalogStateQuery,
} from '../src/engines/postgres/postgres-catalog-freshness.ts';
import { ConnectionGuard } from '../src/guard/connection-guard.ts';
import { CHECK_MS, CatalogCache } from '../src/guard/postgres-catalog-cache.ts';
import { decideStatement } from '../src/guard/decide.ts';
import { freshPostgresDatabase } from './support/databases.ts';
import { postgresConfig } from './support/engines.ts';
import { LEGACY_FINGERPRINT } from './support/legacy-catalog-fingerprint.ts';

const AFTER_CHECK_MS = CHECK_MS + 150;
/** The cache times its checks with performance.now(), which a fake clock (running on in real
 * time from there) moves past the check interval instead of the test sleeping through it. */
const pastCheckInterval = () => vi.advanceTimersByTime(AFTER_CHECK_MS);

let db: { url: string; drop(): Promise<void> };
let admin: pg.Client;
const open: pg.Client[] = [];

async function client(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  open.push(c);
  return c;
}

const legacy = async () => String((await admin.query(LEGACY_FINGERPRINT)).rows[0].fingerprint);

/** A session as the engine opens it: read-only, empty search_path, JIT off. */
const session = async <T>(work: (query: CatalogStateQuery) => Promise<T>): Promise<T> => {
  const c = await client();
  try {
    await c.query("BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ; SET LOCAL search_path = ''; SET LOCAL jit = off");
    return await work((text, values) => c.query(text, values));
  } finally {
    await c.end();
    open.splice(open.indexOf(c), 1);
  }
};

/** A cache whose "catalog" is the volatility of public's functions: what the freshness
 * machinery must keep current, without the read policy in between. */
function volatilityCache(): { cache: CatalogCache<Volatility, CatalogReference>; loads: () => number } {
  let loads = 0;
  const cache = new CatalogCache<Volatility, CatalogReference>({
    load: () =>
      session(async (query) => {
        loads++;
        const stamp = await readFingerprint(query);
        const rows = await query(
          "SELECT p.proname, p.provolatile FROM pg_catalog.pg_proc p WHERE p.pronamespace = 'public'::pg_catalog.regnamespace",
        );
        return { catalog: new Map(rows.rows.map((r) => [String(r.proname), String(r.provolatile)])), stamp };
      }),
    check: (stamp) => session((query) => checkFingerprint(query, stamp)),
  });
  return { cache, loads: () => loads };
}

type Volatility = Map<string, string>;
const volatilityOf = (catalog: Volatility, name: string) => catalog.get(name);
const stable = (name: string) => `CREATE FUNCTION public.${name}() RETURNS int LANGUAGE sql STABLE AS 'SELECT 1'`;
const volatileReplacement = (name: string) => `CREATE OR REPLACE FUNCTION public.${name}() RETURNS int LANGUAGE sql VOLATILE AS 'SELECT 1'`;

beforeAll(async () => {
  db = await freshPostgresDatabase();
  admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
});

afterAll(async () => {
  for (const c of open) await c.end().catch(() => {});
  await admin?.end();
  await db?.drop();
});

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['performance'], shouldAdvanceTime: true });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('catalog change check: every committed change, whatever the commit order', () => {
  it('sees a CREATE OR REPLACE … VOLATILE committed late by a transaction older than the load (the old fingerprint does not)', async () => {
    await admin.query(stable('late_f'));
    const t1 = await client();
    await t1.query('BEGIN');
    const t1xid = String((await t1.query('SELECT pg_current_xact_id()::text AS x')).rows[0].x);

    const { cache, loads } = volatilityCache();
    expect(volatilityOf(await cache.get(), 'late_f')).toBe('s');
    // T2, younger than T1, commits: its xmin becomes the newest.
    await admin.query(stable('late_other'));
    pastCheckInterval();
    expect(volatilityOf(await cache.get(), 'late_other')).toBe('s');
    expect(loads()).toBe(2);

    const legacyBefore = await legacy();
    const reference = await session((q) => readFingerprint(q));
    await t1.query(volatileReplacement('late_f'));
    const newRow = (await t1.query("SELECT xmin::text AS x FROM pg_proc WHERE proname = 'late_f'")).rows[0].x;
    expect(newRow).toBe(t1xid);
    await t1.query('COMMIT');

    // Positive control: counts unchanged (an UPDATE), newest xmin still T2's.
    expect(await legacy()).toBe(legacyBefore);
    expect(await session((q) => checkFingerprint(q, reference))).toBeNull();

    pastCheckInterval();
    expect(volatilityOf(await cache.get(), 'late_f')).toBe('v');
  });

  it('sees a change made in a subtransaction that was open when the cache loaded (pg_visible_in_snapshot calls it visible)', async () => {
    await admin.query(stable('sub_f'));
    const t1 = await client();
    await t1.query('BEGIN');
    await t1.query('SELECT pg_current_xact_id()');
    await t1.query('SAVEPOINT s');
    await t1.query(volatileReplacement('sub_f'));
    const subxid = String((await t1.query("SELECT xmin::text AS x FROM pg_proc WHERE proname = 'sub_f'")).rows[0].x);
    // A younger transaction commits, so the subtransaction's id lies below the snapshot's xmax.
    await admin.query(stable('sub_other'));

    const { cache } = volatilityCache();
    expect(volatilityOf(await cache.get(), 'sub_f')).toBe('s');
    // Why a snapshot comparison alone would miss it: the snapshot's in-progress list holds
    // top-level ids only, and the subtransaction's id passes as committed before it.
    const snapshot = await admin.query(
      'SELECT pg_current_snapshot()::text AS s, pg_visible_in_snapshot($1::xid8, pg_current_snapshot()) AS visible',
      [subxid],
    );
    expect(snapshot.rows[0].visible).toBe(true);

    const legacyBefore = await legacy();
    await t1.query('RELEASE SAVEPOINT s');
    await t1.query('COMMIT');
    expect(await legacy()).toBe(legacyBefore);

    pastCheckInterval();
    expect(volatilityOf(await cache.get(), 'sub_f')).toBe('v');
  });

  it('sees a pure DELETE (DROP FUNCTION: rows go, none come)', async () => {
    await admin.query(stable('gone_f'));
    const { cache, loads } = volatilityCache();
    expect(volatilityOf(await cache.get(), 'gone_f')).toBe('s');
    await admin.query('DROP FUNCTION public.gone_f()');
    pastCheckInterval();
    expect(volatilityOf(await cache.get(), 'gone_f')).toBeUndefined();
    expect(loads()).toBe(2);
  });

  it('does not reload while nothing changes, a long transaction holding the snapshot xmin back included', async () => {
    const hold = await client();
    await hold.query('BEGIN');
    await hold.query('SELECT pg_current_xact_id()');
    // A row inside the window [xmin, xmax] of every snapshot while `hold` is open.
    await admin.query(stable('window_f'));
    const { cache, loads } = volatilityCache();
    const first = await cache.get();
    for (let i = 0; i < 3; i++) {
      pastCheckInterval();
      expect(await cache.get()).toBe(first);
    }
    expect(loads()).toBe(1);
    await hold.query('COMMIT');
  });

  it('through the engine: a read of a function replaced late is refused one check later', async () => {
    const engine: Engine = createEngine(postgresConfig({ database: new URL(db.url).pathname.slice(1), maxConnections: 2 }));
    const guard = new ConnectionGuard(engine);
    try {
      await admin.query('CREATE TABLE public.engine_probe (n int)');
      await admin.query(stable('engine_f'));
      const t1 = await client();
      await t1.query('BEGIN');
      await t1.query('SELECT pg_current_xact_id()');
      expect((await decideStatement(guard, 'SELECT public.engine_f()')).kind).toBe('read');
      await admin.query(stable('engine_other'));
      pastCheckInterval();
      expect((await decideStatement(guard, 'SELECT public.engine_other()')).kind).toBe('read');
      // A body the policy cannot call harmless, whatever its label.
      await t1.query(
        "CREATE OR REPLACE FUNCTION public.engine_f() RETURNS int LANGUAGE sql VOLATILE AS 'INSERT INTO public.engine_probe VALUES (1) RETURNING 1'",
      );
      await t1.query('COMMIT');
      pastCheckInterval();
      const verdict = await decideStatement(guard, 'SELECT public.engine_f()');
      expect(verdict.kind).not.toBe('read');
      expect(verdict.reason).toContain('engine_f');
    } finally {
      await engine.close();
    }
  });
});
