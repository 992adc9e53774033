// Read-only guard v3 (PostgreSQL 15), false refusals: the guard refuses code by what it runs on,
// not by its name. In the very databases test/readonly-v3-planner-attacks.test.ts attacks —
// user types whose `=`, `<>`, `<`, `>`, `<=`, `>=` are evil, evil default operator classes,
// negators, commutators and estimators, user operators of their own names on int, tables with
// evil defaults, generated columns, rules, index / statistics / CHECK / partition-key
// expressions — ordinary reads on built-in types run none of that code, and must stay allowed.
//
// Each read goes through POST /api/query with a read-only key on a superuser connection (no
// reader role), answers 200, and leaves the victim backend, the sequence, the statistics and the
// advisory locks as they were (the snapshot is the planner-attacks test's).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { V3_AFTER_SETUP_SQL, V3_CROSS_TYPE_SQL, V3_FIXTURE_SQL, V3_VICTIM_APP, type PgAttackV3Fixture } from './fixtures/pg-attacks-v3.ts';
import { createHarness, type Harness } from './support/harness.ts';
import { cleanup, connect, destroy, refusedReads } from './support/pg-attack-replay.ts';

const ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const RUN = `${process.pid}_${Math.random().toString(36).slice(2, 7)}`;
const BASE = `dbq_g3t_${RUN}`;

/** Reads on built-in types only, in the 'user' attack database. */
const USER_DB_READS: readonly string[] = [
  'SELECT id FROM v3_items WHERE id = 3',
  "SELECT id, name FROM v3_items WHERE name = 'n3' OR id IN (1, 2) ORDER BY id",
  'SELECT name, count(*) FROM v3_items GROUP BY name',
  'SELECT DISTINCT name FROM v3_items',
  'SELECT a.id FROM v3_items a JOIN v3_big b USING (id)',
  'SELECT id FROM v3_items WHERE NOT (id = 3)',
  'SELECT count(*) FROM v3_big WHERE 3 > id',
  'SELECT id FROM v3_items WHERE id BETWEEN 2 AND 4',
  "SELECT CASE id WHEN 1 THEN 'a' END FROM v3_items",
  'SELECT id FROM v3_items UNION SELECT id FROM v3_big',
  'SELECT id FROM v3_items INTERSECT SELECT id FROM v3_big',
  'SELECT max(ARRAY[id]) FROM v3_items',
  'SELECT GREATEST(id, 3), LEAST(id, 3) FROM v3_items',
  'SELECT id FROM v3_items WHERE id <> ALL (SELECT id FROM v3_big WHERE id > 10)',
  'SELECT id FROM v3_items WHERE id NOT IN (SELECT id FROM v3_big WHERE id > 10)',
  'SELECT NULLIF(id, 3) FROM v3_items',
  'SELECT id FROM v3_items WHERE id IS DISTINCT FROM 3',
  'SELECT row_number() OVER (PARTITION BY name ORDER BY id) FROM v3_items',
  'SELECT count(DISTINCT name) FROM v3_items',
  "SELECT id FROM v3_items WHERE id = ANY ('{1,2,3,4,5,6,7,8,9,10}')",
  'EXPLAIN SELECT count(*) FROM v3_big WHERE id < 100',
  "EXPLAIN INSERT INTO v3_items VALUES (100, 'x')",
  "EXPLAIN UPDATE v3_items SET name = 'y' WHERE id = 1",
  // Plain reads of tables whose defaults, generated columns or rules are evil: a read runs none.
  'SELECT id FROM v3_pw_def',
  'SELECT id, x FROM v3_pw_gen',
  'SELECT id FROM v3_pw_rule',
  'SELECT id, x FROM v3_pw_dd',
];

/** Reads in the 'builtin' attack database (a user implicit cast from int into a user type, user
 * btree and hash operator classes over int used by two indexes of their own) that touch neither:
 * no value is coerced to the user type, no index with those classes is on the tables read. */
const BUILTIN_DB_READS: readonly string[] = [
  'SELECT random()',
  "SELECT name FROM v3_items WHERE name LIKE 'n3%'",
  'SELECT id FROM v3_items ORDER BY id',
  'SELECT count(*) FROM v3_big',
];

/** The built-in = on int is a member of the user hash class there, whose hash function is evil:
 * a hash join or a hashed IN list by = may call it, and the guard cannot tell those apart from
 * a plain comparison; nor, without typing every expression, an int = from a text = (the name is
 * the same). So every = is refused on that connection (conservative). */
const BUILTIN_DB_CONSERVATIVE: readonly string[] = ['SELECT id FROM v3_items WHERE id = 3', "SELECT name FROM v3_items WHERE name = 'n3'"];

/** Reads in the database of V3_CROSS_TYPE_SQL that use no `=` (its user = (int, text) is not
 * reached). */
const CROSS_TYPE_READS: readonly string[] = [
  'SELECT id FROM v3_items WHERE id < 3',
  "SELECT id FROM v3_items WHERE name LIKE 'n%' ORDER BY id",
  'SELECT count(*) FROM v3_big',
];

/** Reads there that resolve to the built-in = but that the guard, which does not type every
 * expression, cannot tell from int = text: a user overload of a built-in name whose arguments
 * are all built-in types is always reachable to it. Refused (conservative; docs/security.md). */
const CROSS_TYPE_CONSERVATIVE: readonly string[] = [
  'SELECT id FROM v3_items WHERE id = 3',
  "SELECT id FROM v3_items WHERE name = 'n3'",
  'SELECT id FROM v3_items WHERE id IN (1, 2)',
  'SELECT a.id FROM v3_items a JOIN v3_big b USING (id)',
  "SELECT CASE name WHEN 'n1' THEN 1 END FROM v3_items",
];

/** … and the one that resolves to the user `=` (int, text). */
const CROSS_TYPE_ATTACK = 'SELECT id FROM v3_items WHERE id = name';

interface Fixture {
  name: string;
  url: string;
  db: pg.Client;
  victim: pg.Client;
}

let admin: pg.Client;
let h: Harness;
const fixtures: Fixture[] = [];

type Kind = PgAttackV3Fixture | 'cross';

async function createFixture(kind: Kind): Promise<Fixture> {
  const name = `${BASE}_${kind}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const url = `postgres://postgres@127.0.0.1:5432/${name}`;
  const db = await connect(url, 'dbq_v3_snapshot');
  const fx: Fixture = { name, url, db, victim: db };
  fixtures.push(fx);
  await db.query(kind === 'cross' ? V3_CROSS_TYPE_SQL : V3_FIXTURE_SQL[kind]);
  await db.query(V3_AFTER_SETUP_SQL);
  fx.victim = await connect(url, V3_VICTIM_APP);
  const created = await h.call('POST', '/api/connections', h.adminKey, { name: `v3t-${kind}`, url, maxConnections: 1 });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return fx;
}

async function snapshot(fx: Fixture): Promise<Record<string, unknown>> {
  const r = await fx.db.query(`SELECT
    (SELECT last_value || ':' || is_called FROM v3_seq) AS sequence,
    EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = '${V3_VICTIM_APP}' AND datname = current_database()) AS victim_alive,
    (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))::int AS advisory_locks,
    (SELECT coalesce(stats_reset::text, '') FROM pg_stat_database WHERE datname = current_database()) AS stats_reset`);
  return r.rows[0];
}

/** Each read: its status when not 200, with the refusal's reason. */
function readAll(kind: Kind, reads: readonly string[]): Promise<string[]> {
  return refusedReads(h, `v3t-${kind}`, reads, (body) => body?.details?.why ?? body?.message ?? JSON.stringify(body));
}

beforeAll(async () => {
  admin = await connect(ADMIN_URL, 'dbq_v3_snapshot');
  h = await createHarness();
}, 60_000);

afterAll(async () => {
  const { attempt, done } = cleanup();
  await attempt('harness', async () => h?.close());
  for (const fx of fixtures) {
    destroy(fx.victim);
    await attempt(`${fx.name} client`, () => fx.db.end());
    await attempt(`database ${fx.name}`, () => admin.query(`DROP DATABASE IF EXISTS ${fx.name} WITH (FORCE)`));
  }
  if (admin) await attempt('admin', () => admin.end());
  done();
}, 60_000);

describe('type-aware operators: reads on built-in types in the planner-attacks databases', () => {
  it(`${USER_DB_READS.length} reads in the database of evil user types and evil table expressions answer 200 and change nothing`, async () => {
    const fx = await createFixture('user');
    const before = await snapshot(fx);
    expect(await readAll('user', USER_DB_READS)).toEqual([]);
    expect(await snapshot(fx)).toEqual(before);
  }, 60_000);

  it(`${BUILTIN_DB_READS.length} reads that coerce nothing into the user type and use no user operator class stay allowed where int has a user cast and user classes`, async () => {
    const fx = await createFixture('builtin');
    const before = await snapshot(fx);
    expect(await readAll('builtin', BUILTIN_DB_READS)).toEqual([]);
    expect((await readAll('builtin', BUILTIN_DB_CONSERVATIVE)).filter((line) => !line.startsWith('403 '))).toEqual([]);
    expect((await readAll('builtin', BUILTIN_DB_CONSERVATIVE)).length).toBe(BUILTIN_DB_CONSERVATIVE.length);
    expect(await snapshot(fx)).toEqual(before);
  }, 60_000);

  it('a user = (int, text) with an evil function refuses int = text and, conservatively, every =, and nothing else', async () => {
    const fx = await createFixture('cross');
    // As the superuser, straight through pg: int = text reaches the evil function.
    const control = await connect(fx.url, 'dbq_v3_control');
    try {
      await control.query('BEGIN READ ONLY');
      await control.query(CROSS_TYPE_ATTACK);
    } finally {
      destroy(control);
    }
    expect((await snapshot(fx)).victim_alive).toBe(false);
    fx.victim = await connect(fx.url, V3_VICTIM_APP);
    const before = await snapshot(fx);
    const attack = await h.call('POST', '/api/query', h.readerKey, { connectionId: 'v3t-cross', sql: CROSS_TYPE_ATTACK, params: [] });
    expect(attack.status, JSON.stringify(attack.body)).toBe(403);
    expect(await readAll('cross', CROSS_TYPE_READS)).toEqual([]);
    const conservative = await readAll('cross', CROSS_TYPE_CONSERVATIVE);
    expect(conservative.filter((line) => !line.startsWith('403 '))).toEqual([]);
    expect(conservative.length).toBe(CROSS_TYPE_CONSERVATIVE.length);
    expect(await snapshot(fx)).toEqual(before);
  }, 60_000);
});
