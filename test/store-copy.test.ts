// dbq store copy as an operator runs it: a SQLite store with a workspace's worth of everything
// (users, keys, a connection with a sealed password, grants, a tool and its versions, history,
// audit) copied by ./bin/dbq into a fresh PostgreSQL database; the counts it prints match both
// stores, and a real `dbq serve` on the copy answers a query with an API key made before the
// copy, on the copied connection. A non-empty target and a table dbq does not know are refused
// by name, with the target left empty.
import fs from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, freshPostgresDatabase, type Harness } from './support/harness.ts';
import { runDbq } from './support/cli.ts';
import { http, startDbq } from './support/processes.ts';

let h: Harness;
let dataDir: string;
let adminKey: string;
let readerKey: string;
const drops: Array<() => Promise<void>> = [];

async function fresh(): Promise<string> {
  const db = await freshPostgresDatabase();
  drops.push(db.drop);
  return db.url;
}

async function pgCount(url: string, table: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return Number((await c.query(`select count(*) as n from "${table}"`)).rows[0].n);
  } finally {
    await c.end();
  }
}

function sqliteCounts(): Map<string, number> {
  const db = new SqliteDatabase(path.join(dataDir, 'dbq.sqlite'), { readonly: true });
  try {
    const tables = (
      db.prepare(`select name from sqlite_master where type = 'table' and name not like 'sqlite\\_%' escape '\\'`).all() as {
        name: string;
      }[]
    ).map((r) => r.name);
    return new Map(tables.map((t) => [t, (db.prepare(`select count(*) as n from "${t}"`).get() as { n: number }).n]));
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  h = await createHarness();
  adminKey = h.adminKey;
  readerKey = h.readerKey;
  // A copy of the harness's data dir outlives its close(): the store and the secret key.
  const conn = await h.call('POST', '/api/connections', adminKey, {
    name: 'pg',
    url: 'postgres://postgres:sealed-pw@127.0.0.1:5432/test',
  });
  expect(conn.status, JSON.stringify(conn.body)).toBe(201);
  const id = conn.body.data.connection.id;
  const grants = await h.call('PUT', `/api/connections/${id}/grants`, adminKey, { everyone: false, users: ['reader@acme.test'] });
  expect(grants.status, JSON.stringify(grants.body)).toBe(200);
  const tool = await h.call('POST', '/api/tools', adminKey, {
    name: 'one',
    description: 'one',
    connectionId: id,
    sql: 'SELECT 1 AS one',
    parameters: [],
    maxRows: 10,
  });
  expect(tool.status, JSON.stringify(tool.body)).toBe(201);
  const patched = await h.call('PATCH', '/api/tools/one', adminKey, { description: 'one, again' });
  expect(patched.status, JSON.stringify(patched.body)).toBe(200);
  for (let i = 0; i < 3; i++) {
    const q = await h.call('POST', '/api/query', readerKey, { connectionId: id, sql: `SELECT ${i} AS n` });
    expect(q.status, JSON.stringify(q.body)).toBe(200);
  }
  await h.app.close();
  const { closeServices } = await import('../src/services.ts');
  await closeServices(h.svc);
  dataDir = h.dataDir;
});

afterAll(async () => {
  for (const drop of drops) await drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('dbq store copy', { timeout: 120_000 }, () => {
  it('copies every table into an empty PostgreSQL store, counts printed and equal, and dbq serves the copy', async () => {
    const url = await fresh();
    const before = sqliteCounts();
    const res = await runDbq(dataDir, ['store', 'copy', '--to', url, '--json']);
    expect(res.code, res.stderr).toBe(0);
    const out = JSON.parse(res.stdout);
    const copied = new Map<string, { source: number; target: number }>(out.tables.map((t: any) => [t.table, t]));
    for (const table of [
      'workspaces',
      'users',
      'api_keys',
      'connections',
      'connection_grants',
      'curated_tools',
      'query_history',
      'audit_log',
    ]) {
      expect(copied.get(table)?.source, table).toBe(before.get(table));
      expect(copied.get(table)?.target, table).toBe(before.get(table));
      expect(await pgCount(url, table), table).toBe(before.get(table));
      expect(before.get(table), table).toBeGreaterThan(0);
    }
    // Every SQLite table is either copied or named as not copied, with its reason.
    const skipped = out.skipped.map((s: { table: string }) => s.table);
    for (const table of before.keys()) expect(copied.has(table) || skipped.includes(table), table).toBe(true);
    expect(skipped.sort()).toEqual(['dbq_migrations', 'dbq_migrations_lock', 'query_history_search_state']);
    expect(res.stdout).not.toContain('127.0.0.1:5432');

    const human = await runDbq(dataDir, ['store', 'copy', '--to', await fresh()]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/query_history\s+3 → 3/);
    expect(human.stdout).toContain('Next: start dbq with DBQ_STORE_URL set');

    // The copy is at the SQLite store's migrations: nothing pending for a server to run.
    const status = await runDbq(dataDir, ['migrate', 'status', '--json'], { env: { DBQ_STORE_URL: url } });
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout).pending).toEqual([]);
    expect(JSON.parse(status.stdout).applied.at(-1).name).toBe(out.migration);

    const server = await startDbq({ DBQ_DATA_DIR: dataDir, DBQ_STORE_URL: url, DBQ_LOG_LEVEL: 'warn' });
    try {
      // A key made before the copy, a connection whose password was sealed before it.
      const q = await http('POST', `${server.url}/api/query`, readerKey, { connectionId: 'pg', sql: 'SELECT 42 AS answer' });
      expect(q.status, JSON.stringify(q.body)).toBe(200);
      expect(q.body.data.rows).toEqual([[42]]);
      const history = await http('GET', `${server.url}/api/query/history`, adminKey);
      expect(history.status).toBe(200);
      expect(history.body.data.entries.length).toBe(4);
      const tools = await http('GET', `${server.url}/api/tools/one`, adminKey);
      expect(tools.body.data.tool.version).toBe(2);
      const audit = await http('GET', `${server.url}/api/audit`, adminKey);
      expect(audit.status).toBe(200);
      expect(audit.body.data.entries.map((e: { action: string }) => e.action)).toContain('connection.grants_changed');
    } finally {
      await server.stop();
    }
  });

  it('refuses a target that is not empty, naming what is in it, and adds nothing', async () => {
    const url = await fresh();
    const first = await runDbq(dataDir, ['store', 'copy', '--to', url]);
    expect(first.code, first.stderr).toBe(0);
    const users = await pgCount(url, 'users');
    const again = await runDbq(dataDir, ['store', 'copy', '--to', url]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/The target PostgreSQL store is not empty: .*workspaces \(\d+ rows\)/);
    expect(await pgCount(url, 'users')).toBe(users);

    const foreign = await fresh();
    const c = new pg.Client({ connectionString: foreign });
    await c.connect();
    await c.query('create table invoices (id int)');
    await c.end();
    const res = await runDbq(dataDir, ['store', 'copy', '--to', foreign]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('The target database is not empty and not a dbq store (it has 1 table(s): invoices)');
  });

  it('refuses a table the store schema does not know, naming it, and leaves the target empty', async () => {
    const db = new SqliteDatabase(path.join(dataDir, 'dbq.sqlite'));
    db.exec('create table mystery_notes (id text primary key, body text)');
    db.prepare('insert into mystery_notes values (?, ?)').run('n1', 'kept by someone');
    db.close();
    try {
      const url = await fresh();
      const res = await runDbq(dataDir, ['store', 'copy', '--to', url]);
      expect(res.code).toBe(1);
      expect(res.stderr).toContain('The SQLite store has a table "mystery_notes" that the PostgreSQL schema of this dbq does not');
      expect(await pgCount(url, 'workspaces')).toBe(0);
      expect(await pgCount(url, 'api_keys')).toBe(0);
    } finally {
      const undo = new SqliteDatabase(path.join(dataDir, 'dbq.sqlite'));
      undo.exec('drop table mystery_notes');
      undo.close();
    }
  });

  it('refuses when the store is already PostgreSQL, and a --to that is not a postgres URL', async () => {
    const res = await runDbq(dataDir, ['store', 'copy', '--to', 'postgres://x@127.0.0.1:5999/none'], {
      env: { DBQ_STORE_URL: 'postgres://x@127.0.0.1:5999/none' },
    });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('The store is already PostgreSQL');
    const bad = await runDbq(dataDir, ['store', 'copy', '--to', 'mysql://root@127.0.0.1/test']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--to must be a postgres:// URL');
  });

  it('--help names what is copied, the empty target and the secret key', async () => {
    const res = await runDbq(dataDir, ['store', 'copy', '--help']);
    expect(res.stdout).toContain('EMPTY PostgreSQL store');
    expect(res.stdout).toContain('same secret key');
    expect(res.stdout).toContain('--to <url>');
  });
});
