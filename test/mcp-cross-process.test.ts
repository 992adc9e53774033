// MCP without sticky sessions: two real `dbq serve` processes on one fresh PostgreSQL store and
// the machine's Redis. Sessions are opened on A and their messages sent to B (the SDK clients
// get a fetch that sends those requests to B's port), as a load balancer without affinity
// would; B checks each message as A would, counts it, relays it to A through Redis and answers
// with A's reply (SSE: the answer arrives on A's stream). Misuse is refused at B, a revoked
// key closes the session on A, and once A is gone B answers 404 for its sessions.
import { cliActor } from '../src/audit/audit.ts';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { closeServices, createServices, type Services } from '../src/services.ts';
import { createApiKey, revokeApiKey } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { createWorkspace } from '../src/workspaces/workspaces.ts';
import { freshPostgresDatabase, PG_URL, tempDir } from './support/harness.ts';
import { dataOf, eventually, textOf } from './support/mcp-harness.ts';
import { backendsRunning } from './support/pg-activity.ts';
import { deleteRedisKeys, http, MACHINE_REDIS_URL, removeDir, sharedEnv, startDbq, type DbqProcess } from './support/processes.ts';
import { until } from './support/wait.ts';

let store: { url: string; drop(): Promise<void> };
let env: Record<string, string>;
let svc: Services;
const dirs: string[] = [];
let a: DbqProcess;
let b: DbqProcess;
const keys: Record<'main' | 'second' | 'rival' | 'leaver', { id: string; secret: string }> = {} as never;
const clients: Client[] = [];

beforeAll(async () => {
  store = await freshPostgresDatabase();
  const provisionDir = tempDir();
  dirs.push(provisionDir);
  env = sharedEnv({ storeUrl: store.url, dataDir: provisionDir, redisUrl: MACHINE_REDIS_URL });
  // Kept open for the revocation test (the store is what every process reads keys from).
  svc = await createServices(loadConfig({ ...env, DBQ_REDIS_URL: undefined }), { logger: createLogger('silent') });
  await createWorkspace(svc.db, { slug: 'acme', plan: 'professional' });
  await createWorkspace(svc.db, { slug: 'rival', plan: 'professional' });
  await createUser(svc.db, { workspace: 'acme', email: 'ana@acme.test', role: 'admin' }, cliActor());
  await createUser(svc.db, { workspace: 'acme', email: 'leo@acme.test', role: 'read_only' }, cliActor());
  await createUser(svc.db, { workspace: 'rival', email: 'rita@rival.test', role: 'admin' }, cliActor());
  for (const [name, workspace, email] of [
    ['main', 'acme', 'ana@acme.test'],
    ['second', 'acme', 'ana@acme.test'],
    ['rival', 'rival', 'rita@rival.test'],
    ['leaver', 'acme', 'leo@acme.test'],
  ] as const) {
    const { apiKey, secret } = await createApiKey(svc.db, { workspace, email, name });
    keys[name] = { id: apiKey.id, secret };
  }
  // Each process has its own data dir, as on separate hosts: only the store and Redis are shared.
  const dirA = tempDir();
  const dirB = tempDir();
  dirs.push(dirA, dirB);
  [a, b] = await Promise.all([startDbq({ ...env, DBQ_DATA_DIR: dirA }), startDbq({ ...env, DBQ_DATA_DIR: dirB })]);
  const created = await http('POST', `${a.url}/w/acme/api/connections`, keys.main.secret, { name: 'pg', url: PG_URL });
  expect(created.status).toBe(201);
}, 90_000);

afterAll(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  await Promise.all([a?.stop(), b?.stop()]);
  if (svc) await closeServices(svc);
  await deleteRedisKeys(MACHINE_REDIS_URL, env.DBQ_REDIS_KEY_PREFIX);
  await store?.drop();
  for (const dir of dirs) removeDir(dir);
});

interface Sent {
  method: string;
  port: string;
  status: number;
}

/** A fetch that sends to B what `toB` picks (by method, and whether the session exists yet),
 * the rest to A, and records where each request went and how it was answered. */
function steering(toB: (method: string) => boolean, sent: Sent[]): FetchLike {
  return async (input, init) => {
    const url = new URL(input);
    const method = init?.method ?? 'GET';
    if (toB(method)) url.port = new URL(b.url).port;
    const res = await fetch(url, init);
    sent.push({ method, port: url.port, status: res.status });
    return res;
  };
}

function portOf(p: DbqProcess): string {
  return new URL(p.url).port;
}

async function sseOnAPostingToB(
  key: string,
  keyIn: 'query' | 'header',
): Promise<{ client: Client; sent: Sent[]; sessionId: () => string }> {
  const sent: Sent[] = [];
  let sessionId = '';
  const steer = steering((method) => method === 'POST', sent);
  const fetchVia: FetchLike = (input, init) => {
    const id = new URL(input).searchParams.get('sessionId');
    if (id) sessionId = id;
    return steer(input, init);
  };
  const url = new URL(`${a.url}/w/acme/sse${keyIn === 'query' ? `?api_key=${key}` : ''}`);
  const headers = keyIn === 'header' ? { authorization: `Bearer ${key}` } : undefined;
  const client = new Client({ name: 'cross-process', version: '1' });
  await client.connect(new SSEClientTransport(url, { fetch: fetchVia, requestInit: { headers } }));
  clients.push(client);
  return { client, sent, sessionId: () => sessionId };
}

async function streamableOnAThenB(key: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport; sent: Sent[] }> {
  const sent: Sent[] = [];
  let initialized = false;
  const transport = new StreamableHTTPClientTransport(new URL(`${a.url}/w/acme/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
    // Only the initialize POST goes to A (it opens the session there); everything after to B.
    fetch: steering(() => {
      const later = initialized;
      initialized = true;
      return later;
    }, sent),
  });
  const client = new Client({ name: 'cross-process', version: '1' });
  await client.connect(transport);
  clients.push(client);
  return { client, transport, sent };
}

const ping = (id: number) => ({ jsonrpc: '2.0', id, method: 'ping' });
const streamableHeaders = (sessionId: string) => ({ accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId });

describe('MCP sessions across two processes (no sticky sessions)', () => {
  it("SSE: a stream opened on A takes its POSTs at B (key-less, ?api_key= client); answers arrive on A's stream", async () => {
    const { client, sent, sessionId } = await sseOnAPostingToB(keys.main.secret, 'query');
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toContain('execute_query');
    const listed = dataOf(await client.callTool({ name: 'list_connections', arguments: {} }));
    expect(listed.connections.map((c: { name: string }) => c.name)).toEqual(['pg']);
    const result = dataOf(
      await client.callTool({
        name: 'execute_query',
        arguments: { connectionId: 'pg', sql: 'SELECT 41 + 1 AS answer, $1::text AS who', params: ['b'] },
      }),
    );
    expect(result.rows).toEqual([[42, 'b']]);
    const refused = await client.callTool({ name: 'execute_query', arguments: { connectionId: 'nope', sql: 'SELECT 1' } });
    expect(textOf(refused)).toContain('Connection not found');

    const posts = sent.filter((s) => s.method === 'POST');
    expect(posts.length).toBeGreaterThanOrEqual(5);
    expect(posts.every((s) => s.port === portOf(b) && s.status === 202)).toBe(true);
    expect(sent.filter((s) => s.method === 'GET').every((s) => s.port === portOf(a))).toBe(true);
    expect(sessionId()).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('SSE with the key in the header of every POST works the same', async () => {
    const { client, sent } = await sseOnAPostingToB(keys.main.secret, 'header');
    const result = dataOf(await client.callTool({ name: 'execute_query', arguments: { connectionId: 'pg', sql: 'SELECT 7 AS n' } }));
    expect(result.rows).toEqual([[7]]);
    expect(sent.filter((s) => s.method === 'POST').every((s) => s.port === portOf(b) && s.status === 202)).toBe(true);
  });

  it('Streamable HTTP: initialize on A, then every request (POSTs, the GET stream, DELETE) at B', async () => {
    const { client, transport, sent } = await streamableOnAThenB(keys.main.secret);
    const listed = dataOf(await client.callTool({ name: 'list_connections', arguments: {} }));
    expect(listed.connections.map((c: { name: string }) => c.name)).toEqual(['pg']);
    const result = dataOf(
      await client.callTool({ name: 'execute_query', arguments: { connectionId: 'pg', sql: 'SELECT 6 * 7 AS answer' } }),
    );
    expect(result.rows).toEqual([[42]]);
    const tables = dataOf(await client.callTool({ name: 'list_tables', arguments: { connectionId: 'pg' } }));
    expect(Array.isArray(tables.tables)).toBe(true);

    expect(sent[0]).toMatchObject({ method: 'POST', port: portOf(a), status: 200 });
    const later = sent.slice(1);
    expect(later.filter((s) => s.method === 'POST').length).toBeGreaterThanOrEqual(4);
    expect(later.every((s) => s.port === portOf(b) && s.status < 300)).toBe(true);
    // The client's standing GET stream was relayed from A too (200 text/event-stream).
    await eventually(() => sent.some((s) => s.method === 'GET'), 5000);
    expect(sent.find((s) => s.method === 'GET')).toMatchObject({ port: portOf(b), status: 200 });

    // DELETE at B closes the session on A: the id is dead everywhere.
    const sessionId = transport.sessionId!;
    await transport.terminateSession();
    expect(sent.at(-1)).toMatchObject({ method: 'DELETE', port: portOf(b), status: 200 });
    for (const p of [a, b]) {
      const res = await http('POST', `${p.url}/w/acme/mcp`, keys.main.secret, ping(1), streamableHeaders(sessionId));
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ success: false, error: 'Session not found', code: 'not_found' });
    }
  });

  it('count each relayed message once, at the process that received it', async () => {
    const { transport } = await streamableOnAThenB(keys.main.secret);
    const sessionId = transport.sessionId!;
    const first = await http('POST', `${b.url}/w/acme/mcp`, keys.main.secret, ping(101), streamableHeaders(sessionId));
    const second = await http('POST', `${b.url}/w/acme/mcp`, keys.main.secret, ping(102), streamableHeaders(sessionId));
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(second.body).toMatchObject({ jsonrpc: '2.0', id: 102, result: {} });
    expect(first.headers.get('ratelimit-limit')).toBe('300');
    expect(Number(first.headers.get('ratelimit-remaining')) - Number(second.headers.get('ratelimit-remaining'))).toBe(1);
  });

  it('a session that ends on A while a relayed call waits is a prompt 404 at B', async () => {
    const { transport } = await streamableOnAThenB(keys.main.secret);
    const sessionId = transport.sessionId!;
    const marker = `relay_cut_${process.pid}`;
    const slowCall = {
      jsonrpc: '2.0',
      id: 31,
      method: 'tools/call',
      params: { name: 'execute_query', arguments: { connectionId: 'pg', sql: `SELECT pg_sleep(3) AS ${marker}` } },
    };
    const started = Date.now();
    const inFlight = http('POST', `${b.url}/w/acme/mcp`, keys.main.secret, slowCall, streamableHeaders(sessionId));
    await until('the relayed call to run on A', async () => (await backendsRunning(marker)) > 0, 2_000);
    expect((await http('DELETE', `${a.url}/w/acme/mcp`, keys.main.secret, undefined, { 'mcp-session-id': sessionId })).status).toBe(200);
    const cut = await inFlight;
    expect(cut.status).toBe(404);
    expect(Date.now() - started).toBeLessThan(2500);
  });

  it('refuse at B what A would refuse: another key, another workspace, a bad key, the wrong transport', async () => {
    const sse = await sseOnAPostingToB(keys.main.secret, 'query');
    await sse.client.listTools();
    const sseId = sse.sessionId();
    const streamable = await streamableOnAThenB(keys.main.secret);
    const mcpId = streamable.transport.sessionId!;
    const notFound = { success: false, error: 'Session not found', code: 'not_found' };

    // Another key of the same user; another workspace's key at its own address.
    for (const [url, key] of [
      [`${b.url}/w/acme/messages?sessionId=${sseId}`, keys.second.secret],
      [`${b.url}/w/rival/messages?sessionId=${sseId}`, keys.rival.secret],
      // An SSE session id on /mcp.
      [`${b.url}/w/acme/mcp`, keys.main.secret],
    ] as const) {
      const res = await http('POST', url, key, ping(5), url.endsWith('/mcp') ? streamableHeaders(sseId) : {});
      expect(res.status).toBe(404);
      expect(res.body).toEqual(notFound);
    }
    for (const [url, key] of [
      [`${b.url}/w/acme/mcp`, keys.second.secret],
      [`${b.url}/w/rival/mcp`, keys.rival.secret],
    ] as const) {
      const res = await http('POST', url, key, ping(6), streamableHeaders(mcpId));
      expect(res.status).toBe(404);
      expect(res.body).toEqual(notFound);
    }
    // A key-less POST to the other workspace's address with the session: still 404.
    expect((await http('POST', `${b.url}/w/rival/messages?sessionId=${sseId}`, null, ping(7))).status).toBe(404);
    // A bad key is a 401 whatever the id, and does not end the session.
    const bad = await http('POST', `${b.url}/w/acme/messages?sessionId=${sseId}`, 'dbq_' + 'x'.repeat(38), ping(8));
    expect(bad.status).toBe(401);

    // Both sessions are unharmed.
    expect(
      dataOf(await sse.client.callTool({ name: 'execute_query', arguments: { connectionId: 'pg', sql: 'SELECT 1 AS one' } })).rows,
    ).toEqual([[1]]);
    expect(
      dataOf(await streamable.client.callTool({ name: 'execute_query', arguments: { connectionId: 'pg', sql: 'SELECT 2 AS two' } })).rows,
    ).toEqual([[2]]);
  });

  it('a revoked key is refused at B and its session on A is closed', async () => {
    const { client, sessionId } = await sseOnAPostingToB(keys.leaver.secret, 'query');
    await client.listTools();
    // A's registration of the session in Redis (sealed), removed when A closes the session.
    const redis = new Redis(MACHINE_REDIS_URL);
    const binding = `${env.DBQ_REDIS_KEY_PREFIX}:mcp:session:${sessionId()}`;
    try {
      expect(await redis.exists(binding)).toBe(1);
      expect(await redis.get(binding)).not.toContain(keys.leaver.secret);
      await revokeApiKey(svc.db, 'acme', keys.leaver.id);
      // Authentication reads the store on every message; give the other processes' memo a moment.
      await eventually(
        async () => (await http('POST', `${b.url}/w/acme/messages?sessionId=${sessionId()}`, null, ping(9))).status === 401,
        5000,
      );
      await eventually(async () => (await redis.exists(binding)) === 0, 5000);
    } finally {
      redis.disconnect();
    }
    const after = await http('POST', `${b.url}/w/acme/messages?sessionId=${sessionId()}`, null, ping(10));
    expect(after.status).toBe(404);
  });

  it("once A is gone, B answers 404 Session not found for A's sessions", async () => {
    const sse = await sseOnAPostingToB(keys.main.secret, 'query');
    await sse.client.listTools();
    const streamable = await streamableOnAThenB(keys.main.secret);
    const mcpId = streamable.transport.sessionId!;
    // A call relayed through B and running on A when A dies: B notices A's channel has no
    // subscriber any more and answers 404 within its probe interval (2 s), not the relay timeout.
    const marker = `relay_dies_${process.pid}`;
    const slowCall = {
      jsonrpc: '2.0',
      id: 13,
      method: 'tools/call',
      params: { name: 'execute_query', arguments: { connectionId: 'pg', sql: `SELECT pg_sleep(6) AS ${marker}` } },
    };
    const started = Date.now();
    const inFlight = http('POST', `${b.url}/w/acme/mcp`, keys.main.secret, slowCall, streamableHeaders(mcpId));
    await until('the relayed call to run on A', async () => (await backendsRunning(marker)) > 0, 3_000);
    a.child.kill('SIGKILL');
    await new Promise((resolve) => a.child.once('exit', resolve));
    const cut = await inFlight;
    expect(cut.status).toBe(404);
    expect(Date.now() - started).toBeLessThan(5500);

    const viaSse = await http('POST', `${b.url}/w/acme/messages?sessionId=${sse.sessionId()}`, null, ping(11));
    expect(viaSse.status).toBe(404);
    expect(viaSse.body).toEqual({ success: false, error: 'Session not found', code: 'not_found' });
    const viaMcp = await http('POST', `${b.url}/w/acme/mcp`, keys.main.secret, ping(12), streamableHeaders(mcpId));
    expect(viaMcp.status).toBe(404);
    expect(viaMcp.body).toEqual({ success: false, error: 'Session not found', code: 'not_found' });
    // B itself is fine: a new session opened on it works.
    const fresh = new Client({ name: 'after', version: '1' });
    await fresh.connect(
      new StreamableHTTPClientTransport(new URL(`${b.url}/w/acme/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${keys.main.secret}` } },
      }),
    );
    clients.push(fresh);
    expect(
      dataOf(await fresh.callTool({ name: 'execute_query', arguments: { connectionId: 'pg', sql: 'SELECT 3 AS three' } })).rows,
    ).toEqual([[3]]);
  });
});
