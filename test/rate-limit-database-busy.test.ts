// The concurrency cap per target database, through the HTTP API on the machine's PostgreSQL:
// a connection's maxConnections is its pool size, and a query that cannot get a pooled
// connection within DBQ_POOL_ACQUIRE_TIMEOUT_MS is refused with 503 `Database busy` (instead of
// queueing without bound) and recorded in the history as failed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, PG_URL, type Harness } from './support/harness.ts';
import { backendsRunning } from './support/pg-activity.ts';
import { until } from './support/wait.ts';

let h: Harness;
let connectionId: string;

beforeAll(async () => {
  h = await createHarness({ DBQ_POOL_ACQUIRE_TIMEOUT_MS: '200' });
  const res = await h.call('POST', '/api/connections', h.adminKey, { name: 'busy-pg', url: PG_URL, maxConnections: 1 });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  connectionId = res.body.data.connection.id;
  // The connection's first read loads its catalog for the guard on the pool's one connection
  // (~0.5-1 s on a busy machine): done here, so the slow statement below holds the connection
  // when the probe arrives rather than racing it for it after the load.
  expect((await h.call('POST', '/api/query', h.adminKey, { connectionId, sql: 'SELECT 1 AS warm' })).status).toBe(200);
});
afterAll(() => h.close());

describe('maxConnections caps concurrent statements per database', () => {
  it('answers 503 database_busy when the only connection stays taken past the acquire timeout', async () => {
    const slow = h.call('POST', '/api/query', h.adminKey, { connectionId, sql: 'SELECT pg_sleep(2) AS slept' });
    // The slow statement takes the pool's one connection first.
    await until('the slow statement to run', async () => (await backendsRunning('pg_sleep(2) AS slept')) > 0, 5_000);
    const started = Date.now();
    const busy = await h.call('POST', '/api/query', h.adminKey, { connectionId, sql: 'SELECT 1 AS busy_probe' });
    const waited = Date.now() - started;
    expect(busy.status, JSON.stringify(busy.body)).toBe(503);
    expect(busy.body).toEqual({ success: false, error: 'Database busy', code: 'database_busy' });
    // Refused after the acquire timeout, not after the slow statement finished.
    expect(waited).toBeGreaterThanOrEqual(150);
    expect(waited).toBeLessThan(1500);

    expect((await slow).status).toBe(200);
    // Once the connection is back, the same query runs.
    expect((await h.call('POST', '/api/query', h.adminKey, { connectionId, sql: 'SELECT 1 AS busy_probe' })).status).toBe(200);

    const history = await h.call('GET', `/api/query/history?connectionId=${connectionId}&search=busy_probe`, h.adminKey);
    const entries = history.body.data.entries as Array<{ status: string; error: string | null; sql: string }>;
    expect(entries.map((e) => e.status)).toEqual(['succeeded', 'failed']);
    expect(entries[1].error).toMatch(/Database busy/);
  });
});
