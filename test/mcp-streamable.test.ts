// The Streamable HTTP transport at `/mcp` and `/w/:workspace/mcp`: Bearer key on every
// request (401 envelope otherwise), sessions opened only by initialize, bound to their key and
// workspace (404 elsewhere), closed by DELETE or after idling, with the SDK's own client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { createMcpHarness, dataOf, eventually, type McpHarness } from './support/mcp-harness.ts';

let m: McpHarness;

beforeAll(async () => {
  m = await createMcpHarness({ keepAliveMs: 50 });
});
afterAll(async () => {
  await m?.close();
});

const ACCEPT = 'application/json, text/event-stream';
const initialize = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${m.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT, 'mcp-protocol-version': '2025-06-18', ...headers },
    body: JSON.stringify(body),
  });
}

/** Opens a session by hand; returns its id. */
async function openSession(key: string, base = ''): Promise<string> {
  const res = await post(`${base}/mcp`, initialize, { authorization: `Bearer ${key}` });
  expect(res.status).toBe(200);
  await res.text();
  const id = res.headers.get('mcp-session-id')!;
  expect(id).toMatch(/^[0-9a-f-]{36}$/);
  await post(
    `${base}/mcp`,
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { authorization: `Bearer ${key}`, 'mcp-session-id': id },
  );
  return id;
}

describe('authentication', () => {
  it.each([
    ['no key', {}],
    ['a bad key', { authorization: 'Bearer dbq_nope' }],
    ['the key as a query parameter (accepted on /sse only)', {}, `?api_key=ADMIN`],
    ["another workspace's key", { authorization: 'Bearer OTHER' }],
  ])('refuses %s with the 401 envelope', async (_label, headers: Record<string, string>, query = '') => {
    const resolved = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, v.replace('OTHER', m.h.otherKey)]));
    const res = await post(`/mcp${query.replace('ADMIN', m.h.adminKey)}`, initialize, resolved);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ success: false, error: 'Invalid or missing API key', code: 'invalid_api_key' });
    expect(res.headers.get('mcp-session-id')).toBeNull();
  });

  it('refuses the SDK client without a key', async () => {
    const client = new Client({ name: 't', version: '1' });
    await expect(client.connect(new StreamableHTTPClientTransport(new URL(`${m.origin}/mcp`)))).rejects.toThrow(
      /Invalid or missing API key/,
    );
  });

  it('opens a session only with initialize', async () => {
    const res = await post('/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { authorization: `Bearer ${m.h.adminKey}` });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).code).toBe('invalid_request');
  });
});

describe('session binding', () => {
  let id: string;
  const list = { jsonrpc: '2.0', id: 7, method: 'tools/list' };

  beforeAll(async () => {
    id = await openSession(m.h.adminKey);
  });

  it('answers with its own key at its own address', async () => {
    const res = await post('/mcp', list, { authorization: `Bearer ${m.h.adminKey}`, 'mcp-session-id': id });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('execute_query');
  });

  it("is 404 at another workspace's address with that workspace's key", async () => {
    const res = await post('/w/other/mcp', list, { authorization: `Bearer ${m.h.otherKey}`, 'mcp-session-id': id });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ success: false, error: 'Session not found', code: 'not_found' });
  });

  it('is 404 with another key of the same workspace, 401 without a key', async () => {
    expect((await post('/mcp', list, { authorization: `Bearer ${m.h.readerKey}`, 'mcp-session-id': id })).status).toBe(404);
    expect((await post('/mcp', list, { 'mcp-session-id': id })).status).toBe(401);
  });

  it('is 404 when unknown', async () => {
    const res = await post('/mcp', list, { authorization: `Bearer ${m.h.adminKey}`, 'mcp-session-id': crypto.randomUUID() });
    expect(res.status).toBe(404);
  });

  it('works under /w/:workspace for that workspace', async () => {
    const other = await openSession(m.h.otherKey, '/w/other');
    const res = await post('/w/other/mcp', list, { authorization: `Bearer ${m.h.otherKey}`, 'mcp-session-id': other });
    expect(res.status).toBe(200);
    // … and not at the root, which is `default`.
    expect((await post('/mcp', list, { authorization: `Bearer ${m.h.otherKey}`, 'mcp-session-id': other })).status).toBe(401);
  });
});

describe('session lifetime', () => {
  it('DELETE closes the session and frees it', async () => {
    const before = m.sessions.size;
    const id = await openSession(m.h.readerKey);
    expect(m.sessions.size).toBe(before + 1);
    const del = await fetch(`${m.origin}/mcp`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${m.h.readerKey}`, 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' },
    });
    expect(del.status).toBe(200);
    await eventually(() => m.sessions.size === before);
    expect(
      (await post('/mcp', { jsonrpc: '2.0', id: 1, method: 'ping' }, { authorization: `Bearer ${m.h.readerKey}`, 'mcp-session-id': id }))
        .status,
    ).toBe(404);
  });

  it('the SDK client terminates its session on request', async () => {
    const before = m.sessions.size;
    const client = await m.connect('streamable', m.h.readerKey);
    expect(dataOf(await client.callTool({ name: 'list_connections', arguments: {} })).connections).toHaveLength(2);
    await (client.transport as StreamableHTTPClientTransport).terminateSession();
    await client.close();
    await eventually(() => m.sessions.size === before);
  });

  it('idle sessions are closed by the sweep; busy ones stay', async () => {
    const idle = await openSession(m.h.readerKey);
    const busy = await openSession(m.h.readerKey);
    m.sessions.get(idle)!.lastSeenAt -= 60_000;
    expect(await m.sessions.closeIdle(30_000)).toBe(1);
    expect(m.sessions.get(idle)).toBeUndefined();
    expect(m.sessions.get(busy)).toBeDefined();
  });

  it('keeps a GET notification stream alive with comment lines', async () => {
    const id = await openSession(m.h.adminKey);
    const controller = new AbortController();
    const res = await fetch(`${m.origin}/mcp`, {
      headers: {
        accept: 'text/event-stream',
        authorization: `Bearer ${m.h.adminKey}`,
        'mcp-session-id': id,
        'mcp-protocol-version': '2025-06-18',
      },
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const { value } = await reader.read();
    expect(new TextDecoder().decode(value)).toMatch(/^: keepalive/);
    controller.abort();
  });
});
