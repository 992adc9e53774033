// A client that goes away takes its statement with it: for POST /api/query (a statement still
// running) and POST /api/query/export (a stream the client stopped reading), on each engine,
// the statement is gone from the database within 1 s of the socket closing — checked on the
// database side (pg_stat_activity, the MariaDB process list, the sqlite runner process) —
// and the history entry says `canceled`.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, MYSQL_URL, PG_URL, workspaceSqliteDir, type Harness } from './support/harness.ts';
import { backendsRunning } from './support/pg-activity.ts';
import { cpuTicks } from './support/processes.ts';
import { until } from './support/wait.ts';

let h: Harness;
let base: string;
let pgc: pg.Client;
let my: mysql.Connection;

beforeAll(async () => {
  h = await createHarness();
  base = await h.app.listen({ host: '127.0.0.1', port: 0 });
  for (const [name, body] of [
    ['pg', { url: PG_URL }],
    ['my', { url: MYSQL_URL }],
  ] as const) {
    const res = await h.call('POST', '/api/connections', h.adminKey, { name, ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  pgc = new pg.Client({ connectionString: PG_URL });
  await pgc.connect();
  my = await mysql.createConnection({ host: '127.0.0.1', user: 'root', database: 'test' });
});

afterAll(async () => {
  await pgc?.end();
  await my?.end();
  await h?.close();
});

/** A fresh SQLite connection (its own runner processes, so the test can tell them apart). */
async function freshSqlite(): Promise<string> {
  const name = `lite_${Math.random().toString(36).slice(2, 8)}`;
  fs.writeFileSync(path.join(workspaceSqliteDir(h, 'default'), `${name}.db`), '');
  const res = await h.call('POST', '/api/connections', h.adminKey, { name, engine: 'sqlite', database: `${name}.db` });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return name;
}

const pgHas = async (marker: string): Promise<boolean> => (await backendsRunning(marker, pgc)) > 0;

async function mysqlHas(marker: string): Promise<boolean> {
  const [rows] = (await my.query('SELECT count(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND ID <> CONNECTION_ID()', [
    `%${marker}%`,
  ])) as any;
  return Number(rows[0].n) > 0;
}

/** Live (not zombie) sqlite runner processes forked by this test process. */
function runnerPids(): Set<number> {
  const pids = new Set<number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) !== process.pid || fields[0] === 'Z') continue;
      if (fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('sqlite-runner.mjs')) pids.add(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return pids;
}

interface Opened {
  req: http.ClientRequest;
  /** Resolves with the response once its headers (and, for exports, a first chunk) arrived. */
  response: Promise<http.IncomingMessage>;
}

/** POSTs without waiting for the end; the caller destroys the socket to "go away". */
function open(pathname: string, body: unknown, waitForData: boolean): Opened {
  const payload = JSON.stringify(body);
  const req = http.request(`${base}${pathname}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${h.adminKey}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
  });
  const response = new Promise<http.IncomingMessage>((resolve, reject) => {
    req.on('response', (res) => {
      if (!waitForData) return resolve(res);
      // Read one chunk, then stop reading: the server's writes back up into its buffers.
      res.once('data', () => {
        res.pause();
        resolve(res);
      });
    });
    req.on('error', reject);
  });
  response.catch(() => {});
  req.end(payload);
  return { req, response };
}

async function historyOf(marker: string): Promise<any> {
  let entry: any;
  await until(
    'history entry',
    async () => {
      const res = await h.call('GET', `/api/query/history?search=${encodeURIComponent(marker)}`, h.adminKey);
      entry = res.body.data.entries[0];
      return entry !== undefined;
    },
    5_000,
  );
  return entry;
}

const sqliteEndless = (m: string) => `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) /* ${m} */ FROM c`;
const sqliteStream = (m: string) =>
  `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x, hex(randomblob(16)) /* ${m} */ FROM c`;

describe('client disconnect cancels the statement on the database', () => {
  it('postgres, /query: backend gone from pg_stat_activity within 1 s', async () => {
    const marker = `gone_pg_q_${Date.now()}`;
    const { req } = open('/api/query', { connectionId: 'pg', sql: `SELECT pg_sleep(30) /* ${marker} */` }, false);
    await until('statement running', () => pgHas(marker), 5_000);
    req.destroy();
    expect(await until('statement gone', async () => !(await pgHas(marker)), 1_000)).toBeLessThanOrEqual(1_000);
    expect(await historyOf(marker)).toMatchObject({ status: 'canceled' });
  });

  it('mysql, /query: gone from the process list within 1 s', async () => {
    const marker = `gone_my_q_${Date.now()}`;
    const { req } = open('/api/query', { connectionId: 'my', sql: `SELECT SLEEP(30) /* ${marker} */` }, false);
    await until('statement running', () => mysqlHas(marker), 5_000);
    req.destroy();
    await until('statement gone', async () => !(await mysqlHas(marker)), 1_000);
    expect(await historyOf(marker)).toMatchObject({ status: 'canceled' });
  });

  it('sqlite, /query: the runner process is killed within 1 s', async () => {
    const conn = await freshSqlite();
    const before = runnerPids();
    const marker = `gone_lite_q_${Date.now()}`;
    const { req } = open('/api/query', { connectionId: conn, sql: sqliteEndless(marker) }, false);
    let mine: number[] = [];
    await until(
      'runner busy',
      () => {
        mine = [...runnerPids()].filter((p) => !before.has(p));
        return mine.length > 0 && h.svc.running.size > 0;
      },
      5_000,
    );
    const idle = mine.map(cpuTicks);
    await until('the runner to run the statement', () => mine.some((p, i) => cpuTicks(p) - idle[i] >= 2), 5_000, 10);
    req.destroy();
    await until('runner killed', () => mine.every((p) => !runnerPids().has(p)), 1_000);
    expect(await historyOf(marker)).toMatchObject({ status: 'canceled' });
  });

  it('postgres, export the client stopped reading: portal and statement gone within 1 s', async () => {
    const marker = `gone_pg_x_${Date.now()}`;
    // generate_series in the select list streams (ProjectSet) instead of materialising.
    const { req, response } = open(
      '/api/query/export',
      { connectionId: 'pg', sql: `SELECT generate_series(1, 100000000) AS g, 'x' /* ${marker} */`, format: 'ndjson' },
      true,
    );
    const res = await response;
    expect(res.statusCode).toBe(200);
    expect(await pgHas(marker)).toBe(true);
    req.destroy();
    await until('statement gone', async () => !(await pgHas(marker)), 1_000);
    const entry = await historyOf(marker);
    expect(entry).toMatchObject({ status: 'canceled' });
    expect(entry.rowCount).toBeGreaterThan(0);
  });

  it('mysql, export the client stopped reading: gone from the process list within 1 s', async () => {
    const marker = `gone_my_x_${Date.now()}`;
    const { req, response } = open(
      '/api/query/export',
      { connectionId: 'my', sql: `SELECT seq, md5(seq) /* ${marker} */ FROM seq_1_to_100000000`, format: 'csv' },
      true,
    );
    const res = await response;
    expect(res.statusCode).toBe(200);
    expect(await mysqlHas(marker)).toBe(true);
    req.destroy();
    await until('statement gone', async () => !(await mysqlHas(marker)), 1_000);
    expect(await historyOf(marker)).toMatchObject({ status: 'canceled' });
  });

  it('sqlite, export the client stopped reading: the runner process is killed within 1 s', async () => {
    const conn = await freshSqlite();
    const before = runnerPids();
    const marker = `gone_lite_x_${Date.now()}`;
    const { req, response } = open('/api/query/export', { connectionId: conn, sql: sqliteStream(marker), format: 'json' }, true);
    const res = await response;
    expect(res.statusCode).toBe(200);
    const mine = [...runnerPids()].filter((p) => !before.has(p));
    expect(mine.length).toBeGreaterThan(0);
    req.destroy();
    await until('runner killed', () => mine.every((p) => !runnerPids().has(p)), 1_000);
    expect(await historyOf(marker)).toMatchObject({ status: 'canceled' });
  });

  it('a finished export leaves nothing to cancel: the connection is reused, history succeeded', async () => {
    const marker = `done_pg_x_${Date.now()}`;
    const res = await fetch(`${base}/api/query/export`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ connectionId: 'pg', sql: `SELECT g /* ${marker} */ FROM generate_series(1, 1000) g`, format: 'csv' }),
    });
    expect((await res.text()).split('\r\n')).toHaveLength(1002);
    expect(await historyOf(marker)).toMatchObject({ status: 'succeeded', rowCount: 1000 });
    expect(h.svc.running.size).toBe(0);
  });
});
