// SIGTERM behaviour: stop accepting, let in-flight queries finish within the grace period,
// cancel the rest on the database, then close pools and the store.
import { describe, expect, it } from 'vitest';
import { startServer } from '../src/server/server.ts';
import { createHarness, PG_URL } from './support/harness.ts';
import { backendsRunning } from './support/pg-activity.ts';
import { until } from './support/wait.ts';

async function startWithGrace(graceMs: number) {
  const h = await createHarness({ DBQ_SHUTDOWN_GRACE_MS: String(graceMs) });
  await h.call('POST', '/api/connections', h.adminKey, { name: 'pg', url: PG_URL });
  const server = await startServer(h.svc, h.app, { host: '127.0.0.1', port: 0 });
  const query = (sql: string) =>
    fetch(`${server.url}/api/query`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ connectionId: 'pg', sql }),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
  return { h, server, query };
}

describe('graceful shutdown', () => {
  it('lets an in-flight query finish inside the grace period and refuses new connections', async () => {
    const { server, query } = await startWithGrace(10_000);
    const inflight = query("SELECT pg_sleep(0.8), 'grace-ok' AS marker");
    await until('the statement to run', async () => (await backendsRunning('grace-ok')) > 0, 5_000);
    const stopped = server.shutdown();
    const res = await inflight;
    expect(res.status).toBe(200);
    expect(res.body.data.rows[0][1]).toBe('grace-ok');
    await stopped;
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  });

  it('cancels queries still running when the grace period ends', async () => {
    const { server, query } = await startWithGrace(300);
    const marker = `grace_cancel_${Date.now()}`;
    const inflight = query(`SELECT pg_sleep(30), '${marker}'`);
    // The first statement on a connection waits for its catalog (the read allowlist): poll.
    await until('the statement to run', async () => (await backendsRunning(marker)) > 0, 5_000, 100);
    expect(await backendsRunning(marker)).toBe(1);
    const started = Date.now();
    await server.shutdown();
    expect(Date.now() - started).toBeLessThan(5000);
    const res = await inflight.catch(() => null);
    if (res) expect(res.status).toBeGreaterThanOrEqual(400);
    expect(await backendsRunning(marker)).toBe(0);
  });
});
