// The HTTP+SSE transport (protocol 2024-11-05) at `/sse` and `/w/:workspace/sse`: the 401
// envelope and no stream for a bad key, the endpoint event naming the workspace's own
// `/messages` path, keep-alive comments, both key forms, and a session id that works only at
// its own address with its own key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey } from '../src/workspaces/key-format.ts';
import { createMcpHarness, dataOf, eventually, textOf, type McpHarness } from './support/mcp-harness.ts';

let m: McpHarness;

beforeAll(async () => {
  m = await createMcpHarness({ keepAliveMs: 50 });
});
afterAll(async () => {
  await m?.close();
});

/** Opens a raw SSE stream and reads until `until` matches the accumulated text. */
async function readStream(
  path: string,
  headers: Record<string, string>,
  until: RegExp,
): Promise<{ status: number; text: string; headers: Headers }> {
  const controller = new AbortController();
  const res = await fetch(`${m.origin}${path}`, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal });
  if (!res.headers.get('content-type')?.startsWith('text/event-stream'))
    return { status: res.status, text: await res.text(), headers: res.headers };
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const deadline = Date.now() + 3000;
  while (!until.test(text) && Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value);
  }
  controller.abort();
  return { status: res.status, text, headers: res.headers };
}

describe('opening a stream', () => {
  it.each([
    ['no key', '/sse', {}],
    ['a malformed key in the query', '/sse?api_key=nope', {}],
    ['a well-formed unknown key', `/sse?api_key=${generateKey()}`, {}],
    ['a bad Bearer header', '/sse', { authorization: 'Bearer dbq_nope' }],
    ["another workspace's key at the root", '/sse', { authorization: 'Bearer OTHER' }],
    ['a default key at /w/other', '/w/other/sse', { authorization: 'Bearer ADMIN' }],
    ['a key at an unknown workspace', '/w/nowhere/sse', { authorization: 'Bearer ADMIN' }],
  ])('refuses %s with the 401 envelope and no stream', async (_label, path, headers: Record<string, string>) => {
    const resolved = Object.fromEntries(
      Object.entries(headers).map(([k, v]) => [k, v.replace('OTHER', m.h.otherKey).replace('ADMIN', m.h.adminKey)]),
    );
    const before = m.sessions.size;
    const res = await fetch(`${m.origin}${path}`, { headers: { accept: 'text/event-stream', ...resolved } });
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ success: false, error: 'Invalid or missing API key', code: 'invalid_api_key' });
    expect(m.sessions.size).toBe(before);
  });

  it('names /messages?sessionId= at the root and /w/{slug}/messages?sessionId= under a workspace', async () => {
    const root = await readStream('/sse', { authorization: `Bearer ${m.h.adminKey}` }, /event: endpoint\ndata: .*\n\n/);
    expect(root.status).toBe(200);
    expect(root.headers.get('x-request-id')).toBeTruthy();
    expect(root.text).toMatch(/^event: endpoint\ndata: \/messages\?sessionId=[0-9a-f-]{36}\n\n/);

    const other = await readStream(`/w/other/sse?api_key=${m.h.otherKey}`, {}, /event: endpoint\ndata: .*\n\n/);
    expect(other.text).toMatch(/^event: endpoint\ndata: \/w\/other\/messages\?sessionId=[0-9a-f-]{36}\n\n/);
    // The path form is case-insensitive like the rest of the API; the endpoint uses the slug.
    const upper = await readStream(`/w/OTHER/sse?api_key=${m.h.otherKey}`, {}, /event: endpoint\ndata: .*\n\n/);
    expect(upper.text).toMatch(/data: \/w\/other\/messages\?sessionId=/);
  });

  it('sends keep-alive comment lines on an idle stream', async () => {
    const res = await readStream('/sse', { authorization: `Bearer ${m.h.readerKey}` }, /: ping\n\n/);
    expect(res.text).toContain(': ping\n\n');
  });

  it('frees the session when the stream closes', async () => {
    // The raw streams above were aborted by the client; their sessions go as the sockets close.
    await eventually(() => m.sessions.size === 0);
    const client = await m.connect('sse', m.h.readerKey);
    expect(m.sessions.size).toBe(1);
    await client.close();
    await eventually(() => m.sessions.size === 0);
  });
});

describe('a session', () => {
  it('cancels its running statement on the database when the stream closes', async () => {
    const client = await m.connect('sse', m.h.adminKey);
    const sql = `SELECT count(*) FROM generate_series(1, 2000000000) /* mcp-cancel-${Date.now()} */`;
    const call = client.callTool({ name: 'execute_query', arguments: { connectionId: 'pg', sql } }).catch(() => null);
    await eventually(() => m.h.svc.running.size > 0, 5000);
    await client.close();
    await call;
    await eventually(() => m.h.svc.running.size === 0, 5000);
    const res = await m.h.call('GET', `/api/query/history?search=${encodeURIComponent(sql.slice(-30, -3))}`, m.h.adminKey);
    expect(res.body.data.entries).toHaveLength(1);
    expect(res.body.data.entries[0]).toMatchObject({ status: 'canceled', source: 'mcp' });
  });

  it('works with the key in the URL only (POSTs carry no key)', async () => {
    const client = await m.connect('sse', m.h.readerKey, { keyIn: 'query' });
    const data = dataOf(
      await client.callTool({ name: 'execute_query', arguments: { connectionId: 'lite', sql: 'SELECT count(*) AS n FROM items' } }),
    );
    expect(data.rows).toEqual([[3]]);
    await client.close();
  });

  it("works under /w/:workspace with that workspace's key and sees only its connections", async () => {
    const client = await m.connect('sse', m.h.otherKey, { workspace: 'other' });
    expect(dataOf(await client.callTool({ name: 'list_connections', arguments: {} }))).toEqual({ connections: [] });
    const res = await client.callTool({ name: 'execute_query', arguments: { connectionId: 'lite', sql: 'SELECT 1' } });
    expect(res.isError).toBe(true);
    expect(textOf(res)).toMatch(/^Connection not found/);
    await client.close();
  });

  describe('misuse of a session id', () => {
    let sessionPath: string;
    let stream: AbortController;

    beforeAll(async () => {
      stream = new AbortController();
      const res = await fetch(`${m.origin}/sse?api_key=${m.h.adminKey}`, {
        headers: { accept: 'text/event-stream' },
        signal: stream.signal,
      });
      const reader = res.body!.getReader();
      let text = '';
      while (!/\n\n/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
      sessionPath = /data: (\S+)/.exec(text)![1];
    });
    afterAll(() => stream.abort());

    const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
    const post = (path: string, headers: Record<string, string> = {}, body: unknown = ping) =>
      fetch(`${m.origin}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    const sessionId = () => new URL(sessionPath, m.origin).searchParams.get('sessionId')!;

    it('is accepted at its own address', async () => {
      expect((await post(sessionPath)).status).toBe(202);
      expect((await post(sessionPath, { authorization: `Bearer ${m.h.adminKey}` })).status).toBe(202);
    });

    it("is 404 at another workspace's address, with or without that workspace's key", async () => {
      for (const headers of [{}, { authorization: `Bearer ${m.h.otherKey}` }] as Record<string, string>[]) {
        const res = await post(`/w/other/messages?sessionId=${sessionId()}`, headers);
        expect(res.status).toBe(404);
        expect(await res.json()).toEqual({ success: false, error: 'Session not found', code: 'not_found' });
      }
    });

    it('is 404 with another key of the same workspace', async () => {
      const res = await post(sessionPath, { authorization: `Bearer ${m.h.readerKey}` });
      expect(res.status).toBe(404);
    });

    it('is 401 with a bad key, and the session survives the stranger', async () => {
      const res = await post(sessionPath, { authorization: 'Bearer dbq_nope' });
      expect(res.status).toBe(401);
      expect(((await res.json()) as any).code).toBe('invalid_api_key');
      expect((await post(sessionPath)).status).toBe(202);
    });

    it('is 404 when unknown, 400 when missing, and an SSE id is unknown to /mcp', async () => {
      const unknown = await post(`/messages?sessionId=${crypto.randomUUID()}`);
      expect(unknown.status).toBe(404);
      expect(((await unknown.json()) as any).error).toBe('Session not found');
      const missing = await post('/messages');
      expect(missing.status).toBe(400);
      expect(((await missing.json()) as any).code).toBe('invalid_request');
      const res = await fetch(`${m.origin}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${m.h.adminKey}`,
          'mcp-session-id': sessionId(),
        },
        body: JSON.stringify(ping),
      });
      expect(res.status).toBe(404);
    });

    it('refuses a body that is not JSON-RPC with the envelope', async () => {
      const res = await post(sessionPath, {}, { hello: 'world' });
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).code).toBe('invalid_request');
    });
  });
});
