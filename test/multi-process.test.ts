// Two real `dbq serve` processes on one fresh PostgreSQL store and the machine's Redis, the
// production layout in miniature: they share one rate-limit budget per workspace, apply a plan
// change made with the CLI at the next request, share the per-address budget of failed
// authentications, see each other's connections and history at once, and refuse a revoked key
// or a disabled user's key within a second (look-ups are cached per process and dropped on the
// store's change notifications: test/store-change-notify.test.ts).
// Requests come from 127.0.0.1 with DBQ_TRUST_PROXY=loopback, so each test names its own
// client address in X-Forwarded-For and the failed-authentication budgets stay apart.
import { cliActor } from '../src/audit/audit.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { closeServices, createServices } from '../src/services.ts';
import { createApiKey } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { createWorkspace } from '../src/workspaces/workspaces.ts';
import { freshPostgresDatabase, PG_URL, tempDir } from './support/harness.ts';
import { deleteRedisKeys, http, MACHINE_REDIS_URL, removeDir, runCli, sharedEnv, startDbq, type DbqProcess } from './support/processes.ts';

let store: { url: string; drop(): Promise<void> };
let env: Record<string, string>;
const dirs: string[] = [];
let a: DbqProcess;
let b: DbqProcess;
const keys: Record<string, { id: string; secret: string }> = {};

const WORKSPACES = [
  ['shared-free', 'free'],
  ['plan-change', 'free'],
  ['big', 'enterprise'],
  ['revocation', 'professional'],
  ['together', 'enterprise'],
] as const;

beforeAll(async () => {
  store = await freshPostgresDatabase();
  const provisionDir = tempDir();
  dirs.push(provisionDir);
  env = sharedEnv({ storeUrl: store.url, dataDir: provisionDir, redisUrl: MACHINE_REDIS_URL, extra: { DBQ_TRUST_PROXY: 'loopback' } });
  const svc = await createServices(loadConfig({ ...env, DBQ_REDIS_URL: undefined }), { logger: createLogger('silent') });
  try {
    for (const [slug, plan] of WORKSPACES) {
      await createWorkspace(svc.db, { slug, plan });
      await createUser(svc.db, { workspace: slug, email: `admin@${slug}.test`, role: 'admin' }, cliActor());
      const { apiKey, secret } = await createApiKey(svc.db, { workspace: slug, email: `admin@${slug}.test`, name: 'admin' });
      keys[slug] = { id: apiKey.id, secret };
    }
    await createUser(svc.db, { workspace: 'revocation', email: 'leaver@revocation.test', role: 'read_only' }, cliActor());
    const { apiKey, secret } = await createApiKey(svc.db, { workspace: 'revocation', email: 'leaver@revocation.test', name: 'leaver' });
    keys.leaver = { id: apiKey.id, secret };
  } finally {
    await closeServices(svc);
  }
  // Each process gets its own data dir, as on separate hosts: only the store and Redis are shared.
  const dirA = tempDir();
  const dirB = tempDir();
  dirs.push(dirA, dirB);
  [a, b] = await Promise.all([startDbq({ ...env, DBQ_DATA_DIR: dirA }), startDbq({ ...env, DBQ_DATA_DIR: dirB })]);
}, 90_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await deleteRedisKeys(MACHINE_REDIS_URL, env.DBQ_REDIS_KEY_PREFIX);
  await store?.drop();
  for (const dir of dirs) removeDir(dir);
});

const from = (address: string) => ({ 'x-forwarded-for': address });
const get = (p: DbqProcess, slug: string, key: string, address = '203.0.113.1') =>
  http('GET', `${p.url}/w/${slug}/api/connections`, key, undefined, from(address));

describe('two dbq processes, one PostgreSQL store, one Redis', () => {
  it('share one budget: the 61st request of a free workspace across both is refused by both', async () => {
    for (let i = 1; i <= 60; i++) {
      const res = await get(i % 2 ? a : b, 'shared-free', keys['shared-free'].secret);
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-limit')).toBe('60');
      expect(res.headers.get('ratelimit-remaining')).toBe(String(60 - i));
      expect(Number(res.headers.get('ratelimit-reset'))).toBeGreaterThan(0);
    }
    for (const p of [a, b]) {
      const res = await get(p, 'shared-free', keys['shared-free'].secret);
      expect(res.status).toBe(429);
      expect(res.body).toEqual({ success: false, error: 'Rate limit exceeded', code: 'rate_limited' });
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(res.headers.get('ratelimit-remaining')).toBe('0');
    }
  });

  it('never limit an enterprise workspace, and send it no RateLimit headers', async () => {
    const answers = await Promise.all(Array.from({ length: 120 }, (_, i) => get(i % 2 ? a : b, 'big', keys.big.secret)));
    expect(answers.filter((r) => r.status !== 200)).toEqual([]);
    expect(answers.filter((r) => r.headers.get('ratelimit-limit') !== null)).toEqual([]);
  });

  it('apply a plan change made with the CLI at the next request, in both', async () => {
    const key = keys['plan-change'].secret;
    for (let i = 0; i < 60; i++) expect((await get(i % 2 ? a : b, 'plan-change', key)).status).toBe(200);
    expect((await get(a, 'plan-change', key)).status).toBe(429);

    await runCli(env, 'workspace', 'set-plan', 'plan-change', 'professional');
    const upA = await get(a, 'plan-change', key);
    const upB = await get(b, 'plan-change', key);
    expect([upA.status, upB.status]).toEqual([200, 200]);
    expect(upA.headers.get('ratelimit-limit')).toBe('300');
    // The count carried over: 60 admitted on free, then these two.
    expect(upB.headers.get('ratelimit-remaining')).toBe('238');

    await runCli(env, 'workspace', 'set-plan', 'plan-change', 'enterprise');
    const ent = await get(b, 'plan-change', key);
    expect(ent.status).toBe(200);
    expect(ent.headers.get('ratelimit-limit')).toBeNull();

    await runCli(env, 'workspace', 'set-plan', 'plan-change', 'free');
    expect((await get(a, 'plan-change', key)).status).toBe(429);
    expect((await get(b, 'plan-change', key)).status).toBe(429);
  });

  it('share the failed-authentication budget of a client address; its valid keys keep working', async () => {
    const bad = 'dbq_' + 'y'.repeat(40);
    for (let i = 0; i < 20; i++) expect((await get(i % 2 ? a : b, 'big', bad, '203.0.113.66')).status).toBe(401);
    for (const p of [a, b]) {
      const refused = await get(p, 'big', bad, '203.0.113.66');
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect((await get(p, 'big', keys.big.secret, '203.0.113.66')).status).toBe(200);
      expect((await get(p, 'big', bad, '203.0.113.67')).status).toBe(401);
    }
  });

  it("refuse a key revoked with the CLI, and a disabled user's key, in every process within a second", async () => {
    const admin = keys.revocation.secret;
    const address = '203.0.113.90';
    for (const p of [a, b]) {
      expect((await get(p, 'revocation', admin, address)).status).toBe(200);
      expect((await get(p, 'revocation', keys.leaver.secret, address)).status).toBe(200);
    }

    await runCli(env, 'key', 'revoke', '--workspace', 'revocation', keys.revocation.id);
    const revokedAt = Date.now();
    for (const p of [a, b]) expect((await get(p, 'revocation', admin, address)).status).toBe(401);
    expect(Date.now() - revokedAt).toBeLessThan(1000);

    await runCli(env, 'user', 'disable', '--workspace', 'revocation', '--email', 'leaver@revocation.test');
    const disabledAt = Date.now();
    for (const p of [a, b]) expect((await get(p, 'revocation', keys.leaver.secret, address)).status).toBe(401);
    expect(Date.now() - disabledAt).toBeLessThan(1000);
  });

  it('see a connection created on one process at once on the other, edits too, and one history', async () => {
    const key = keys.together.secret;
    const created = await http('POST', `${a.url}/w/together/api/connections`, key, { name: 'shared-pg', url: PG_URL });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.data.connection.id as string;

    const onB = await http('POST', `${b.url}/w/together/api/query`, key, { connectionId: 'shared-pg', sql: "SELECT 'ran on b' AS marker" });
    expect(onB.status, JSON.stringify(onB.body)).toBe(200);
    const onA = await http('POST', `${a.url}/w/together/api/query`, key, { connectionId: id, sql: "SELECT 'ran on a' AS marker" });
    expect(onA.status).toBe(200);

    for (const p of [a, b]) {
      const history = await http('GET', `${p.url}/w/together/api/query/history?search=${encodeURIComponent('ran on')}`, key);
      expect(history.body.data.entries.map((e: { sql: string }) => e.sql)).toEqual([
        "SELECT 'ran on a' AS marker",
        "SELECT 'ran on b' AS marker",
      ]);
    }

    // B opened a pool for the connection; an edit on A must reach it at B's next request.
    const patched = await http('PATCH', `${a.url}/w/together/api/connections/${id}`, key, { readOnly: true });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const write = await http('POST', `${b.url}/w/together/api/query`, key, { connectionId: id, sql: 'CREATE TEMP TABLE mp_probe (x int)' });
    expect(write.status).toBe(403);

    expect((await http('DELETE', `${b.url}/w/together/api/connections/${id}`, key)).status).toBeLessThan(300);
    const gone = await http('POST', `${a.url}/w/together/api/query`, key, { connectionId: id, sql: 'SELECT 1' });
    expect(gone.status).toBe(404);
  });
});
