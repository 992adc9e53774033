// Ordinary analytic reads (test/fixtures/analytic-reads.ts) must run for a read-only user's
// key: the guard exists to stop writes, not window functions, FILTER, ROLLUP, VALUES, set
// operations, JSON_TABLE, catalog queries or EXPLAIN. Each engine gets a fresh database with
// ANALYTIC_FIXTURE; every statement goes through POST /api/query with the reader's key and
// must answer 200. A statement that is simply not SQL (a typo) is the database's to reject:
// 422 query_failed, not a 403 from the guard.
import path from 'node:path';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE_NAMES } from '../src/engines/engine.ts';
import { ANALYTIC_FIXTURE, ANALYTIC_READS, TYPO_READS } from './fixtures/analytic-reads.ts';
import { createHarness, workspaceSqliteDir, type Harness } from './support/harness.ts';

let h: Harness | undefined;
const dbName = `dbq_analytic_${process.pid}_${Math.random().toString(36).slice(2, 7)}`;
const SQLITE_FILE = 'analytic.db';
let pgAdmin: pg.Client | undefined;
let my: mysql.Connection | undefined;

const connectionId = (engine: string) => `analytic-${engine}`;

beforeAll(async () => {
  h = await createHarness();

  pgAdmin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await pgAdmin.connect();
  await pgAdmin.query(`CREATE DATABASE ${dbName}`);
  const pgDb = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:5432/${dbName}` });
  await pgDb.connect();
  try {
    for (const statement of ANALYTIC_FIXTURE.postgres) await pgDb.query(statement);
  } finally {
    await pgDb.end();
  }

  my = await mysql.createConnection({ host: '127.0.0.1', user: 'root' });
  await my.query(`CREATE DATABASE ${dbName}`);
  await my.query(`USE ${dbName}`);
  for (const statement of ANALYTIC_FIXTURE.mysql) await my.query(statement);

  const lite = new Database(path.join(workspaceSqliteDir(h, 'default'), SQLITE_FILE));
  try {
    for (const statement of ANALYTIC_FIXTURE.sqlite) lite.exec(statement);
  } finally {
    lite.close();
  }

  const bodies = {
    postgres: { url: `postgres://postgres@127.0.0.1:5432/${dbName}` },
    mysql: { url: `mysql://root@127.0.0.1:3306/${dbName}` },
    sqlite: { engine: 'sqlite', database: SQLITE_FILE },
  };
  for (const [engine, body] of Object.entries(bodies)) {
    const res = await h.call('POST', '/api/connections', h.adminKey, { name: connectionId(engine), ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
}, 60_000);

afterAll(async () => {
  await h?.close();
  if (pgAdmin) {
    await pgAdmin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await pgAdmin.end();
  }
  if (my) {
    await my.query(`DROP DATABASE IF EXISTS ${dbName}`);
    await my.end();
  }
});

describe('analytic reads run for a read-only key', () => {
  for (const engine of ENGINE_NAMES) {
    const reads = ANALYTIC_READS.filter((r) => r.engine === engine);

    it(`${engine}: ${reads.length} analytic reads answer 200`, async () => {
      const failures: string[] = [];
      for (const read of reads) {
        const res = await h!.call('POST', '/api/query', h!.readerKey, { connectionId: connectionId(engine), sql: read.sql, params: [] });
        if (res.status !== 200)
          failures.push(`${read.why}\n    ${read.sql.replace(/\n/g, '\n    ')}\n    → ${res.status} ${JSON.stringify(res.body)}`);
      }
      expect(failures, `${failures.length} of ${reads.length} ${engine} reads refused or failed:\n\n${failures.join('\n\n')}`).toEqual([]);
    }, 120_000);

    it(`${engine}: a typo is the database's error (422 query_failed), not the guard's`, async () => {
      const failures: string[] = [];
      for (const sql of TYPO_READS[engine]) {
        const res = await h!.call('POST', '/api/query', h!.readerKey, { connectionId: connectionId(engine), sql, params: [] });
        if (res.status !== 422 || res.body?.code !== 'query_failed') failures.push(`${sql} → ${res.status} ${JSON.stringify(res.body)}`);
      }
      expect(failures, failures.join('\n')).toEqual([]);
    });
  }
});
