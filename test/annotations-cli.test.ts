// `dbq connection annotate` (the real ./bin/dbq in a child process on the store an in-process
// server uses) on PostgreSQL, MariaDB and SQLite connections: the file's document is what the
// API then returns, as the next version, audited as the local operator with source cli; a bad
// example is refused with the example named and exit 1, nothing stored; `--show` prints the
// version in force. The same document also round-trips on a PostgreSQL store.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, createPgStoreHarness, workspaceSqliteDir, type Harness } from './support/harness.ts';
import { runDbq } from './support/cli.ts';

const SUFFIX = `${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
const DB = `dbq_annot_cli_${SUFFIX}`;
const TABLE = 'CREATE TABLE orders (id INTEGER PRIMARY KEY, total DECIMAL(10,2), status VARCHAR(20))';
const DOC = {
  tables: {
    orders: { description: 'One row per checkout', synonyms: ['purchases'], columns: { total: { description: 'Amount charged' } } },
  },
  examples: [{ question: 'Orders that shipped', sql: "SELECT id FROM orders WHERE status = 'shipped'" }],
};

let h: Harness;
const dbq = (...args: string[]) => runDbq(h.dataDir, args, { timeoutMs: 60_000 });

beforeAll(async () => {
  h = await createHarness();
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${DB}`);
  await admin.end();
  const p = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:5432/${DB}` });
  await p.connect();
  await p.query(TABLE);
  await p.end();
  const my = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root' });
  await my.query(`CREATE DATABASE ${DB}`);
  await my.query(`USE ${DB}`);
  await my.query(TABLE);
  await my.end();
  const lite = new Database(path.join(workspaceSqliteDir(h, 'default'), 'annot-cli.db'));
  lite.exec(TABLE);
  lite.close();
  for (const [name, url] of [
    ['cli-pg', `postgres://postgres@127.0.0.1:5432/${DB}`],
    ['cli-my', `mysql://root@127.0.0.1:3306/${DB}`],
    ['cli-lite', 'sqlite:annot-cli.db'],
  ]) {
    const res = await h.call('POST', '/api/connections', h.adminKey, { name, url });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
}, 60_000);

afterAll(async () => {
  await h?.close();
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  await admin.end();
  const my = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root' });
  await my.query(`DROP DATABASE IF EXISTS ${DB}`);
  await my.end();
});

describe.each(['cli-pg', 'cli-my', 'cli-lite'])('%s', (connection) => {
  it('annotates from a file, and the API returns the same document as the next version', async () => {
    const file = path.join(h.dataDir, `${connection}.json`);
    fs.writeFileSync(file, JSON.stringify(DOC));
    const res = await dbq('connection', 'annotate', '--workspace', 'default', '--connection', connection, '--file', file);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(new RegExp(`Annotated ${connection}: version 1, 1 tables, 1 columns, 1 examples`));
    const api = await h.call('GET', `/api/connections/${connection}/annotations`, h.readerKey);
    expect(api.body.data).toMatchObject({ version: 1, updatedBy: null, ...DOC });
    const entry = await h.svc.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'connection.annotations_changed')
      .where('target_name', '=', connection)
      .executeTakeFirstOrThrow();
    expect(entry).toMatchObject({ source: 'cli', actor_email: `local:${os.userInfo().username}`, actor_user_id: null });
    expect(JSON.parse(entry.changes!)).toEqual({ version: 1, tables: 1, columns: 1, examples: 1 });

    const shown = await dbq('connection', 'annotate', '--workspace', 'default', '--connection', connection, '--show', '--json');
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ version: 1, ...DOC });
  });

  it('refuses a write example naming it, exits 1 and stores nothing', async () => {
    const file = path.join(h.dataDir, `${connection}-bad.json`);
    fs.writeFileSync(
      file,
      JSON.stringify({ ...DOC, examples: [{ question: 'Cancel everything', sql: "UPDATE orders SET status = 'cancelled'" }] }),
    );
    const res = await dbq('connection', 'annotate', '--workspace', 'default', '--connection', connection, '--file', file);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/examples\[0\] \("Cancel everything"\): only read statements/);
    expect((await h.call('GET', `/api/connections/${connection}/annotations`, h.readerKey)).body.data.version).toBe(1);
  });
});

it('says what to pass when neither --file nor --show is given', async () => {
  const res = await dbq('connection', 'annotate', '--workspace', 'default', '--connection', 'cli-lite');
  expect(res.code).toBe(1);
  expect(res.stderr).toMatch(/--file <path>.*--show/);
});

it('round-trips on a PostgreSQL store too', async () => {
  const ps = await createPgStoreHarness();
  try {
    const res = await ps.call('POST', '/api/connections', ps.adminKey, { name: 'pg', url: `postgres://postgres@127.0.0.1:5432/${DB}` });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const saved = await ps.call('PUT', '/api/connections/pg/annotations', ps.adminKey, DOC);
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    expect((await ps.call('PUT', '/api/connections/pg/annotations', ps.adminKey, DOC)).body.data.version).toBe(2);
    expect((await ps.call('GET', '/api/connections/pg/annotations', ps.readerKey)).body.data).toMatchObject({ version: 2, ...DOC });
  } finally {
    await ps.close();
  }
}, 60_000);
