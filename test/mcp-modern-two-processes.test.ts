// The 2026-07-28 revision needs no relay and no affinity: two real `dbq serve` processes on one
// fresh PostgreSQL store and no Redis at all (so no relay can exist), and one SDK v2 client
// whose requests go to A and B in turn, as a round-robin load balancer would send them. Every
// call is answered, by both processes, and a tool created through B reaches a
// subscriptions/listen stream open on A (the store tells A of the change).
import { cliActor } from '../src/audit/audit.ts';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { closeServices, createServices, type Services } from '../src/services.ts';
import { createApiKey } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { createWorkspace } from '../src/workspaces/workspaces.ts';
import { freshPostgresDatabase, PG_URL, tempDir } from './support/harness.ts';
import { dataOf, eventually, MODERN_REVISION } from './support/mcp-harness.ts';
import { http, removeDir, sharedEnv, startDbq, type DbqProcess } from './support/processes.ts';

let store: { url: string; drop(): Promise<void> };
let svc: Services;
const dirs: string[] = [];
let a: DbqProcess;
let b: DbqProcess;
let key: string;
const clients: Client[] = [];

beforeAll(async () => {
  store = await freshPostgresDatabase();
  const provisionDir = tempDir();
  dirs.push(provisionDir);
  const env = sharedEnv({ storeUrl: store.url, dataDir: provisionDir, redisUrl: null });
  svc = await createServices(loadConfig(env), { logger: createLogger('silent') });
  await createWorkspace(svc.db, { slug: 'acme', plan: 'enterprise' });
  await createUser(svc.db, { workspace: 'acme', email: 'ana@acme.test', role: 'admin' }, cliActor());
  key = (await createApiKey(svc.db, { workspace: 'acme', email: 'ana@acme.test', name: 'agent' })).secret;
  const dirA = tempDir();
  const dirB = tempDir();
  dirs.push(dirA, dirB);
  [a, b] = await Promise.all([startDbq({ ...env, DBQ_DATA_DIR: dirA }), startDbq({ ...env, DBQ_DATA_DIR: dirB })]);
  const created = await http('POST', `${a.url}/w/acme/api/connections`, key, { name: 'pg', url: PG_URL });
  expect(created.status).toBe(201);
}, 90_000);

afterAll(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  await Promise.all([a?.stop(), b?.stop()]);
  if (svc) await closeServices(svc);
  await store?.drop();
  for (const dir of dirs) removeDir(dir);
});

const portOf = (p: DbqProcess) => new URL(p.url).port;

/** A v2 client on A's URL whose requests `pick` sends to A or B; records who answered what. */
async function client(pick: (n: number, body: string) => DbqProcess, answered: { port: string; status: number; body: string }[]) {
  let n = 0;
  const steering: typeof fetch = async (input, init) => {
    const url = new URL(String(input));
    const body = String(init?.body ?? '');
    url.port = portOf(pick(n++, body));
    const res = await fetch(url, init);
    answered.push({ port: url.port, status: res.status, body });
    return res;
  };
  const c = new Client({ name: 'round-robin', version: '1' }, { versionNegotiation: { mode: { pin: MODERN_REVISION } } });
  await c.connect(
    new StreamableHTTPClientTransport(new URL(`${a.url}/w/acme/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
      fetch: steering,
    }),
  );
  clients.push(c);
  return c;
}

describe('one 2026-07-28 client, two processes, no relay', () => {
  it('requests sent to A and B in turn are all answered, by both', async () => {
    const answered: { port: string; status: number; body: string }[] = [];
    // A, A, B, B, …: discover and list on A, then calls and lists alternate between the two.
    const c = await client((n) => (Math.floor(n / 2) % 2 === 0 ? a : b), answered);
    for (let i = 0; i < 10; i++) {
      const { tools } = await c.listTools(undefined, { cacheMode: 'bypass' });
      expect(tools.map((t) => t.name)).toContain('execute_query');
      const result = dataOf(
        await c.callTool({ name: 'execute_query', arguments: { connectionId: 'pg', sql: 'SELECT $1::int AS i', params: [i] } }),
      );
      expect(result.rows).toEqual([[i]]);
    }
    expect(answered.every((r) => r.status === 200)).toBe(true);
    const calls = (p: DbqProcess, method: string) => answered.filter((r) => r.port === portOf(p) && r.body.includes(`"${method}"`)).length;
    for (const p of [a, b]) {
      expect(calls(p, 'tools/call')).toBe(5);
      expect(calls(p, 'tools/list')).toBe(5);
    }
  });

  it('a tool created through B reaches a listen stream open on A', async () => {
    const answered: { port: string; status: number; body: string }[] = [];
    // The listen stream stays on A; everything else goes to B.
    const c = await client((_n, body) => (body.includes('"subscriptions/listen"') ? a : b), answered);
    let changes = 0;
    c.setNotificationHandler('notifications/tools/list_changed', () => {
      changes++;
    });
    const subscription = await c.listen({ toolsListChanged: true });
    const created = await http('POST', `${b.url}/w/acme/api/tools`, key, {
      name: 'answer',
      description: 'The answer',
      connectionId: 'pg',
      sql: 'SELECT 42 AS answer',
    });
    expect(created.status).toBe(201);
    await eventually(() => changes > 0, 5000);
    const { tools } = await c.listTools();
    expect(tools.find((t) => t.name === 'answer')?.annotations).toMatchObject({ readOnlyHint: true });
    expect(dataOf(await c.callTool({ name: 'answer', arguments: {} })).rows).toEqual([[42]]);
    expect(answered.some((r) => r.port === portOf(a) && r.body.includes('"subscriptions/listen"'))).toBe(true);
    await subscription.close();
  });
});
