// What broke: a read whose backend was terminated while it ran (pg_terminate_backend, a
// failover) was sent once more on a fresh connection, with a fresh timeout: a 20 s limit
// answered 504 after 22 s, and the statement ran again after the DBA had killed it. A read is
// re-sent only when the server answered nothing of its pipeline — an idle pooled connection the
// server had already dropped — and otherwise fails with 502, its history saying why.
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectionFailedError } from '../src/errors.ts';
import { createHarness, PG_URL, type Harness } from './support/harness.ts';
import { closeAllEngines, openEngine, postgresConfig, rejectionOf, run, uniqueName } from './support/engines.ts';
import { sleep } from './support/wait.ts';

let h: Harness;
let observer: pg.Client;

beforeAll(async () => {
  h = await createHarness();
  observer = new pg.Client({ connectionString: PG_URL });
  await observer.connect();
  const created = await h.call('POST', '/api/connections', h.adminKey, { name: 'pg', url: PG_URL });
  expect(created.status).toBe(201);
});
afterAll(async () => {
  for (const stop of watchers) stop();
  await closeAllEngines();
  await observer?.end();
  await h?.close();
});

/** Stops every watch loop, also those of a test that failed before stopping its own. */
const watchers: (() => void)[] = [];

/** Backends (other than the observer's) whose current statement carries `marker`. */
async function backendsRunning(marker: string): Promise<number[]> {
  const { rows } = await observer.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE query LIKE '%' || $1 || '%' AND state = 'active' AND pid <> pg_backend_pid()",
    [marker],
  );
  return rows.map((r) => r.pid);
}

/** Every backend seen running `marker` from now until stop(): the statement's executions. */
function watchExecutions(marker: string): { stop(): Promise<Set<number>>; first: Promise<number> } {
  const seen = new Set<number>();
  let done = false;
  let reportFirst: (pid: number) => void = () => {};
  const first = new Promise<number>((resolve) => (reportFirst = resolve));
  const loop = (async () => {
    while (!done) {
      for (const pid of await backendsRunning(marker)) {
        if (!seen.size) reportFirst(pid);
        seen.add(pid);
      }
      await sleep(20); // the watch's period
    }
  })().catch(() => {});
  watchers.push(() => (done = true));
  return {
    first,
    async stop() {
      // An absence has no event to wait for: long enough for a re-sent statement to show up.
      await sleep(700);
      done = true;
      await loop;
      return seen;
    },
  };
}

/** pg_terminate_backend from another process, waiting until the backend is gone. Synchronous
 * on purpose: this process reads nothing meanwhile, so the pooled client has not yet seen the
 * server's FATAL when the next read takes it from the pool. */
function terminateAndWaitBlocking(pid: number): void {
  // pg_stat_activity is a snapshot kept for the whole transaction unless cleared.
  const sql =
    `SELECT pg_terminate_backend(${pid}); DO $$ BEGIN FOR i IN 1..500 LOOP PERFORM pg_stat_clear_snapshot(); ` +
    `EXIT WHEN NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = ${pid}); PERFORM pg_sleep(0.01); END LOOP; END $$; ` +
    `SELECT pg_stat_clear_snapshot(); SELECT count(*) FROM pg_stat_activity WHERE pid = ${pid};`;
  const out = spawnSync('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-At', '-d', PG_URL, '-c', sql], {
    encoding: 'utf8',
    timeout: 15_000,
  });
  expect(out.status, out.stderr).toBe(0);
  expect(out.stdout.trim().split('\n').at(-1), 'the backend is gone').toBe('0');
}

describe('postgres: a read whose connection dies', () => {
  it('is re-sent once when the server had dropped the idle pooled connection before the read', async () => {
    const engine = openEngine(postgresConfig({ maxConnections: 1 }));
    const read = (sql: string) => run(engine, sql, { readOnly: true });
    const pid = Number((await read('SELECT pg_backend_pid()')).rows[0][0]);
    terminateAndWaitBlocking(pid);
    const next = await read('SELECT pg_backend_pid()');
    expect(Number(next.rows[0][0])).not.toBe(pid);
  });

  it('is not re-sent when its backend is terminated while it runs (engine)', async () => {
    const engine = openEngine(postgresConfig({ maxConnections: 1 }));
    const marker = uniqueName('killed_read');
    const watch = watchExecutions(marker);
    const pending = rejectionOf(run(engine, `SELECT pg_sleep(5) /* ${marker} */`, { readOnly: true, timeoutMs: 20_000 }));
    const victim = await watch.first;
    const killed = Date.now();
    await observer.query('SELECT pg_terminate_backend($1)', [victim]);
    const err = await pending;
    expect(Date.now() - killed).toBeLessThan(2_000);
    expect(err).toBeInstanceOf(ConnectionFailedError);
    expect(err.message).toMatch(/while the statement ran .*it was not re-run/);
    expect([...(await watch.stop())]).toEqual([victim]);
  });

  it('is not re-sent when its backend is terminated while it runs (API: 502, history says why)', async () => {
    const marker = uniqueName('killed_api_read');
    // A read for the guard (pg_sleep is not), running until stopped.
    const sql = `SELECT count(*) /* ${marker} */ FROM generate_series(1, 100000) a, generate_series(1, 100000) b`;
    const watch = watchExecutions(marker);
    const pending = h.call('POST', '/api/query', h.adminKey, { connectionId: 'pg', sql, timeoutMs: 20_000 });
    const victim = await watch.first;
    const killed = Date.now();
    await observer.query('SELECT pg_terminate_backend($1)', [victim]);
    const res = await pending;
    expect(Date.now() - killed).toBeLessThan(2_000);
    expect(res.status).toBe(502);
    expect(res.body.code).toBe('connection_failed');
    expect(res.body.error).toMatch(/the connection was lost while the statement ran \(.*\); it was not re-run/);
    expect([...(await watch.stop())]).toEqual([victim]);

    const history = await h.call('GET', `/api/query/history?limit=5&search=${encodeURIComponent(marker)}`, h.adminKey);
    const entries = history.body.data.entries;
    expect(entries).toHaveLength(1);
    expect(entries[0].status).toBe('failed');
    expect(entries[0].error).toBe(res.body.error);
  });
});
