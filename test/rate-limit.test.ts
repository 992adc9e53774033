// Rate limits in one process: the sliding window itself (in memory and in the machine's Redis,
// with a 2-second window so the test can watch it slide), plan budgets and their headers
// through the real /api, plan changes applying at the next request, and the per-address
// limiter on failed authentications (X-Forwarded-For only from a trusted proxy).
// Several processes sharing one budget: test/multi-process*.test.ts.
import { cliActor } from '../src/audit/audit.ts';
import { randomBytes } from 'node:crypto';
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { installErrorHandling } from '../src/http-kit/error-handler.ts';
import { requestAdmitted, requestLimitHook, sendLimitHeaders, startRequestLimit } from '../src/limits/http.ts';
import { addressKey, consumeRequest, createLimits, type LimitState, type Limits } from '../src/limits/limits.ts';
import { createLogger } from '../src/logger.ts';
import path from 'node:path';
import Database from 'better-sqlite3';
import { listHistory } from '../src/history/history.ts';
import { countMessages } from '../src/mcp/limits.ts';
import type { Services } from '../src/services.ts';
import type { Principal } from '../src/workspaces/api-keys.ts';
import { authenticateKey, createApiKey } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { createWorkspace, getWorkspace, setWorkspacePlan } from '../src/workspaces/workspaces.ts';
import { createHarness, workspaceSqliteDir, type Harness } from './support/harness.ts';
import { deleteRedisKeys, MACHINE_REDIS_URL } from './support/processes.ts';
import { sleep } from './support/wait.ts';

const prefix = `dbqtest:${process.pid}:${randomBytes(4).toString('hex')}`;
const silent = createLogger('silent');
const ws = (plan: 'free' | 'professional' | 'enterprise', id = 'ws_test') => ({ workspace: { id, slug: 'x', plan } });

function limited(state: LimitState) {
  if (state.unlimited) throw new Error('expected a limited answer');
  return state;
}

afterAll(async () => {
  await deleteRedisKeys(MACHINE_REDIS_URL, prefix);
});

for (const backend of ['memory', 'redis'] as const) {
  describe(`sliding window (${backend})`, () => {
    let limits: Limits;
    beforeAll(() => {
      limits = createLimits({
        redisUrl: backend === 'redis' ? MACHINE_REDIS_URL : null,
        keyPrefix: `${prefix}:${backend}`,
        logger: silent,
        planLimits: { free: 3, professional: 5 },
        authFailures: 2,
        windowSeconds: 2,
      });
    });
    afterAll(() => limits.close());

    it('counts only the last window: a slot frees when the oldest request leaves it, not all at once', async () => {
      const t0 = Date.now();
      expect(limited(await limits.consumeRequest(ws('free', 'ws_slide'))).remaining).toBe(2);
      // Real time on purpose, in this test and the next: the window is what is under test, and
      // on Redis it runs on the server's clock, which fake timers cannot move.
      await sleep(1100);
      expect(limited(await limits.consumeRequest(ws('free', 'ws_slide'))).remaining).toBe(1);
      const third = limited(await limits.consumeRequest(ws('free', 'ws_slide')));
      expect(third).toMatchObject({ allowed: true, remaining: 0, limit: 3, shared: backend === 'redis' });
      const refused = limited(await limits.consumeRequest(ws('free', 'ws_slide')));
      expect(refused.allowed).toBe(false);
      // The first request leaves the window 2 s after t0: well under a second from now.
      expect(refused.resetSeconds).toBe(1);
      await sleep(Math.max(0, t0 + 2100 - Date.now()));
      // A fixed window would have reset to 3 here; the sliding one freed exactly one slot.
      expect(limited(await limits.consumeRequest(ws('free', 'ws_slide'))).allowed).toBe(true);
      expect(limited(await limits.consumeRequest(ws('free', 'ws_slide'))).allowed).toBe(false);
    });

    it('does not log refused requests: hammering while refused does not delay recovery', async () => {
      for (let i = 0; i < 3; i++) expect(limited(await limits.consumeRequest(ws('free', 'ws_hammer'))).allowed).toBe(true);
      for (let i = 0; i < 20; i++) expect(limited(await limits.consumeRequest(ws('free', 'ws_hammer'))).allowed).toBe(false);
      await sleep(2100);
      expect(limited(await limits.consumeRequest(ws('free', 'ws_hammer'))).remaining).toBe(2);
    });

    it('keeps the count across a plan change; only the limit compared with it changes', async () => {
      for (let i = 0; i < 3; i++) await limits.consumeRequest(ws('free', 'ws_plan'));
      expect(limited(await limits.consumeRequest(ws('free', 'ws_plan'))).allowed).toBe(false);
      const upgraded = limited(await limits.consumeRequest(ws('professional', 'ws_plan')));
      expect(upgraded).toMatchObject({ allowed: true, limit: 5, remaining: 1 });
      expect(await limits.consumeRequest(ws('enterprise', 'ws_plan'))).toEqual({ unlimited: true, allowed: true });
      expect(limited(await limits.consumeRequest(ws('free', 'ws_plan'))).allowed).toBe(false);
    });

    it('takes a batch all or none', async () => {
      expect(limited(await limits.consumeRequest(ws('free', 'ws_batch'), 2))).toMatchObject({ allowed: true, remaining: 1 });
      expect(limited(await limits.consumeRequest(ws('free', 'ws_batch'), 2)).allowed).toBe(false);
      expect(limited(await limits.consumeRequest(ws('free', 'ws_batch'), 1))).toMatchObject({ allowed: true, remaining: 0 });
    });

    it('keeps workspaces apart', async () => {
      for (let i = 0; i < 3; i++) await limits.consumeRequest(ws('free', 'ws_a'));
      expect(limited(await limits.consumeRequest(ws('free', 'ws_a'))).allowed).toBe(false);
      expect(limited(await limits.consumeRequest(ws('free', 'ws_b'))).allowed).toBe(true);
    });

    it('counts failed authentications per address, IPv6 per /64', async () => {
      await limits.recordAuthFailure('2001:db8:1:2::5');
      await limits.recordAuthFailure('2001:db8:1:2:ffff::9');
      expect(limited(await limits.recordAuthFailure('2001:db8:1:2::77')).allowed).toBe(false);
      expect(limited(await limits.recordAuthFailure('2001:db8:1:3::5')).allowed).toBe(true);
      expect(limited(await limits.recordAuthFailure('192.0.2.1')).allowed).toBe(true);
    });
  });
}

// The connection-loss case runs across processes (test/multi-process-redis-outage.test.ts);
// this is the other way a count can fail while the connection stays up: the command errors.
describe('a Redis command that fails', () => {
  it('is answered by the per-process count with one warning, and shared again once it works', async () => {
    const lines: Array<{ level: string; msg: string }> = [];
    const logger = {
      child: () => logger,
      warn: (_obj: unknown, msg: string) => lines.push({ level: 'warn', msg }),
      info: (msg: string) => lines.push({ level: 'info', msg }),
    } as unknown as Parameters<typeof createLimits>[0]['logger'];
    const keyPrefix = `${prefix}:failing`;
    const limits = createLimits({ redisUrl: MACHINE_REDIS_URL, keyPrefix, logger, planLimits: { free: 3 } });
    const redis = new Redis(MACHINE_REDIS_URL);
    try {
      expect(limited(await limits.consumeRequest(ws('free', 'ws_fail')))).toMatchObject({ allowed: true, shared: true, remaining: 2 });
      // A string where the script expects a sorted set: every command on the key fails (WRONGTYPE).
      await redis.set(`${keyPrefix}:requests:ws_fail`, 'x');
      for (let i = 0; i < 3; i++)
        expect(limited(await limits.consumeRequest(ws('free', 'ws_fail')))).toMatchObject({ allowed: true, shared: false });
      expect(limited(await limits.consumeRequest(ws('free', 'ws_fail')))).toMatchObject({ allowed: false, shared: false });
      expect(lines.filter((l) => l.level === 'warn')).toHaveLength(1);
      await redis.del(`${keyPrefix}:requests:ws_fail`);
      expect(limited(await limits.consumeRequest(ws('free', 'ws_fail')))).toMatchObject({ allowed: true, shared: true, remaining: 2 });
      expect(lines.map((l) => l.level)).toEqual(['warn', 'info']);
    } finally {
      redis.disconnect();
      await limits.close();
    }
  });
});

// The query route lets its connection look-up overlap the count's round trip: such a route is
// marked awaitsRequestLimit and its handler awaits requestAdmitted before any effect.
describe('a route that awaits the count itself', () => {
  it('skips the preHandler wait, and a refused request stops at requestAdmitted with 429 and headers', async () => {
    const limits = createLimits({ redisUrl: null, keyPrefix: `${prefix}:own`, logger: silent, planLimits: { free: 2 } });
    const app = Fastify();
    installErrorHandling(app);
    sendLimitHeaders(app);
    const steps: string[] = [];
    app.addHook('onRequest', (request, _reply, done) => {
      startRequestLimit({ limits }, request, ws('free', 'ws_own'));
      done();
    });
    app.addHook('preHandler', requestLimitHook());
    app.post('/own', { config: { awaitsRequestLimit: true } }, async (request) => {
      steps.push('read');
      await requestAdmitted(request);
      steps.push('effect');
      return { ok: true };
    });
    app.post('/plain', async () => {
      steps.push('plain');
      return { ok: true };
    });
    try {
      expect((await app.inject({ method: 'POST', url: '/own' })).statusCode).toBe(200);
      expect((await app.inject({ method: 'POST', url: '/plain' })).statusCode).toBe(200);
      steps.length = 0;
      const own = await app.inject({ method: 'POST', url: '/own' });
      expect(own.statusCode).toBe(429);
      expect(own.headers['ratelimit-remaining']).toBe('0');
      expect(own.headers['retry-after']).toBeDefined();
      const plain = await app.inject({ method: 'POST', url: '/plain' });
      expect(plain.statusCode).toBe(429);
      // The marked handler ran up to its wait and no further; the plain one never ran.
      expect(steps).toEqual(['read']);
    } finally {
      await app.close();
      await limits.close();
    }
  });
});

// An MCP POST may carry a JSON-RPC batch; API.md counts each message, and dbq takes a batch
// whole or refuses it whole (a refused batch runs nothing, so it must not spend budget).
describe('an MCP batch', () => {
  it('counts all its messages at once, or none of them', async () => {
    const limits = createLimits({ redisUrl: null, keyPrefix: `${prefix}:batch`, logger: silent, planLimits: { free: 3 } });
    const app = Fastify();
    installErrorHandling(app);
    const principal = ws('free', 'ws_batch') as unknown as Principal;
    app.post('/mcp', async (request, reply) => {
      await countMessages({ limits } as unknown as Services, request, reply, principal, request.body);
      return { ok: true };
    });
    const post = (n: number) =>
      app.inject({ method: 'POST', url: '/mcp', payload: Array.from({ length: n }, (_, id) => ({ jsonrpc: '2.0', id, method: 'ping' })) });
    try {
      const two = await post(2);
      expect(two.statusCode).toBe(200);
      expect(two.headers['ratelimit-remaining']).toBe('1');
      // Two more do not fit in the one left: refused whole, and the one is still there.
      expect((await post(2)).statusCode).toBe(429);
      const one = await post(1);
      expect(one.statusCode).toBe(200);
      expect(one.headers['ratelimit-remaining']).toBe('0');
      expect((await post(1)).statusCode).toBe(429);
    } finally {
      await app.close();
      await limits.close();
    }
  });
});

describe('DBQ_TRUST_PROXY', () => {
  it("takes a boolean or the proxies' addresses, and refuses anything else at start", async () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ DBQ_TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ DBQ_TRUST_PROXY: '0' }).trustProxy).toBe(false);
    expect(loadConfig({ DBQ_TRUST_PROXY: '10.0.0.0/8, loopback,2001:db8::1' }).trustProxy).toBe('10.0.0.0/8,loopback,2001:db8::1');
    expect(() => loadConfig({ DBQ_TRUST_PROXY: 'proxy.internal' })).toThrow(ConfigError);
    expect(() => loadConfig({ DBQ_TRUST_PROXY: '10.0.0.0/8/1' })).toThrow(/DBQ_TRUST_PROXY/);
    expect(() => loadConfig({ DBQ_REDIS_URL: 'http://127.0.0.1:6379' })).toThrow(/DBQ_REDIS_URL/);
  });
});

describe('addressKey', () => {
  it('reduces IPv6 to its /64 and unwraps IPv4-mapped addresses', () => {
    expect(addressKey('203.0.113.9')).toBe('203.0.113.9');
    expect(addressKey('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('2001:0db8:0001:0002:0003:0004:0005:0006')).toBe('2001:db8:1:2::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
  });
});

describe('plan limits through /api', () => {
  let h: Harness;
  let freeKey: string;
  let proKey: string;

  beforeAll(async () => {
    h = await createHarness();
    await createWorkspace(h.svc.db, { slug: 'freews', plan: 'free' });
    await createUser(h.svc.db, { workspace: 'freews', email: 'a@free.test', role: 'admin' }, cliActor());
    freeKey = (await createApiKey(h.svc.db, { workspace: 'freews', email: 'a@free.test', name: 'k' })).secret;
    await createWorkspace(h.svc.db, { slug: 'prows', plan: 'professional' });
    await createUser(h.svc.db, { workspace: 'prows', email: 'a@pro.test', role: 'admin' }, cliActor());
    proKey = (await createApiKey(h.svc.db, { workspace: 'prows', email: 'a@pro.test', name: 'k' })).secret;
  });
  afterAll(() => h.close());

  it('allows a free workspace 60 requests a minute with RateLimit headers, then 429 with Retry-After', async () => {
    for (let i = 1; i <= 60; i++) {
      const res = await h.call('GET', '/w/freews/api/connections', freeKey);
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-limit']).toBe('60');
      expect(res.headers['ratelimit-remaining']).toBe(String(60 - i));
      expect(Number(res.headers['ratelimit-reset'])).toBeGreaterThanOrEqual(59);
      expect(Number(res.headers['ratelimit-reset'])).toBeLessThanOrEqual(60);
    }
    const res = await h.call('GET', '/w/freews/api/connections', freeKey);
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ success: false, error: 'Rate limit exceeded', code: 'rate_limited' });
    expect(res.headers['ratelimit-limit']).toBe('60');
    expect(res.headers['ratelimit-remaining']).toBe('0');
    const retry = Number(res.headers['retry-after']);
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
    expect(res.headers['ratelimit-reset']).toBe(res.headers['retry-after']);
    // Every mount of the API counts against the same workspace budget.
    expect((await h.call('POST', '/w/freews/api/v1/query', freeKey, { connectionId: 'x', sql: 'SELECT 1' })).status).toBe(429);
  });

  it('puts the headers on a limited request that fails later too', async () => {
    const res = await h.call('POST', '/w/prows/api/query', proKey, { connectionId: 'nope', sql: 'SELECT 1' });
    expect(res.status).toBe(404);
    expect(res.headers['ratelimit-limit']).toBe('300');
    expect(res.headers['ratelimit-remaining']).toBe('299');
  });

  // The count starts at authentication and is awaited after the body is parsed, so a body that
  // fails to parse answers before that wait: it is still counted and still carries the headers.
  it('counts a request whose body does not parse and puts the headers on its 400', async () => {
    const res = await h.call('POST', '/w/prows/api/query', proKey, '{not json', { 'content-type': 'application/json' });
    expect(res.status).toBe(400);
    expect(res.headers['ratelimit-limit']).toBe('300');
    const remaining = Number(res.headers['ratelimit-remaining']);
    const next = await h.call('GET', '/w/prows/api/connections', proKey);
    expect(Number(next.headers['ratelimit-remaining'])).toBe(remaining - 1);
  });

  // POST /query awaits the count in its handler, overlapped with the connection look-up: a
  // refused request must still run nothing, record nothing, and answer 429 before any 404.
  it('refuses a query past the limit before it runs or is recorded: sync, async, unknown connection', async () => {
    await createWorkspace(h.svc.db, { slug: 'tightws', plan: 'free' });
    await createUser(h.svc.db, { workspace: 'tightws', email: 'a@tight.test', role: 'admin' }, cliActor());
    const key = (await createApiKey(h.svc.db, { workspace: 'tightws', email: 'a@tight.test', name: 'k' })).secret;
    const database = `tight-${process.pid}.db`;
    const setup = new Database(path.join(workspaceSqliteDir(h, 'tightws'), database));
    setup.exec('CREATE TABLE t (x int)');
    setup.close();
    expect((await h.call('POST', '/w/tightws/api/connections', key, { name: 'lite', engine: 'sqlite', database })).status).toBe(201);
    const admitted = await h.call('POST', '/w/tightws/api/query', key, { connectionId: 'lite', sql: 'SELECT count(*) FROM t' });
    expect(admitted.status).toBe(200);
    for (let i = 3; i <= 60; i++) expect((await h.call('GET', '/w/tightws/api/connections', key)).status).toBe(200);

    const write = { connectionId: 'lite', sql: 'INSERT INTO t VALUES (1)' };
    for (const body of [write, { ...write, async: true }, { connectionId: 'nope', sql: 'SELECT 1' }]) {
      const res = await h.call('POST', '/w/tightws/api/query', key, body);
      expect(res.status).toBe(429);
      expect(res.body.code).toBe('rate_limited');
      expect(res.headers['retry-after']).toBeDefined();
    }
    // An absence has no event to wait for: an async query that slipped through would have run by now.
    await sleep(200);
    const file = new Database(path.join(workspaceSqliteDir(h, 'tightws'), database), { readonly: true });
    try {
      expect(file.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 0 });
    } finally {
      file.close();
    }
    const principal = await authenticateKey(h.svc.db, key);
    const history = await listHistory(h.svc.db, principal, { limit: 50 });
    expect(history.entries.map((e) => e.sql)).toEqual(['SELECT count(*) FROM t']);
  });

  // API.md: past the limit the answer is 429. The count is awaited after the body is read, so a
  // body that fails first must not turn a refused request into a 400 or 413.
  it('answers 429, not 400 or 413, to a request past the limit whose body also fails', async () => {
    await createWorkspace(h.svc.db, { slug: 'spentws', plan: 'free' });
    await createUser(h.svc.db, { workspace: 'spentws', email: 'a@spent.test', role: 'admin' }, cliActor());
    const key = (await createApiKey(h.svc.db, { workspace: 'spentws', email: 'a@spent.test', name: 'k' })).secret;
    for (let i = 1; i <= 60; i++) expect((await h.call('GET', '/w/spentws/api/connections', key)).status).toBe(200);
    const bad = [
      ['{not json', { 'content-type': 'application/json' }],
      [
        JSON.stringify({ connectionId: 'x', sql: `SELECT '${'x'.repeat(h.svc.config.bodyLimit)}'` }),
        { 'content-type': 'application/json' },
      ],
    ] as const;
    for (const [body, headers] of bad) {
      const res = await h.call('POST', '/w/spentws/api/query', key, body, { ...headers });
      expect(res.status).toBe(429);
      expect(res.body.code).toBe('rate_limited');
      expect(res.headers['retry-after']).toBeDefined();
      expect(res.headers['ratelimit-remaining']).toBe('0');
    }
  });

  it('never limits an enterprise workspace and sends no headers', async () => {
    for (let i = 0; i < 150; i++) {
      const res = await h.call('GET', '/api/connections', h.adminKey);
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-limit']).toBeUndefined();
      expect(res.headers['retry-after']).toBeUndefined();
    }
  });

  it('applies a plan change at the next request', async () => {
    expect((await h.call('GET', '/w/freews/api/connections', freeKey)).status).toBe(429);
    await setWorkspacePlan(h.svc.db, 'freews', 'professional', cliActor());
    const res = await h.call('GET', '/w/freews/api/connections', freeKey);
    expect(res.status).toBe(200);
    expect(res.headers['ratelimit-limit']).toBe('300');
    // 60 admitted before the change, this one makes 61.
    expect(res.headers['ratelimit-remaining']).toBe('239');
    await setWorkspacePlan(h.svc.db, 'freews', 'enterprise', cliActor());
    expect((await h.call('GET', '/w/freews/api/connections', freeKey)).headers['ratelimit-limit']).toBeUndefined();
    await setWorkspacePlan(h.svc.db, 'freews', 'free', cliActor());
    expect((await h.call('GET', '/w/freews/api/connections', freeKey)).status).toBe(429);
  });

  it('does not count public routes (no key, no principal)', async () => {
    const res = await h.call('GET', '/w/prows/api/openapi.json', null);
    expect(res.status).toBe(200);
    expect(res.headers['ratelimit-limit']).toBeUndefined();
  });

  it('offers consumeRequest to other front doors (MCP counts each message with it)', async () => {
    const before = await h.call('GET', '/w/prows/api/connections', proKey);
    const { id } = await getWorkspace(h.svc.db, 'prows');
    const state = await consumeRequest(h.svc, { workspace: { id, slug: 'prows', plan: 'professional' } });
    const after = await h.call('GET', '/w/prows/api/connections', proKey);
    expect(limited(state).remaining).toBe(Number(before.headers['ratelimit-remaining']) - 1);
    expect(Number(after.headers['ratelimit-remaining'])).toBe(limited(state).remaining - 1);
  });
});

describe('failed authentications per client address', () => {
  const bad = 'dbq_' + 'x'.repeat(40);
  const call = (h: Harness, key: string | null, from: string, headers: Record<string, string> = {}) =>
    h.app.inject({
      method: 'GET',
      url: '/api/connections',
      remoteAddress: from,
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
    });

  describe('without a trusted proxy', () => {
    let h: Harness;
    beforeAll(async () => {
      h = await createHarness();
    });
    afterAll(() => h.close());

    it('answers 401 twenty times a minute, then 429 with Retry-After, while a valid key from the same address works', async () => {
      for (let i = 0; i < 20; i++) expect((await call(h, i % 2 ? bad : null, '198.51.100.7')).statusCode).toBe(401);
      const refused = await call(h, bad, '198.51.100.7');
      expect(refused.statusCode).toBe(429);
      expect(refused.json()).toEqual({ success: false, error: 'Rate limit exceeded', code: 'rate_limited' });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(refused.headers['ratelimit-limit']).toBeUndefined();
      expect((await call(h, h.adminKey, '198.51.100.7')).statusCode).toBe(200);
      // Another address has its own budget.
      expect((await call(h, bad, '198.51.100.8')).statusCode).toBe(401);
    });

    it('ignores X-Forwarded-For: a client cannot claim a fresh address', async () => {
      for (let i = 0; i < 20; i++) await call(h, bad, '198.51.100.9', { 'x-forwarded-for': `203.0.113.${i}` });
      expect((await call(h, bad, '198.51.100.9', { 'x-forwarded-for': '203.0.113.200' })).statusCode).toBe(429);
    });
  });

  describe('behind a trusted proxy (DBQ_TRUST_PROXY=loopback)', () => {
    let h: Harness;
    beforeAll(async () => {
      h = await createHarness({ DBQ_TRUST_PROXY: 'loopback' });
    });
    afterAll(() => h.close());

    it('counts the client address the proxy reports', async () => {
      for (let i = 0; i < 20; i++) expect((await call(h, bad, '127.0.0.1', { 'x-forwarded-for': '203.0.113.50' })).statusCode).toBe(401);
      expect((await call(h, bad, '127.0.0.1', { 'x-forwarded-for': '203.0.113.50' })).statusCode).toBe(429);
      expect((await call(h, bad, '127.0.0.1', { 'x-forwarded-for': '203.0.113.51' })).statusCode).toBe(401);
      expect((await call(h, h.adminKey, '127.0.0.1', { 'x-forwarded-for': '203.0.113.50' })).statusCode).toBe(200);
    });

    it('reads X-Forwarded-For from the right: entries the client wrote itself do not count', async () => {
      for (let i = 0; i < 20; i++) await call(h, bad, '127.0.0.1', { 'x-forwarded-for': `10.9.9.${i}, 203.0.113.60` });
      expect((await call(h, bad, '127.0.0.1', { 'x-forwarded-for': '10.9.9.250, 203.0.113.60' })).statusCode).toBe(429);
    });

    it('does not trust X-Forwarded-For from an address that is not a proxy', async () => {
      for (let i = 0; i < 20; i++) await call(h, bad, '198.51.100.20', { 'x-forwarded-for': `203.0.113.${100 + i}` });
      expect((await call(h, bad, '198.51.100.20', { 'x-forwarded-for': '203.0.113.199' })).statusCode).toBe(429);
    });
  });
});

describe("limits in the machine's Redis", () => {
  let h: Harness;
  let key: string;
  const redisPrefix = `${prefix}:http`;
  beforeAll(async () => {
    h = await createHarness({ DBQ_REDIS_URL: MACHINE_REDIS_URL, DBQ_REDIS_KEY_PREFIX: redisPrefix });
    await createWorkspace(h.svc.db, { slug: 'redisws', plan: 'free' });
    await createUser(h.svc.db, { workspace: 'redisws', email: 'a@r.test', role: 'admin' }, cliActor());
    key = (await createApiKey(h.svc.db, { workspace: 'redisws', email: 'a@r.test', name: 'k' })).secret;
  });
  afterAll(() => h.close());

  it('counts there, under DBQ_REDIS_KEY_PREFIX', async () => {
    const res = await h.call('GET', '/w/redisws/api/connections', key);
    expect(res.headers['ratelimit-remaining']).toBe('59');
    const redis = new Redis(MACHINE_REDIS_URL);
    try {
      const wsId = (await getWorkspace(h.svc.db, 'redisws')).id;
      expect(await redis.zcard(`${redisPrefix}:requests:${wsId}`)).toBe(1);
      expect(await redis.pttl(`${redisPrefix}:requests:${wsId}`)).toBeGreaterThan(55_000);
    } finally {
      redis.disconnect();
    }
  });
});
