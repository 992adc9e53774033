// API.md v1.1: EXPLAIN without ANALYZE plans a statement and never runs it, so it is a read
// whatever it explains (PostgreSQL), as is SQLite's EXPLAIN QUERY PLAN of any statement and the
// query form of its reporting PRAGMAs. EXPLAIN ANALYZE of a write runs the write: refused.
// Each refusal and each allowed plan leaves the data as it was.
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, workspaceSqliteDir, type Harness } from './support/harness.ts';

let h: Harness;
let admin: pg.Client;
let db: pg.Client;
const dbName = `dbq_plan_${process.pid}_${Math.random().toString(36).slice(2, 7)}`;
let liteFile: string;

beforeAll(async () => {
  h = await createHarness();
  admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  db = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:5432/${dbName}` });
  await db.connect();
  await db.query("CREATE TABLE plan_t (id int PRIMARY KEY, v text); INSERT INTO plan_t VALUES (1, 'a'), (2, 'b')");
  liteFile = path.join(workspaceSqliteDir(h, 'default'), 'plan.db');
  const lite = new Database(liteFile);
  lite.exec("CREATE TABLE plan_t (id integer PRIMARY KEY, v text); INSERT INTO plan_t VALUES (1, 'a'), (2, 'b'); PRAGMA user_version = 7");
  lite.close();
  expect(
    (await h.call('POST', '/api/connections', h.adminKey, { name: 'pg', url: `postgres://postgres@127.0.0.1:5432/${dbName}` })).status,
  ).toBe(201);
  expect((await h.call('POST', '/api/connections', h.adminKey, { name: 'lite', url: 'sqlite:plan.db' })).status).toBe(201);
}, 30_000);

afterAll(async () => {
  await h.close();
  await db.end();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
});

async function pgRows(): Promise<string> {
  return JSON.stringify((await db.query('SELECT * FROM plan_t ORDER BY id')).rows);
}

function liteState(): string {
  const lite = new Database(liteFile, { readonly: true });
  try {
    return JSON.stringify([
      lite.prepare('SELECT * FROM plan_t ORDER BY id').all(),
      lite.pragma('journal_mode'),
      lite.pragma('user_version'),
    ]);
  } finally {
    lite.close();
  }
}

const query = (connectionId: string, sql: string) => h.call('POST', '/api/query', h.readerKey, { connectionId, sql });

describe('PostgreSQL: EXPLAIN without ANALYZE of a write is a read', () => {
  it('plans INSERT, UPDATE, DELETE and MERGE for a read-only key, and runs none of them', async () => {
    const before = await pgRows();
    for (const sql of [
      "EXPLAIN INSERT INTO plan_t VALUES (3, 'c')",
      "EXPLAIN (COSTS off) UPDATE plan_t SET v = 'x'",
      'EXPLAIN (ANALYZE false) DELETE FROM plan_t',
      "EXPLAIN MERGE INTO plan_t t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 'm'",
    ]) {
      const res = await query('pg', sql);
      expect(res.status, `${sql} → ${JSON.stringify(res.body)}`).toBe(200);
      expect(res.body.data.statementType).toBe('EXPLAIN');
      expect(JSON.stringify(res.body.data.rows)).toMatch(/on plan_t|plan_t/);
    }
    expect(await pgRows()).toBe(before);
  });

  it('refuses EXPLAIN ANALYZE of a write in every spelling, and a plan that would call a refused function', async () => {
    const before = await pgRows();
    for (const sql of [
      'EXPLAIN ANALYZE DELETE FROM plan_t',
      'EXPLAIN (ANALYZE) DELETE FROM plan_t',
      'EXPLAIN (ANALYZE on, COSTS off) UPDATE plan_t SET v = NULL',
      'EXPLAIN (ANALYZE 1) DELETE FROM plan_t',
      'EXPLAIN (analyze TRUE) DELETE FROM plan_t',
      // The British spelling, a quoted option name, a quoted or yes value: all run the write.
      'EXPLAIN ANALYSE DELETE FROM plan_t',
      'EXPLAIN (FORMAT JSON, ANALYSE) DELETE FROM plan_t',
      'EXPLAIN (COSTS off, "analyze") DELETE FROM plan_t',
      "EXPLAIN (ANALYZE 'on') UPDATE plan_t SET v = NULL",
      'EXPLAIN (analyze yes) DELETE FROM plan_t',
      "EXPLAIN INSERT INTO plan_t SELECT 9, pg_read_file('/etc/hostname')",
    ]) {
      const res = await query('pg', sql);
      expect(res.status, `${sql} → ${JSON.stringify(res.body)}`).toBe(403);
    }
    expect(await pgRows()).toBe(before);
  });
});

describe('SQLite: EXPLAIN QUERY PLAN of any statement, and reporting PRAGMAs, are reads', () => {
  it('plans writes and reads the settings for a read-only key, changing nothing', async () => {
    const before = liteState();
    for (const sql of [
      "EXPLAIN QUERY PLAN INSERT INTO plan_t VALUES (3, 'c')",
      'EXPLAIN QUERY PLAN DELETE FROM plan_t WHERE id = 1',
      "EXPLAIN QUERY PLAN UPDATE plan_t SET v = 'x'",
      'explain /* plan */ query\nplan DELETE FROM plan_t',
      'PRAGMA main.user_version;',
    ]) {
      const res = await query('lite', sql);
      expect(res.status, `${sql} → ${JSON.stringify(res.body)}`).toBe(200);
    }
    const pragmas: Record<string, unknown> = {};
    for (const name of ['user_version', 'journal_mode', 'page_count', 'main.page_size', 'freelist_count', 'encoding']) {
      const res = await query('lite', `PRAGMA ${name}`);
      expect(res.status, `${name} → ${JSON.stringify(res.body)}`).toBe(200);
      pragmas[name] = res.body.data.rows[0][0];
    }
    expect(pragmas.user_version).toBe(7);
    expect(pragmas.journal_mode).toBe('delete');
    expect(liteState()).toBe(before);
  });

  it('refuses PRAGMA assignments and acting PRAGMAs, and plain EXPLAIN of a write stays an admin statement', async () => {
    const before = liteState();
    for (const sql of [
      'PRAGMA journal_mode = WAL',
      'PRAGMA user_version = 3',
      'PRAGMA user_version(3)',
      'PRAGMA main.journal_mode=DELETE',
      'PRAGMA optimize',
      'PRAGMA wal_checkpoint',
      'PRAGMA incremental_vacuum',
      'EXPLAIN DELETE FROM plan_t',
    ]) {
      const res = await query('lite', sql);
      expect(res.status, `${sql} → ${JSON.stringify(res.body)}`).toBe(403);
    }
    expect(liteState()).toBe(before);
  });
});
