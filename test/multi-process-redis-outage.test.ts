// Redis going away under two dbq processes. Redis holds only rate-limit counts, so losing it
// must not stop dbq: both keep serving, each enforces the limits on its own (per process)
// and logs one warning; when Redis is back they share one count again. The test runs its own
// redis-server on a free port and kills it, so the machine's Redis is never disturbed.
import { cliActor } from '../src/audit/audit.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { closeServices, createServices } from '../src/services.ts';
import { createApiKey } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { createWorkspace } from '../src/workspaces/workspaces.ts';
import { freshPostgresDatabase, tempDir } from './support/harness.ts';
import { http, privateRedis, removeDir, sharedEnv, startDbq, type DbqProcess, type PrivateRedis } from './support/processes.ts';
import { until } from './support/wait.ts';

let store: { url: string; drop(): Promise<void> };
let redis: PrivateRedis;
let a: DbqProcess;
let b: DbqProcess;
const dirs: string[] = [];
const keys: Record<string, string> = {};

beforeAll(async () => {
  [store, redis] = await Promise.all([freshPostgresDatabase(), privateRedis()]);
  const dir = tempDir();
  dirs.push(dir);
  // info: the "Redis reachable again" line is logged at info.
  const env = sharedEnv({ storeUrl: store.url, dataDir: dir, redisUrl: redis.url, extra: { DBQ_LOG_LEVEL: 'info' } });
  const svc = await createServices(loadConfig({ ...env, DBQ_REDIS_URL: undefined }), { logger: createLogger('silent') });
  try {
    for (const slug of ['before', 'during', 'after']) {
      await createWorkspace(svc.db, { slug, plan: 'free' });
      await createUser(svc.db, { workspace: slug, email: `admin@${slug}.test`, role: 'admin' }, cliActor());
      keys[slug] = (await createApiKey(svc.db, { workspace: slug, email: `admin@${slug}.test`, name: 'k' })).secret;
    }
  } finally {
    await closeServices(svc);
  }
  const dirA = tempDir();
  const dirB = tempDir();
  dirs.push(dirA, dirB);
  [a, b] = await Promise.all([startDbq({ ...env, DBQ_DATA_DIR: dirA }), startDbq({ ...env, DBQ_DATA_DIR: dirB })]);
}, 90_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await redis?.stop();
  await store?.drop();
  for (const dir of dirs) removeDir(dir);
});

const get = (p: DbqProcess, slug: string) => http('GET', `${p.url}/w/${slug}/api/connections`, keys[slug]);
const remaining = async (p: DbqProcess, slug: string) => {
  const res = await get(p, slug);
  expect(res.status).toBe(200);
  return Number(res.headers.get('ratelimit-remaining'));
};
// The rate limiter's own lines (other components that use Redis log theirs).
const UNREACHABLE = 'Redis unreachable: rate limits are counted per process';
const REACHABLE = 'Redis reachable again: rate limits are shared';
const logged = (logs: DbqProcess['logs'], text: string) => logs.some((l) => typeof l.msg === 'string' && l.msg.includes(text));

const eventually = (what: string, check: () => boolean, ms = 10_000) => until(what, check, ms, 100);

describe('Redis going away', () => {
  it('keeps serving with per-process limits, warns once, and shares the count again when Redis is back', async () => {
    // Shared while Redis is up: the two processes count down one budget.
    expect(await remaining(a, 'before')).toBe(59);
    expect(await remaining(b, 'before')).toBe(58);

    // Logs from here on belong to the outage (on a loaded machine an earlier slow command may
    // already have logged its own warning and recovery).
    const mark = new Map([a, b].map((p) => [p, p.logs.length]));
    const since = (p: DbqProcess) => p.logs.slice(mark.get(p));
    await redis.stop();
    await eventually('a process to notice', () => logged(since(a), UNREACHABLE) || logged(since(b), UNREACHABLE), 5_000);

    // Each process now counts alone: A's 60 do not touch B's budget.
    for (let i = 1; i <= 60; i++) {
      const started = Date.now();
      const res = await get(a, 'during');
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-remaining')).toBe(String(60 - i));
      // Falling back does not wait on the dead server.
      expect(Date.now() - started).toBeLessThan(400);
    }
    expect((await get(a, 'during')).status).toBe(429);
    expect(await remaining(b, 'during')).toBe(59);
    await eventually('a warning in both', () => logged(since(a), UNREACHABLE) && logged(since(b), UNREACHABLE), 5_000);
    for (const p of [a, b]) {
      const warnings = since(p).filter((l) => typeof l.msg === 'string' && l.msg.includes(UNREACHABLE));
      expect(warnings[0]?.component).toBe('rate-limits');
      expect(warnings).toHaveLength(1);
      expect(warnings[0].level).toBe(40);
    }

    await redis.start();
    await eventually('both processes to reconnect', () => logged(since(a), REACHABLE) && logged(since(b), REACHABLE));
    // The restarted Redis is empty; the two processes count down one budget again.
    expect(await remaining(a, 'after')).toBe(59);
    expect(await remaining(b, 'after')).toBe(58);
    expect(await remaining(a, 'after')).toBe(57);
  }, 60_000);
});
