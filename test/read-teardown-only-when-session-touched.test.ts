// A PostgreSQL read is handed back with a plain ROLLBACK only when the decision proves it
// cannot leave session state that outlives ROLLBACK; otherwise the advisory unlock and the
// reseed follow it, as they follow every read the engine runs without that proof.
// - The guard refuses advisory locks and setseed(); what an allowed read can still touch is the
//   random() sequence (random(), random_normal()), which lets it predict the next request's
//   values on the same pooled backend. Any read that names one, and every read on a database
//   where user code reaches one (a function, view, operator, aggregate…), keeps the reseed.
// - The engine alone (no decision, the database layer switched on by itself) always tears down.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/engines/engine.ts';
import { ConnectionGuard } from '../src/guard/connection-guard.ts';
import { decideStatement, runOptionsOf } from '../src/guard/decide.ts';
import { closeAllEngines, openEngine, postgresConfig, run } from './support/engines.ts';

const suffix = `${process.pid}_${Date.now().toString(36)}`;
const plainDb = `dbq_teardown_plain_${suffix}`;
const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
const created: string[] = [];

async function database(name: string, setup: string): Promise<Engine> {
  await admin.query(`CREATE DATABASE ${name}`);
  created.push(name);
  const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:5432/${name}` });
  await client.connect();
  await client.query(`CREATE TABLE t (id int PRIMARY KEY, x float8); INSERT INTO t VALUES (1, 0.5); ${setup}`);
  await client.end();
  return openEngine(postgresConfig({ database: name, maxConnections: 1 }));
}

beforeAll(async () => {
  await admin.connect();
}, 30_000);

afterAll(async () => {
  await closeAllEngines();
  for (const name of created) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
});

const untouched = async (guard: ConnectionGuard, sql: string) => {
  const verdict = await decideStatement(guard, sql);
  expect(verdict.kind, sql).toBe('read');
  return runOptionsOf(verdict).sessionUntouched === true;
};

describe('the read decision on a database whose user code never reaches random()', () => {
  let guard: ConnectionGuard;
  beforeAll(async () => {
    guard = new ConnectionGuard(
      await database(plainDb, 'CREATE FUNCTION twice(n int) RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT n * 2 $$'),
    );
  }, 30_000);

  it('lets plain reads skip the unlock and reseed', async () => {
    for (const sql of [
      'SELECT 1',
      'SELECT id, x FROM t WHERE id = 1 ORDER BY x',
      'SELECT twice(id) FROM t',
      'SELECT count(*) FROM generate_series(1, 100)',
      'SELECT now(), gen_random_uuid()',
    ]) {
      expect(await untouched(guard, sql), sql).toBe(true);
    }
  });

  it('keeps them for every spelling of a call that reads the random() sequence', async () => {
    for (const sql of [
      'SELECT random()',
      'SELECT pg_catalog.random()',
      'SELECT "random"()',
      'SELECT PG_CATALOG.RANDOM()',
      'SELECT random_normal()',
      'SELECT x FROM t ORDER BY random() LIMIT 1',
      'SELECT (SELECT random())',
      'WITH r AS (SELECT random() AS v) SELECT v FROM r',
    ]) {
      const verdict = await decideStatement(guard, sql);
      if (verdict.kind !== 'read') continue; // random_normal() is PostgreSQL 16+: refused as unknown on 15
      expect(runOptionsOf(verdict).sessionUntouched, sql).toBeUndefined();
    }
  });
});

describe('a database where user code reaches random(): every read keeps the reseed', () => {
  const cases: Array<[string, string]> = [
    ['a SQL function', 'CREATE FUNCTION noise() RETURNS float8 LANGUAGE sql VOLATILE AS $$ SELECT random() $$'],
    [
      'a plpgsql function',
      'CREATE FUNCTION noise() RETURNS float8 LANGUAGE plpgsql VOLATILE AS $$ BEGIN RETURN pg_catalog.random(); END $$',
    ],
    ['a view', 'CREATE VIEW noisy AS SELECT id, random() AS r FROM t'],
    [
      'a default argument',
      'CREATE FUNCTION with_default(v float8 DEFAULT random()) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$ SELECT v $$',
    ],
  ];
  for (const [what, setup] of cases) {
    it(`through ${what}`, async () => {
      const engine = await database(`dbq_teardown_${created.length}_${suffix}`, setup);
      const guard = new ConnectionGuard(engine);
      expect(await untouched(guard, 'SELECT 1')).toBe(false);
      expect(await untouched(guard, 'SELECT id FROM t')).toBe(false);
    }, 30_000);
  }
});

describe("the engine: the hand-back is the decision's to shorten, never its own", () => {
  const held = `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()`;

  it("without the decision's word it unlocks after a read (the database layer alone)", async () => {
    const engine = openEngine(postgresConfig({ maxConnections: 1 }));
    await run(engine, 'SELECT 1', { readOnly: true }); // prepares the named steps
    await run(engine, 'SELECT pg_advisory_lock(515151)', { readOnly: true });
    expect((await run(engine, held, { readOnly: true })).rows[0][0]).toBe('0');
  });

  it('with it, the read is only rolled back (what the option saves, shown with a lock the guard would refuse)', async () => {
    const engine = openEngine(postgresConfig({ maxConnections: 1 }));
    await run(engine, 'SELECT 1', { readOnly: true });
    await run(engine, 'SELECT pg_advisory_lock(515152)', { readOnly: true, sessionUntouched: true });
    expect((await run(engine, held, { readOnly: true, sessionUntouched: true })).rows[0][0]).toBe('1');
    // The next read without the proof releases it.
    await run(engine, 'SELECT 1', { readOnly: true });
    expect((await run(engine, held, { readOnly: true })).rows[0][0]).toBe('0');
  });

  it('the decision never gives the option to a read that takes an advisory lock or seeds random()', async () => {
    const guard = new ConnectionGuard(openEngine(postgresConfig({ database: plainDb, maxConnections: 1 })));
    for (const sql of [
      'SELECT pg_advisory_lock(1)',
      'SELECT pg_try_advisory_lock(1)',
      'SELECT setseed(0.5)',
      'SELECT pg_catalog.setseed(0)',
    ]) {
      const verdict = await decideStatement(guard, sql);
      expect(verdict.kind, sql).not.toBe('read');
      expect(runOptionsOf(verdict).sessionUntouched, sql).toBeUndefined();
    }
  });
});
