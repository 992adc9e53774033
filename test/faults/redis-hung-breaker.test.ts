// A hung Redis (not a dead one) used to add ~505 ms to every rate-limited request for
// as long as it hung — 200 requests took 101 s — and 2 s to every MCP relay look-up: the TCP
// connection stays open, so each command waited out its timeout before the per-process fallback
// answered. The breaker (src/limits/redis-breaker.ts) opens at the first failed command; from
// then on both fall back at once, and a background PING closes it once Redis answers again.
//
// The hung Redis is this test's own redis-server on a free port, SIGSTOPped (the machine's Redis
// on 6379 is never touched). The figures measured are printed.
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../support/harness.ts';
import { privateRedis, type PrivateRedis } from '../support/processes.ts';
import { until } from '../support/wait.ts';
import { getWorkspace } from '../../src/workspaces/workspaces.ts';

const prefix = `dbqtest:breaker:${process.pid}:${randomBytes(3).toString('hex')}`;
const LIMITS_BACK = 'Redis reachable again: rate limits are shared';
const RELAY_BACK = 'Redis reachable again: MCP messages are relayed';
const LIMITS_DOWN = 'Redis unreachable: rate limits are counted per process';

let redis: PrivateRedis;
let h: Harness;
let probe: Redis;
let countKey: string;
const logs: string[] = [];

beforeAll(async () => {
  redis = await privateRedis();
  h = await createHarness({ DBQ_REDIS_URL: redis.url, DBQ_REDIS_KEY_PREFIX: prefix }, { logs });
  // `other` is on the professional plan (300 a minute): every request counts in Redis.
  countKey = `${prefix}:requests:${(await getWorkspace(h.svc.db, 'other')).id}`;
  probe = new Redis(redis.url, { maxRetriesPerRequest: 1 });
}, 60_000);

afterAll(async () => {
  redis?.resume();
  probe?.disconnect();
  await h?.close();
  await redis?.stop();
});

const messages = () => logs.map((l) => JSON.parse(l) as { msg?: string; time: number; component?: string });
const logged = (text: string, since = 0) => messages().some((m) => m.time >= since && typeof m.msg === 'string' && m.msg.includes(text));

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}

const listConnections = () => h.call('GET', '/w/other/api/connections', h.otherKey);
const unknownSession = () =>
  h.call(
    'POST',
    '/w/other/mcp',
    h.otherKey,
    { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    { 'mcp-session-id': randomUUID(), accept: 'application/json, text/event-stream' },
  );

function summary(ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  const total = ms.reduce((a, b) => a + b, 0);
  return `total ${(total / 1000).toFixed(2)} s, first ${ms[0].toFixed(0)} ms, median ${sorted[Math.floor(sorted.length / 2)].toFixed(1)} ms, max ${sorted[sorted.length - 1].toFixed(0)} ms`;
}

const eventually = (what: string, check: () => Promise<boolean> | boolean, ms: number): Promise<number> => until(what, check, ms, 25);

describe('a hung Redis', () => {
  it('costs one timeout, not one per request; limits and the relay are shared again within ~2 s of it answering', async () => {
    // Shared while Redis answers.
    for (let i = 0; i < 3; i++) expect((await listConnections()).status).toBe(200);
    expect(await probe.zcard(countKey)).toBe(3);

    const hungAt = Date.now();
    redis.pause();
    const limited: number[] = [];
    let remaining = Infinity;
    for (let i = 0; i < 200; i++) {
      const { value, ms } = await timed(listConnections);
      expect(value.status).toBe(200);
      // Still limited meanwhile, by this process's own count.
      const now = Number(value.headers['ratelimit-remaining']);
      expect(now).toBeLessThan(remaining);
      remaining = now;
      limited.push(ms);
    }
    const relayed: number[] = [];
    for (let i = 0; i < 20; i++) {
      const { value, ms } = await timed(unknownSession);
      expect(value.status).toBe(404);
      relayed.push(ms);
    }
    console.info(`hung Redis, 200 rate-limited requests: ${summary(limited)}`);
    console.info(`hung Redis, 20 MCP look-ups of an unknown session: ${summary(relayed)}`);
    // Without the breaker: 200 × ~505 ms = 101 s, and 20 × 2 s = 40 s. Only the first request of
    // each pays its client's timeout (500 ms, 2 s); the bounds leave room for a loaded machine.
    expect(limited.reduce((a, b) => a + b, 0)).toBeLessThan(5_000);
    expect(limited.slice(1).filter((ms) => ms > 300)).toEqual([]);
    expect(relayed.reduce((a, b) => a + b, 0)).toBeLessThan(6_000);
    expect(relayed.slice(1).filter((ms) => ms > 300)).toEqual([]);
    expect(logged(LIMITS_DOWN, hungAt)).toBe(true);

    const resumedAt = Date.now();
    redis.resume();
    const limitsBack = await eventually('the rate limiter to close its breaker', () => logged(LIMITS_BACK, resumedAt), 5_000);
    const relayBack = await eventually('the relay to close its breaker', () => logged(RELAY_BACK, resumedAt), 5_000);
    console.info(`Redis answering again: rate limits shared after ${limitsBack.toFixed(0)} ms, relay after ${relayBack.toFixed(0)} ms`);
    expect(limitsBack).toBeLessThan(2_500);
    expect(relayBack).toBeLessThan(2_500);

    // Counted in Redis again: each request adds exactly one entry there.
    const before = await probe.zcard(countKey);
    expect((await listConnections()).status).toBe(200);
    expect(await probe.zcard(countKey)).toBe(before + 1);
  }, 60_000);
});
