// Replays the guard's attack list (test/fixtures/attack-statements.ts) against the real
// databases through POST /api/query: as a read-only user's key, and as an admin's key on a
// readOnly connection. Each must be refused (400 or 403) AND leave the database exactly as it
// was: same rows in guard_probe, same tables, same files next to the SQLite database. The
// reads that must stay allowed are replayed too: the guard lets them through.
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EngineName } from '../src/engines/engine.ts';
import { ATTACK_STATEMENTS } from './fixtures/attack-statements.ts';
import { READ_STATEMENTS } from './fixtures/read-statements.ts';
import { createHarness, workspaceSqliteDir, type Harness } from './support/harness.ts';

let h: Harness;
const dbName = `dbq_guard_${process.pid}_${Math.random().toString(36).slice(2, 7)}`;
let pgAdmin: pg.Client;
let pgDb: pg.Client;
let my: mysql.Connection;

async function snapshot(engine: EngineName): Promise<string> {
  if (engine === 'postgres') {
    const rows = await pgDb.query(`SELECT (SELECT string_agg(id || ':' || coalesce(v, ''), ',' ORDER BY id) FROM guard_probe) AS probe,
      (SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relnamespace = 'public'::regnamespace) AS rels,
      (SELECT count(*) FROM pg_largeobject_metadata) AS los,
      (SELECT count(*) FROM pg_prepared_xacts) AS xacts`);
    return JSON.stringify(rows.rows[0]);
  }
  if (engine === 'mysql') {
    const [probe] = (await my.query('SELECT GROUP_CONCAT(id, ":", COALESCE(v, "") ORDER BY id) AS p FROM guard_probe')) as any;
    const [tables] = (await my.query(
      'SELECT GROUP_CONCAT(table_name ORDER BY table_name) AS t FROM information_schema.tables WHERE table_schema = ?',
      [dbName],
    )) as any;
    const [routines] = (await my.query('SELECT COUNT(*) AS r FROM information_schema.routines WHERE routine_schema = ?', [dbName])) as any;
    return JSON.stringify([probe[0].p, tables[0].t, routines[0].r]);
  }
  const file = path.join(workspaceSqliteDir(h, 'default'), 'guard.db');
  const db = new Database(file, { readonly: true });
  try {
    const probe = db
      .prepare("SELECT group_concat(id || ':' || coalesce(v, ''), ',') AS p FROM (SELECT * FROM guard_probe ORDER BY id)")
      .get();
    const master = db.prepare("SELECT group_concat(type || name, ',') AS m FROM (SELECT * FROM sqlite_master ORDER BY name)").get();
    const files = fs
      .readdirSync(workspaceSqliteDir(h, 'default'))
      .filter((f) => !f.startsWith('guard.db'))
      .sort();
    const tmpFiles = fs
      .readdirSync('/tmp')
      .filter((f) => f.startsWith('dbq_guard_probe'))
      .sort();
    return JSON.stringify([probe, master, files, tmpFiles]);
  } finally {
    db.close();
  }
}

function paramsFor(sql: string): unknown[] {
  const dollar = [...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1]));
  if (dollar.length > 0) return Array.from({ length: Math.max(...dollar) }, () => 1);
  const q = (sql.replace(/'[^']*'/g, '').match(/\?(?!\d)/g) ?? []).length;
  return Array.from({ length: q }, () => 1);
}

beforeAll(async () => {
  h = await createHarness();
  pgAdmin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await pgAdmin.connect();
  await pgAdmin.query(`CREATE DATABASE ${dbName}`);
  pgDb = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:5432/${dbName}` });
  await pgDb.connect();
  await pgDb.query("CREATE TABLE guard_probe (id int PRIMARY KEY, v text); INSERT INTO guard_probe VALUES (1, 'a'), (2, 'b'), (3, NULL)");
  my = await mysql.createConnection({ host: '127.0.0.1', user: 'root' });
  await my.query(`CREATE DATABASE ${dbName}`);
  await my.query(`USE ${dbName}`);
  await my.query('CREATE TABLE guard_probe (id int PRIMARY KEY, v text); ');
  await my.query("INSERT INTO guard_probe VALUES (1, 'a'), (2, 'b'), (3, NULL)");
  const lite = new Database(path.join(workspaceSqliteDir(h, 'default'), 'guard.db'));
  lite.exec("CREATE TABLE guard_probe (id integer PRIMARY KEY, v text); INSERT INTO guard_probe VALUES (1, 'a'), (2, 'b'), (3, NULL);");
  lite.close();
  const bodies = {
    postgres: { url: `postgres://postgres@127.0.0.1:5432/${dbName}` },
    mysql: { url: `mysql://root@127.0.0.1:3306/${dbName}` },
    sqlite: { engine: 'sqlite', database: 'guard.db' },
  };
  for (const [engine, body] of Object.entries(bodies)) {
    expect((await h.call('POST', '/api/connections', h.adminKey, { name: `g-${engine}`, ...body })).status).toBe(201);
    expect((await h.call('POST', '/api/connections', h.adminKey, { name: `g-${engine}-ro`, ...body, readOnly: true })).status).toBe(201);
  }
}, 60_000);

afterAll(async () => {
  await h.close();
  await pgDb.end();
  await pgAdmin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await pgAdmin.end();
  await my.query(`DROP DATABASE IF EXISTS ${dbName}`);
  await my.end();
});

describe('attack statements are refused and change nothing', () => {
  for (const engine of ['postgres', 'mysql', 'sqlite'] as const) {
    const attacks = ATTACK_STATEMENTS.filter((a) => a.engine === engine);

    it(`${engine}: ${attacks.length} attacks as a read-only key`, async () => {
      const before = await snapshot(engine);
      for (const attack of attacks) {
        const res = await h.call('POST', '/api/query', h.readerKey, {
          connectionId: `g-${engine}`,
          sql: attack.sql,
          params: paramsFor(attack.sql),
          timeoutMs: 5000,
        });
        expect([400, 403, 422], `${attack.why}: ${attack.sql} → ${res.status} ${JSON.stringify(res.body)}`).toContain(res.status);
        if (res.status === 422) {
          // The engine itself cannot compile it (MariaDB has no FOR SHARE): it never runs.
          expect(res.body.code, attack.sql).toBe('query_failed');
          expect(res.body.error, attack.sql).toMatch(/syntax/i);
        } else {
          expect(res.status, attack.sql).toBe(attack.expected === 'rejected' ? 400 : 403);
        }
      }
      expect(await snapshot(engine)).toBe(before);
    });

    it(`${engine}: ${attacks.length} attacks as an admin key on a readOnly connection`, async () => {
      const before = await snapshot(engine);
      for (const attack of attacks) {
        const res = await h.call('POST', '/api/query', h.adminKey, {
          connectionId: `g-${engine}-ro`,
          sql: attack.sql,
          params: paramsFor(attack.sql),
          timeoutMs: 5000,
        });
        expect([400, 403, 422], `${attack.why}: ${attack.sql}`).toContain(res.status);
      }
      expect(await snapshot(engine)).toBe(before);
    });

    it(`${engine}: every refusal is in the history as rejected`, async () => {
      const res = await h.call('GET', `/api/query/history?limit=200&connectionId=g-${engine}`, h.readerKey);
      const entries = res.body.data.entries as { sql: string; status: string; error: string | null }[];
      // An empty sql field fails request validation before a connection is resolved, so it has
      // no history entry (docs/decisions.md); every other refusal has one.
      for (const attack of attacks.filter((a) => a.sql !== '')) {
        const entry = entries.find((e) => e.sql === attack.sql);
        // A statement the engine cannot compile is recorded as failed, with its syntax error.
        if (entry?.status === 'failed') expect(entry.error, JSON.stringify(attack.sql)).toMatch(/syntax/i);
        else expect(entry?.status, JSON.stringify(attack.sql)).toBe('rejected');
      }
    });

    const reads = READ_STATEMENTS.filter((r) => r.engine === engine);
    it(`${engine}: ${reads.length} reads stay allowed for a read-only key`, async () => {
      const before = await snapshot(engine);
      for (const read of reads) {
        const res = await h.call('POST', '/api/query', h.readerKey, {
          connectionId: `g-${engine}`,
          sql: read.sql,
          params: paramsFor(read.sql),
        });
        // 200, or 422 when the database itself objects (e.g. a named parameter it was not given):
        // what matters is that the guard let the read through and the database is unchanged.
        expect([200, 422], `${read.why}: ${read.sql} → ${JSON.stringify(res.body)}`).toContain(res.status);
        if (res.status === 200) expect(res.body.data.statementType, read.sql).toBe(read.statementType);
      }
      expect(await snapshot(engine)).toBe(before);
    });
  }
});
