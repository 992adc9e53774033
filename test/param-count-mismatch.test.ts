// `SELECT $1::int + $2::int` with one param used to answer 502 connection_failed
// "the connection was lost" on PostgreSQL (the server refuses the Bind with 08P01, a class-08
// SQLSTATE, though at severity ERROR and with the session intact), where MySQL and SQLite
// answered 422 query_failed. Every engine now answers 422 (PostgreSQL and MySQL with both
// counts), and the connection that saw the refusal serves the next statement.
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, MYSQL_URL, PG_URL, workspaceSqliteDir, type Harness } from './support/harness.ts';
import { closeAllEngines, openEngine, postgresConfig, rejectionOf, run } from './support/engines.ts';

type Eng = 'postgres' | 'mysql' | 'sqlite';
const ENGINES: Eng[] = ['postgres', 'mysql', 'sqlite'];
const table = `pcm_${process.pid}_${Math.random().toString(36).slice(2, 7)}`;
const ph = (e: Eng, n: number) => (e === 'postgres' ? `$${n}` : '?');
const conn = (e: Eng) => `pcm-${e}`;

let h: Harness;
let pgAdmin: pg.Client;
let my: mysql.Connection;

beforeAll(async () => {
  h = await createHarness();
  pgAdmin = new pg.Client({ connectionString: PG_URL });
  await pgAdmin.connect();
  await pgAdmin.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v int)`);
  await pgAdmin.query(`INSERT INTO ${table} VALUES (1, 10)`);
  my = await mysql.createConnection({ host: '127.0.0.1', user: 'root', database: 'test' });
  await my.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v int)`);
  await my.query(`INSERT INTO ${table} VALUES (1, 10)`);
  const lite = new Database(path.join(workspaceSqliteDir(h, 'default'), 'pcm.db'));
  lite.exec(`CREATE TABLE ${table} (id integer PRIMARY KEY, v integer); INSERT INTO ${table} VALUES (1, 10);`);
  lite.close();
  for (const [e, body] of [
    ['postgres', { url: PG_URL }],
    ['mysql', { url: MYSQL_URL }],
    ['sqlite', { engine: 'sqlite', database: 'pcm.db' }],
  ] as const) {
    const res = await h.call('POST', '/api/connections', h.adminKey, { name: conn(e), ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
});

afterAll(async () => {
  await closeAllEngines();
  await pgAdmin?.query(`DROP TABLE IF EXISTS ${table}`);
  await pgAdmin?.end();
  await my?.query(`DROP TABLE IF EXISTS ${table}`);
  await my?.end();
  await h?.close();
});

describe.each(ENGINES)('%s: a params count that does not match the statement', (e) => {
  const sum = `SELECT ${ph(e, 1)} + ${ph(e, 2)} AS s`;

  // MySQL/MariaDB with one param too many used to answer 200 with a garbage value (mysql2 sent
  // all three and the server read the misaligned packet: `SELECT ? + ?` answered 8.0893e-320).
  const cases: [string, number[]][] = [
    ['too few', [1]],
    ['too many', [1, 2, 3]],
  ];
  it.each(cases)('a read with %s params is 422 query_failed, and the next read works', async (_what, params) => {
    const sql = e === 'postgres' ? 'SELECT $1::int + $2::int AS s' : sum;
    const res = await h.call('POST', '/api/query', h.readerKey, { connectionId: conn(e), sql, params });
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body.code).toBe('query_failed');
    if (e !== 'sqlite') {
      expect(res.body.error).toBe(`the statement uses 2 parameters but ${params.length} ${params.length === 1 ? 'was' : 'were'} given`);
      expect(res.body.details).toMatchObject({ expectedParams: 2, givenParams: params.length });
    }
    if (e === 'postgres') expect(res.body.details).toMatchObject({ sqlState: '08P01' });
    const next = await h.call('POST', '/api/query', h.readerKey, { connectionId: conn(e), sql, params: [2, 3] });
    expect(next.status, JSON.stringify(next.body)).toBe(200);
    expect(next.body.data.rows).toEqual([[5]]);
  });

  it('a write with too few params is 422 and changes nothing; the next write works', async () => {
    const sql = `UPDATE ${table} SET v = ${ph(e, 1)} WHERE id = ${ph(e, 2)}`;
    const res = await h.call('POST', '/api/query', h.adminKey, { connectionId: conn(e), sql, params: [99] });
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body.code).toBe('query_failed');
    if (e !== 'sqlite') expect(res.body.error).toBe('the statement uses 2 parameters but 1 was given');
    const read = await h.call('POST', '/api/query', h.adminKey, { connectionId: conn(e), sql: `SELECT v FROM ${table} WHERE id = 1` });
    expect(read.body.data.rows).toEqual([[10]]);
    const next = await h.call('POST', '/api/query', h.adminKey, { connectionId: conn(e), sql, params: [11, 1] });
    expect(next.status, JSON.stringify(next.body)).toBe(200);
    expect(next.body.data.affectedRows).toBe(1);
    await h.call('POST', '/api/query', h.adminKey, { connectionId: conn(e), sql, params: [10, 1] });
  });

  it('an export with too few params is 422 query_failed', async () => {
    const sql = e === 'postgres' ? 'SELECT $1::int + $2::int AS s' : sum;
    const res = await h.call('POST', '/api/query/export', h.readerKey, { connectionId: conn(e), sql, params: [1], format: 'ndjson' });
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body.code).toBe('query_failed');
    if (e !== 'sqlite') expect(res.body.error).toBe('the statement uses 2 parameters but 1 was given');
  });
});

describe('mysql: a statement without placeholders given params', () => {
  it('is 422 like PostgreSQL, not run with the values ignored', async () => {
    const res = await h.call('POST', '/api/query', h.readerKey, { connectionId: conn('mysql'), sql: 'SELECT 1 AS one', params: [5] });
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body.error).toBe('the statement uses 0 parameters but 1 was given');
  });
});

describe('postgres: the refused Bind leaves the pooled connection in use', () => {
  it('the same backend answers the next read and write, and idles outside any transaction', async () => {
    const engine = openEngine(postgresConfig({ maxConnections: 1 }));
    const pid = async (readOnly: boolean) => (await run(engine, 'SELECT pg_backend_pid() AS pid', { readOnly })).rows[0][0];
    const before = await pid(true);
    for (const readOnly of [true, false]) {
      const err = await rejectionOf(run(engine, 'SELECT $1::int + $2::int', { params: [1], readOnly }));
      expect(err.code).toBe('query_failed');
      expect(err.status).toBe(422);
      expect(await pid(readOnly)).toBe(before);
      const idle = await pgAdmin.query('SELECT state FROM pg_stat_activity WHERE pid = $1', [before]);
      expect(idle.rows).toEqual([{ state: 'idle' }]);
    }
  });
});
