// The 2026-07-28 revision at `/mcp` (SDK v2, src/mcp/modern-handlers.ts) beside the 2025-era
// sessions on the same URL: the v2 client pinned to the revision works with no initialize and
// no Mcp-Session-Id; a v1 client still opens a 2025-11-25 session there; a raw client whose
// Mcp-Method header disagrees with its body is refused with a readable error and nothing runs;
// every request is authenticated on its own; tools/list carries ttlMs with cacheScope private,
// each key gets its own list (also through a shared client cache partitioned per key); curated
// tools carry readOnlyHint or destructiveHint from the guard's verdict on their SQL; a tool
// change reaches an open subscriptions/listen stream; each request counts against the plan.
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryResponseCacheStore, PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliActor } from '../src/audit/audit.ts';
import { createApiKey } from '../src/workspaces/api-keys.ts';
import { setWorkspacePlan } from '../src/workspaces/workspaces.ts';
import { createMcpHarness, dataOf, eventually, MODERN_REVISION, textOf, type McpHarness } from './support/mcp-harness.ts';

let m: McpHarness;
let toolsOnlyKey: string;

beforeAll(async () => {
  m = await createMcpHarness();
  for (const tool of [
    {
      name: 'cheap_items',
      description: 'Items under a price',
      connectionId: 'lite',
      sql: 'SELECT name FROM items WHERE price < :max',
      parameters: [{ name: 'max', type: 'number', required: true }],
    },
    {
      name: 'add_item',
      description: 'Adds an item',
      connectionId: 'lite',
      sql: 'INSERT INTO items (name, price) VALUES (:name, 1)',
      parameters: [{ name: 'name', type: 'string', required: true }],
    },
  ]) {
    const res = await m.h.call('POST', '/api/tools', m.h.adminKey, tool);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  toolsOnlyKey = (
    await createApiKey(m.h.svc.db, { workspace: 'default', email: 'reader@acme.test', name: 'agent', scope: { toolsOnly: true } })
  ).secret;
});
afterAll(async () => {
  await m?.close();
});

const envelope = {
  [PROTOCOL_VERSION_META_KEY]: MODERN_REVISION,
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** One hand-made 2026-07-28 POST: the body's method and the headers as given. */
function rawPost(body: Record<string, unknown>, headers: Record<string, string>, key = m.h.adminKey) {
  return fetch(`${m.origin}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN_REVISION,
      authorization: `Bearer ${key}`,
      ...headers,
    },
    body: JSON.stringify(body),
  });
}

const itemCount = async () =>
  ((await m.h.call('POST', '/api/query', m.h.adminKey, { connectionId: 'lite', sql: 'SELECT count(*) AS n FROM items' })).body as any).data
    .rows[0][0];

describe('the v2 client on 2026-07-28', () => {
  it('connects without initialize or a session, lists and calls tools', async () => {
    const seen: { method: string; body: string; session: string | null }[] = [];
    const recording: typeof fetch = async (url, init) => {
      const res = await fetch(url, init);
      seen.push({ method: init?.method ?? 'GET', body: String(init?.body ?? ''), session: res.headers.get('mcp-session-id') });
      return res;
    };
    const client = await m.connectModern(m.h.adminKey, { fetch: recording });
    expect(client.getProtocolEra()).toBe('modern');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['execute_query', 'list_connections', 'cheap_items', 'add_item']));
    const result = dataOf(
      await client.callTool({ name: 'execute_query', arguments: { connectionId: 'lite', sql: 'SELECT 40 + 2 AS answer' } }),
    );
    expect(result.rows).toEqual([[42]]);
    expect(seen.some((s) => s.body.includes('"initialize"'))).toBe(false);
    expect(seen.some((s) => s.body.includes('"server/discover"'))).toBe(true);
    expect(seen.every((s) => s.session === null)).toBe(true);
    expect(m.sessions.size).toBe(0);
  });

  it('a curated tool runs with its parameters; a failing call is a tool error naming why', async () => {
    const client = await m.connectModern(m.h.readerKey);
    const cheap = dataOf(await client.callTool({ name: 'cheap_items', arguments: { max: 1 } }));
    expect(cheap.rows).toEqual([['plum']]);
    const before = await itemCount();
    const refused = await client.callTool({
      name: 'execute_query',
      arguments: { connectionId: 'lite', sql: "DELETE FROM items WHERE name = 'apple'" },
    });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/permission/i);
    expect(await itemCount()).toBe(before);
  });

  it("serves /w/{workspace}/mcp the same way, with that workspace's keys only", async () => {
    const client = await m.connectModern(m.h.adminKey, { workspace: 'default' });
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await expect(m.connectModern(m.h.otherKey, { workspace: 'default' })).rejects.toThrow();
  });
});

describe('2025-era clients on the same URL', () => {
  it('the v1 client opens a 2025-11-25 session and calls tools as before', async () => {
    const client = new V1Client({ name: 'v1', version: '1' });
    const transport = new V1Transport(new URL(`${m.origin}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${m.h.adminKey}` } },
    });
    await client.connect(transport);
    try {
      expect(transport.sessionId).toMatch(/^[0-9a-f-]{36}$/);
      expect(transport.protocolVersion).toBe('2025-11-25');
      const result = dataOf(
        await client.callTool({ name: 'execute_query', arguments: { connectionId: 'lite', sql: 'SELECT 7 AS seven' } }),
      );
      expect(result.rows).toEqual([[7]]);
      const tools = (await client.listTools()) as Record<string, unknown>;
      expect(tools.ttlMs).toBeUndefined();
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });
});

describe('raw 2026-07-28 requests', () => {
  const list = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope } };

  it('tools/list answers with ttlMs and cacheScope private, and no session id', async () => {
    const res = await rawPost(list, { 'mcp-method': 'tools/list' });
    expect(res.status).toBe(200);
    expect(res.headers.get('mcp-session-id')).toBeNull();
    const body = (await res.json()) as any;
    expect(body.result.ttlMs).toBe(30_000);
    expect(body.result.cacheScope).toBe('private');
  });

  it('an Mcp-Method header that disagrees with the body is refused, readably, and nothing runs', async () => {
    const before = await itemCount();
    const call = {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'execute_query', arguments: { connectionId: 'lite', sql: "DELETE FROM items WHERE name = 'pear'" }, _meta: envelope },
    };
    const res = await rawPost(call, { 'mcp-method': 'tools/list', 'mcp-name': 'execute_query' });
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body.error.message).toMatch(/Mcp-Method/i);
    expect(body.error.message).toMatch(/tools\/list/);
    expect(await itemCount()).toBe(before);
  });

  it('an Mcp-Name header that disagrees with the tool called is refused', async () => {
    const call = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'list_connections', arguments: {}, _meta: envelope } };
    const res = await rawPost(call, { 'mcp-method': 'tools/call', 'mcp-name': 'execute_query' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.message).toMatch(/Mcp-Name/i);
  });

  it('a request without the headers the revision requires is refused', async () => {
    const res = await rawPost(list, {});
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.message).toMatch(/Mcp-Method/i);
  });

  it('each request is authenticated on its own: no key, a bad key → the 401 envelope', async () => {
    for (const key of ['', 'dbq_nope']) {
      const res = await rawPost(list, { 'mcp-method': 'tools/list' }, key);
      expect(res.status).toBe(401);
      expect(((await res.json()) as any).code).toBe('invalid_api_key');
    }
  });
});

describe('per-key tool lists', () => {
  it('each key gets its own list, also through one client cache partitioned per key', async () => {
    const store = new InMemoryResponseCacheStore();
    const admin = await m.connectModern(m.h.adminKey, { client: { responseCacheStore: store, cachePartition: 'admin-key' } });
    const toolsOnly = await m.connectModern(toolsOnlyKey, { client: { responseCacheStore: store, cachePartition: 'tools-only-key' } });
    const adminNames = (await admin.listTools()).tools.map((t) => t.name);
    const agentNames = (await toolsOnly.listTools()).tools.map((t) => t.name);
    expect(adminNames).toContain('execute_query');
    expect(agentNames.sort()).toEqual(['add_item', 'cheap_items']);
    // Served again (from the cache or not), each still has its own.
    expect((await toolsOnly.listTools()).tools.map((t) => t.name)).not.toContain('execute_query');
    const refused = await toolsOnly.callTool({ name: 'execute_query', arguments: { connectionId: 'lite', sql: 'SELECT 1' } });
    expect(refused.isError).toBe(true);
  });
});

describe('curated tool annotations', () => {
  const hintsOf = (tools: { name: string; annotations?: Record<string, unknown> }[], name: string) =>
    tools.find((t) => t.name === name)?.annotations;

  it('a reading tool is readOnlyHint, a writing one destructiveHint, on both eras', async () => {
    const modern = await m.connectModern(m.h.adminKey);
    const legacy = await m.connect('streamable', m.h.adminKey);
    for (const { tools } of [await modern.listTools(), await legacy.listTools()]) {
      expect(hintsOf(tools, 'cheap_items')).toMatchObject({ readOnlyHint: true, destructiveHint: false });
      expect(hintsOf(tools, 'add_item')).toMatchObject({ readOnlyHint: false, destructiveHint: true });
      expect(hintsOf(tools, 'list_tables')).toMatchObject({ readOnlyHint: true });
    }
  });
});

describe('list changes', () => {
  it('a tool created while a subscriptions/listen stream is open is announced there and listed next', async () => {
    const client = await m.connectModern(m.h.readerKey);
    let changes = 0;
    client.setNotificationHandler('notifications/tools/list_changed', () => {
      changes++;
    });
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('item_names');
    const subscription = await client.listen({ toolsListChanged: true });
    expect(subscription.honoredFilter).toMatchObject({ toolsListChanged: true });
    const res = await m.h.call('POST', '/api/tools', m.h.adminKey, {
      name: 'item_names',
      description: 'Every item name',
      connectionId: 'lite',
      sql: 'SELECT name FROM items ORDER BY name',
    });
    expect(res.status).toBe(201);
    await eventually(() => changes > 0);
    // The notification dropped the cached list: the next tools/list asks the server.
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('item_names');
    await subscription.close();
  });
});

describe('plan limits on 2026-07-28', () => {
  it('each request counts against the plan, with RateLimit-* headers, and past the free plan a 429 refuses the call', async () => {
    await setWorkspacePlan(m.h.svc.db, 'other', 'free', cliActor());
    const seen: Headers[] = [];
    const recording: typeof fetch = async (url, init) => {
      const res = await fetch(url, init);
      seen.push(res.headers);
      return res;
    };
    const client = await m.connectModern(m.h.otherKey, { workspace: 'other', fetch: recording });
    dataOf(await client.callTool({ name: 'list_connections', arguments: {} }));
    // server/discover, then the call
    expect(seen).toHaveLength(2);
    for (const h of seen) expect(h.get('ratelimit-limit')).toBe('60');
    expect(Number(seen[1].get('ratelimit-remaining'))).toBe(58);
    let refused: unknown = null;
    for (let i = 0; i < 60 && !refused; i++) {
      await client.callTool({ name: 'list_connections', arguments: {} }).catch((err: unknown) => (refused = err));
    }
    expect(String(refused)).toMatch(/429|Rate limit exceeded/);
    expect(seen[seen.length - 1].get('retry-after')).toMatch(/^\d+$/);
  });
});

describe('shutdown', () => {
  it('an open subscriptions/listen stream does not hold the server up: closing it ends the stream', async () => {
    const own = await createMcpHarness();
    try {
      const client = await own.connectModern(own.h.adminKey);
      const subscription = await client.listen({ toolsListChanged: true });
      const started = performance.now();
      await own.app.close();
      expect(performance.now() - started).toBeLessThan(3_000);
      expect(['graceful', 'remote']).toContain(await subscription.closed);
    } finally {
      await own.close();
    }
  });
});
