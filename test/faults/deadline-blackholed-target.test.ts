// `timeoutMs` used not to be a bound. With a silently dead network to a PostgreSQL
// target, a read with timeoutMs 5000 answered after 27.5 s (2000: 25.3 s): the catalog change
// check opened its own session with a 15 s timeout, then waited for a cancel connection's 5 s
// connect, then the statement needed a new connect of its own. Now a request has one deadline
// (start + timeoutMs) that the catalog load or check, the pool slot, the connect, the statement
// and its cancel all honour, and it answers as a statement timeout does (504 query_timeout).
//
// The dead network is a TCP proxy this test controls (test/support/tcp-proxy.ts) between dbq
// and the machine's PostgreSQL: once blackholed it accepts, swallows and never answers or
// closes. Each path gets a connection record (and so a pool) of its own.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../support/harness.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';
import { sleep, until } from '../support/wait.ts';

const TIMEOUT_MS = 2_000;
/** The answer may come this long after the deadline: the watch's backstop (250 ms) and a
 * loaded 2-core machine's timer lag. */
const SLACK_MS = 600;
/** Warming a pool loads the connection's catalog, which a loaded machine may take longer than
 * TIMEOUT_MS to do: warm-up reads get the default timeout. */
const WARM_MS = 30_000;

let h: Harness;
let admin: pg.Client;
const proxies: TcpProxy[] = [];

beforeAll(async () => {
  h = await createHarness();
  admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
  await admin.connect();
}, 60_000);

afterAll(async () => {
  for (const p of proxies) await p.close();
  await admin?.end();
  await h?.close();
});

/** A connection record reaching PostgreSQL through a proxy of its own. */
async function proxiedConnection(name: string, maxConnections = 4): Promise<TcpProxy> {
  const proxy = await startTcpProxy({ host: '127.0.0.1', port: 5432 });
  proxies.push(proxy);
  const res = await h.call('POST', '/api/connections', h.adminKey, {
    name,
    url: `postgres://postgres@127.0.0.1:${proxy.port}/test`,
    maxConnections,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return proxy;
}

async function read(
  connectionId: string,
  sql = 'SELECT 1 AS one',
  timeoutMs = TIMEOUT_MS,
): Promise<{ status: number; code: string | undefined; ms: number }> {
  const start = performance.now();
  const res = await h.call('POST', '/api/query', h.readerKey, { connectionId, sql, timeoutMs });
  return { status: res.status, code: res.body?.code, ms: performance.now() - start };
}

/** Loads the catalog, then reads again so the catalog was just checked: the next read within
 * CHECK_MS (1 s) goes straight to the statement. */
async function warm(connectionId: string, sql: string): Promise<void> {
  for (let i = 0; i < 2; i++) expect((await read(connectionId, sql, WARM_MS)).status).toBe(200);
}

function expectTimedOutInTime(answer: { status: number; code: string | undefined; ms: number }): void {
  expect(answer, JSON.stringify(answer)).toMatchObject({ status: 504, code: 'query_timeout' });
  expect(answer.ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
  expect(answer.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
}

describe('a read with timeoutMs 2000 answers 504 within ~2.5 s on a silently dead network', () => {
  it('fresh pool: the catalog load needs a connection the network never gives', async () => {
    const proxy = await proxiedConnection('bh-fresh');
    proxy.blackhole();
    const answer = await read('bh-fresh');
    console.log(`fresh pool, connect pending: ${answer.status} ${answer.code} after ${Math.round(answer.ms)} ms`);
    expectTimedOutInTime(answer);
  });

  it('warm pool, catalog check due: the check session waits on a connection that went dead', async () => {
    const proxy = await proxiedConnection('bh-check');
    await warm('bh-check', 'SELECT 1');
    // Real time on purpose: what is under test is the check that falls due once CHECK_MS passed.
    await sleep(1_100);
    proxy.blackhole();
    const answer = await read('bh-check');
    console.log(`warm pool, check due: ${answer.status} ${answer.code} after ${Math.round(answer.ms)} ms`);
    expectTimedOutInTime(answer);
  });

  it('warm pool, catalog fresh: the statement itself is sent into the void (no wait for the cancel)', async () => {
    const proxy = await proxiedConnection('bh-statement');
    await warm('bh-statement', 'SELECT 1');
    proxy.blackhole();
    const answer = await read('bh-statement');
    console.log(`warm pool, statement: ${answer.status} ${answer.code} after ${Math.round(answer.ms)} ms`);
    expectTimedOutInTime(answer);
  });

  it('catalog fresh but no idle connection: the connect for the statement is bounded too', async () => {
    const proxy = await proxiedConnection('bh-connect');
    await warm('bh-connect', "SELECT 'bh-connect-warm'");
    // The server ends the pooled backends; the pool drops them, so the next read must connect.
    await admin.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'dbq' AND query LIKE '%bh-connect-warm%'",
    );
    // Nothing outside the pool says it has dropped them: a moment for the sockets' ends to arrive.
    await sleep(100);
    proxy.blackhole();
    const answer = await read('bh-connect');
    console.log(`no idle connection, connect pending: ${answer.status} ${answer.code} after ${Math.round(answer.ms)} ms`);
    expectTimedOutInTime(answer);
  });

  it('pool full: a read waiting for the one slot (held by a read lost to the network) ends at its deadline', async () => {
    const proxy = await proxiedConnection('bh-slot', 1);
    await warm('bh-slot', 'SELECT 1');
    proxy.blackhole();
    // The second read is sent just after the first, which takes the one slot first.
    const [first, second] = await Promise.all([read('bh-slot'), sleep(50).then(() => read('bh-slot'))]);
    console.log(
      `pool full: first ${first.status} after ${Math.round(first.ms)} ms, second ${second.status} ${second.code} after ${Math.round(second.ms)} ms`,
    );
    expectTimedOutInTime(first);
    expectTimedOutInTime(second);
  });

  it('records the timed-out read in history, and serves again once the network is back', async () => {
    const proxy = await proxiedConnection('bh-back');
    await warm('bh-back', 'SELECT 1');
    // As above: the catalog check falls due, so the lost read goes through it too.
    await sleep(1_100);
    proxy.blackhole();
    expectTimedOutInTime(await read('bh-back', "SELECT 'bh-back-lost'"));
    const history = await h.call('GET', `/api/query/history?limit=5&search=${encodeURIComponent('bh-back-lost')}`, h.adminKey);
    expect(history.body.data.entries.map((e: { status: string }) => e.status)).toEqual(['timed_out']);
    proxy.restore();
    // The lost connections are abandoned behind the answers (cancel grace 2 s); then new ones.
    await until('a read to succeed again', async () => (await read('bh-back', 'SELECT 1', 5_000)).status === 200, 50_000, 500);
  }, 90_000);
});
