// `"async": true` queries: 202 at once, GET /api/query/{id} through running → succeeded |
// failed | timed_out | canceled with the same result data as a synchronous /query, cancel on
// the database server, ownership (anyone but the key's user gets 404), the static routes
// /query/history and /query/running beside /query/{id}, results dropped after DBQ_RESULT_TTL
// and past the store's budget.
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AsyncQueries } from '../src/query/async-queries.ts';
import { sharedDb } from '../src/query/shared-running.ts';
import { authenticateKey } from '../src/workspaces/api-keys.ts';
import { createHarness, MYSQL_URL, PG_URL, workspaceSqliteDir, type Harness } from './support/harness.ts';
import { backendsRunning } from './support/pg-activity.ts';
import { until } from './support/wait.ts';

let h: Harness;
let pgc: pg.Client;

type Eng = 'postgres' | 'mysql' | 'sqlite';
const SLOW: Record<Eng, { conn: string; sql: string }> = {
  // Readers may not call pg_sleep/SLEEP (the guard's denylist): work the database instead.
  postgres: { conn: 'pg', sql: 'SELECT count(*) AS s, 42 AS answer FROM generate_series(1, 2000000)' },
  mysql: { conn: 'my', sql: 'SELECT count(*) AS s, 42 AS answer FROM seq_1_to_3000000' },
  sqlite: {
    conn: 'lite',
    sql: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000) SELECT count(*) AS s, 42 AS answer FROM c',
  },
};

beforeAll(async () => {
  h = await createHarness();
  fs.writeFileSync(path.join(workspaceSqliteDir(h, 'default'), 'async.db'), '');
  for (const [name, body] of [
    ['pg', { url: PG_URL }],
    ['my', { url: MYSQL_URL }],
    ['lite', { engine: 'sqlite', database: 'async.db' }],
  ] as const) {
    const res = await h.call('POST', '/api/connections', h.adminKey, { name, ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  pgc = new pg.Client({ connectionString: PG_URL });
  await pgc.connect();
});

afterAll(async () => {
  await pgc?.end();
  await h?.close();
});

async function submit(key: string, body: Record<string, unknown>, url = '/api/query') {
  return h.call('POST', url, key, { ...body, async: true });
}

async function settle(key: string, queryId: string, ms = 10_000): Promise<any> {
  const started = Date.now();
  for (;;) {
    const res = await h.call('GET', `/api/query/${queryId}`, key);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    if (res.body.data.status !== 'running') return res.body.data;
    if (Date.now() - started > ms) throw new Error(`${queryId} still running after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const pgHas = async (marker: string): Promise<boolean> => (await backendsRunning(marker, pgc)) > 0;

/** Polls until the statement is gone from pg_stat_activity; how long that took. */
function pgGone(marker: string, ms = 1_000): Promise<number> {
  return until(`${marker} to leave pg_stat_activity`, async () => !(await pgHas(marker)), ms);
}

async function history(key: string, marker: string): Promise<any[]> {
  return (await h.call('GET', `/api/query/history?search=${encodeURIComponent(marker)}`, key)).body.data.entries;
}

describe('async lifecycle', () => {
  for (const e of ['postgres', 'mysql', 'sqlite'] as const) {
    it(`${e}: 202 running, then succeeded with the same data as /query`, async () => {
      const { conn, sql } = SLOW[e];
      const res = await submit(h.readerKey, { connectionId: conn, sql });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      expect(res.body.data).toEqual({ queryId: expect.stringMatching(/^q_/), status: 'running' });
      expect(res.headers.location).toBe(`/api/query/${res.body.data.queryId}`);
      const first = await h.call('GET', `/api/query/${res.body.data.queryId}`, h.readerKey);
      expect(['running', 'succeeded']).toContain(first.body.data.status);
      const done = await settle(h.readerKey, res.body.data.queryId);
      const sync = await h.call('POST', '/api/query', h.readerKey, { connectionId: conn, sql });
      expect(done).toMatchObject({ queryId: res.body.data.queryId, status: 'succeeded', error: null, finishedAt: expect.any(String) });
      const { durationMs: _a, queryId: _b, ...asyncResult } = done.result;
      const { durationMs: _c, queryId: _d, ...syncResult } = sync.body.data;
      expect(asyncResult).toEqual(syncResult);
      expect(done.result.queryId).toBe(res.body.data.queryId);
      const [entry] = (await history(h.readerKey, sql)).filter((x) => x.queryId === res.body.data.queryId);
      expect(entry).toMatchObject({ status: 'succeeded', rowCount: 1, source: 'api' });
    });
  }

  it('a database error is status failed with the error, and in the history', async () => {
    const res = await submit(h.adminKey, { connectionId: 'pg', sql: 'SELECT * FROM async_no_such_table' });
    expect(res.status).toBe(202);
    const done = await settle(h.adminKey, res.body.data.queryId);
    expect(done).toMatchObject({
      status: 'failed',
      result: null,
      error: { code: 'query_failed', message: expect.stringContaining('async_no_such_table') },
    });
    expect(done.error.details.sqlState).toBe('42P01');
    expect((await history(h.adminKey, 'async_no_such_table'))[0]).toMatchObject({ status: 'failed' });
  });

  it('timeoutMs still applies: status timed_out, statement gone', async () => {
    const marker = `async_timeout_${Date.now()}`;
    const res = await submit(h.adminKey, { connectionId: 'pg', sql: `SELECT pg_sleep(10) /* ${marker} */`, timeoutMs: 300 });
    const done = await settle(h.adminKey, res.body.data.queryId);
    expect(done).toMatchObject({ status: 'timed_out', error: { code: 'query_timeout' } });
    await pgGone(marker);
  });

  it('refusals answer at once, not 202: reader write 403, unknown connection 404, two statements 400', async () => {
    expect((await submit(h.readerKey, { connectionId: 'pg', sql: 'DELETE FROM async_x' })).status).toBe(403);
    expect((await submit(h.readerKey, { connectionId: 'nope', sql: 'SELECT 1' })).body).toMatchObject({ code: 'connection_not_found' });
    expect((await submit(h.adminKey, { connectionId: 'pg', sql: 'SELECT 1; SELECT 2' })).status).toBe(400);
  });
});

describe('cancel', () => {
  it('POST /query/{id}/cancel stops it on the server: status canceled, history canceled', async () => {
    const marker = `async_cancel_${Date.now()}`;
    const res = await submit(h.adminKey, { connectionId: 'pg', sql: `SELECT pg_sleep(30) /* ${marker} */` });
    const id = res.body.data.queryId;
    await until('the statement to run', () => pgHas(marker), 2_000);
    const started = Date.now();
    const cancel = await h.call('POST', `/api/query/${id}/cancel`, h.adminKey);
    expect(cancel.status).toBe(200);
    expect(cancel.body.data).toMatchObject({ queryId: id, status: 'canceled', error: { code: 'query_canceled' } });
    expect(Date.now() - started).toBeLessThan(1_000);
    await pgGone(marker);
    expect((await history(h.adminKey, marker))[0]).toMatchObject({ status: 'canceled' });
    // Idempotent: a finished query stays as it is.
    expect((await h.call('POST', `/api/query/${id}/cancel`, h.adminKey)).body.data.status).toBe('canceled');
    expect((await h.call('GET', `/api/query/${id}`, h.adminKey)).body.data.status).toBe('canceled');
  });

  it("cancels the caller's own synchronous query too (found through GET /query/running)", async () => {
    const marker = `sync_cancel_${Date.now()}`;
    const pending = h.call('POST', '/api/query', h.readerKey, {
      connectionId: 'pg',
      sql: `SELECT count(*) /* ${marker} */ FROM generate_series(1, 1000000000)`,
    });
    let id: string | undefined;
    await until(
      'the query among the running ones',
      async () => {
        const list = await h.call('GET', '/api/query/running', h.readerKey);
        id = list.body.data.queries.find((q: any) => q.sql.includes(marker))?.queryId;
        return id !== undefined;
      },
      2_000,
    );
    expect((await h.call('GET', `/api/query/${id}`, h.readerKey)).body.data.status).toBe('running');
    const cancel = await h.call('POST', `/api/query/${id}/cancel`, h.readerKey);
    expect(cancel.body.data).toMatchObject({ queryId: id, status: 'canceled' });
    expect((await pending).body).toMatchObject({ code: 'query_canceled' });
    await pgGone(marker);
  });
});

describe('ownership and routes', () => {
  it("someone else's query is 404 for GET and cancel (admins included), and keeps running", async () => {
    const marker = `async_owner_${Date.now()}`;
    const res = await submit(h.readerKey, { connectionId: 'pg', sql: `SELECT count(*) /* ${marker} */ FROM generate_series(1, 5000000)` });
    const id = res.body.data.queryId;
    for (const [key, url] of [
      [h.adminKey, `/api/query/${id}`],
      [h.otherKey, `/w/other/api/query/${id}`],
    ] as const) {
      const get = await h.call('GET', url, key);
      expect(get.status).toBe(404);
      expect(get.body).toEqual({ success: false, error: 'Query not found', code: 'query_not_found' });
      expect((await h.call('POST', `${url}/cancel`, key)).status).toBe(404);
    }
    // The admin sees it among the workspace's running statements, the other workspace does not.
    expect((await h.call('GET', '/api/query/running', h.adminKey)).body.data.queries.map((q: any) => q.queryId)).toContain(id);
    expect((await h.call('GET', '/w/other/api/query/running', h.otherKey)).body.data.queries).toEqual([]);
    expect(await settle(h.readerKey, id)).toMatchObject({ status: 'succeeded' });
  });

  it("a reader's running list holds their own queries only", async () => {
    const marker = `async_list_${Date.now()}`;
    const mine = await submit(h.readerKey, {
      connectionId: 'pg',
      sql: `SELECT count(*) /* ${marker} r */ FROM generate_series(1, 5000000)`,
    });
    const admins = await submit(h.adminKey, { connectionId: 'pg', sql: `SELECT pg_sleep(0.5) /* ${marker} a */` });
    const list = (await h.call('GET', '/api/query/running', h.readerKey)).body.data.queries.map((q: any) => q.queryId);
    expect(list).toContain(mine.body.data.queryId);
    expect(list).not.toContain(admins.body.data.queryId);
    const all = (await h.call('GET', '/api/query/running', h.adminKey)).body.data.queries.map((q: any) => q.queryId);
    expect(all).toEqual(expect.arrayContaining([mine.body.data.queryId, admins.body.data.queryId]));
    await settle(h.readerKey, mine.body.data.queryId);
    await settle(h.adminKey, admins.body.data.queryId);
  });

  it('GET /query/history and /query/running are not taken for a queryId; unknown ids are 404', async () => {
    const hist = await h.call('GET', '/api/query/history?limit=1', h.adminKey);
    expect(hist.status).toBe(200);
    expect(hist.body.data).toHaveProperty('entries');
    const running = await h.call('GET', '/api/v1/query/running', h.adminKey);
    expect(running.status).toBe(200);
    expect(running.body.data).toHaveProperty('queries');
    expect((await h.call('GET', '/api/query/q_00000000000000000000000000', h.adminKey)).body.code).toBe('query_not_found');
    expect((await h.call('POST', '/api/query/q_00000000000000000000000000/cancel', h.adminKey)).status).toBe(404);
    expect((await h.call('GET', '/api/query/running', null)).status).toBe(401);
  });
});

describe('retention', () => {
  it('a result is gone (404) after DBQ_RESULT_TTL', async () => {
    const short = await createHarness({ DBQ_RESULT_TTL: '1' });
    try {
      await short.call('POST', '/api/connections', short.adminKey, { name: 'pg', url: PG_URL });
      const res = await short.call('POST', '/api/query', short.adminKey, { connectionId: 'pg', sql: 'SELECT 1', async: true });
      const id = res.body.data.queryId;
      await until(
        'the query to succeed',
        async () => (await short.call('GET', `/api/query/${id}`, short.adminKey)).body.data?.status === 'succeeded',
        2_000,
      );
      // Expiry is read from Date.now(): the clock moves past the TTL instead of the test waiting it out.
      vi.useFakeTimers({ toFake: ['Date'] });
      try {
        vi.setSystemTime(Date.now() + 1_100);
        expect((await short.call('GET', `/api/query/${id}`, short.adminKey)).status).toBe(404);
      } finally {
        vi.useRealTimers();
      }
    } finally {
      await short.close();
    }
  });

  it('closing the services cuts a running async query (stored failed, shutting_down) instead of waiting for it', async () => {
    const own = await createHarness();
    let closed = false;
    try {
      await own.call('POST', '/api/connections', own.adminKey, { name: 'pg', url: PG_URL });
      const marker = `async_close_${Date.now()}`;
      const res = await own.call('POST', '/api/query', own.adminKey, {
        connectionId: 'pg',
        sql: `SELECT pg_sleep(30) /* ${marker} */`,
        async: true,
      });
      const id = res.body.data.queryId;
      await until('the statement to run', () => pgHas(marker), 2_000);
      const outcomes: string[] = [];
      const db = own.svc.db;
      const started = Date.now();
      // Read the stored outcome just before the store closes.
      const close = own.svc.store.close.bind(own.svc.store);
      own.svc.store.close = async () => {
        const row = await sharedDb(db)
          .selectFrom('async_queries')
          .select(['status', 'error_json'])
          .where('query_id', '=', id)
          .executeTakeFirst();
        outcomes.push(JSON.stringify(row));
        return close();
      };
      await own.close();
      closed = true;
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(outcomes[0]).toContain('"status":"failed"');
      expect(outcomes[0]).toContain('shutting_down');
      await pgGone(marker);
    } finally {
      if (!closed) await own.close();
    }
  });

  it('past the byte budget the oldest finished results go first; the newest stays', async () => {
    const principal = await authenticateKey(h.svc.db, h.adminKey);
    const store = new AsyncQueries({
      ttlSeconds: 60,
      budgetBytes: 2_000,
      db: h.svc.db,
      running: h.svc.running,
      shared: h.svc.asyncQueries.shared,
    });
    const svc = { ...h.svc, asyncQueries: store };
    const input = (n: number) => ({
      connectionId: 'pg',
      sql: `SELECT repeat('x', 600) AS v, ${n} AS n`,
      params: [],
      maxRows: 10,
      timeoutMs: 5_000,
      rowFormat: 'arrays' as const,
    });
    const ids: string[] = [];
    for (let n = 0; n < 4; n++) {
      const { queryId } = await store.start(svc, principal, input(n));
      ids.push(queryId);
      await until('the query to finish', async () => (await store.find(principal, queryId))?.status !== 'running', 2_000, 10);
    }
    await store.close();
    const kept = await Promise.all(ids.map(async (id) => (await store.find(principal, id)) !== undefined));
    expect(kept[3]).toBe(true);
    expect(kept[0]).toBe(false);
    expect(kept.filter(Boolean).length).toBeLessThanOrEqual(2);
  });
});
