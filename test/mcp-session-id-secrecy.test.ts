// Under the 2024-11-05 HTTP+SSE transport a session id alone authorises messages when the key
// came in the /sse URL (the POSTs carry none), and a Streamable HTTP id is half of what a
// message needs. Both used to reach the log: the `/messages?sessionId=…` URL of every request
// line and an `mcpSession` field on every session line. No log line and no metric label may
// carry an id; a log line names a session by a one-way tag instead.
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sessionLogTag } from '../src/mcp/sessions.ts';
import { createHarness, type Harness } from './support/harness.ts';
import { until as waitUntil } from './support/wait.ts';

const logs: string[] = [];
let h: Harness;
let origin: string;

beforeAll(async () => {
  h = await createHarness({}, { logs });
  origin = await h.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await h?.close();
});

const until = (check: () => boolean, ms = 5000) => waitUntil('the condition', check, ms);

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'secrecy-test', version: '1' } },
};

it('keeps SSE and Streamable HTTP session ids out of every log line and metric label', async () => {
  // SSE, key in the URL as bare-URL clients do: the id is then the only credential of a POST.
  const stream = new AbortController();
  const res = await fetch(`${origin}/sse?api_key=${h.adminKey}`, { headers: { accept: 'text/event-stream' }, signal: stream.signal });
  const reader = res.body!.getReader();
  let text = '';
  const read = async (pattern: RegExp) => {
    while (!pattern.test(text)) text += new TextDecoder().decode((await reader.read()).value);
  };
  await read(/event: endpoint\ndata: \S+\n\n/);
  const endpoint = /data: (\S+)/.exec(text)![1];
  const sseId = new URL(endpoint, origin).searchParams.get('sessionId')!;
  expect(sseId).toMatch(/^[0-9a-f-]{36}$/);
  const post = (path: string, body: unknown) =>
    fetch(`${origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect((await post(endpoint, INIT)).status).toBe(202);
  expect((await post(endpoint, { jsonrpc: '2.0', method: 'notifications/initialized' })).status).toBe(202);
  // A refused tool call logs its context (it used to carry the session id).
  const call = {
    jsonrpc: '2.0',
    id: 2,
    method: 'tools/call',
    params: { name: 'describe_table', arguments: { connectionId: 'nowhere', table: 't' } },
  };
  expect((await post(endpoint, call)).status).toBe(202);
  await read(/"id":2/);
  // Refused messages log their URL too: an unknown id, and a body that is not JSON-RPC.
  // Another id of the same shape: the last character changed (to 1 when it already was 0).
  const unknownId = sseId.replace(/.$/, (last) => (last === '0' ? '1' : '0'));
  expect((await post(`/messages?sessionId=${unknownId}`, INIT)).status).toBe(404);
  expect((await post(endpoint, { hello: 1 })).status).toBe(400);
  stream.abort();

  // Streamable HTTP: the id travels in the Mcp-Session-Id header.
  const client = new Client({ name: 'secrecy-test', version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL(`${origin}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${h.adminKey}` } },
  });
  await client.connect(transport);
  const streamableId = transport.sessionId!;
  expect(streamableId).toBeTruthy();
  const refused = await client.callTool({ name: 'describe_table', arguments: { connectionId: 'nowhere', table: 't' } });
  expect(refused.isError).toBe(true);
  await transport.terminateSession();
  await client.close();

  await until(() => logs.filter((l) => l.includes('mcp session closed')).length >= 2);
  const metrics = await h.call('GET', '/metrics', null);
  expect(metrics.status).toBe(200);

  const all = logs.join('\n');
  // The lines are there (so the assertions below are not vacuous), each session named by its tag.
  expect(all).toContain('"url":"/messages?sessionId=[redacted]"');
  expect(logs.filter((l) => l.includes('mcp session opened'))).toHaveLength(2);
  expect(all).toContain(`"mcpSession":"${sessionLogTag(sseId)}"`);
  expect(all).toContain(`"mcpSession":"${sessionLogTag(streamableId)}"`);
  for (const id of [sseId, streamableId]) {
    expect(all).not.toContain(id);
    // Nor a recognisable part of it (a log viewer that cuts long values).
    expect(all).not.toContain(id.split('-')[0]);
    expect(String(metrics.body)).not.toContain(id);
  }
});

it('tags are one-way and stable: the same id gives the same short tag, distinct ids distinct tags', () => {
  const id = crypto.randomUUID();
  expect(sessionLogTag(id)).toBe(sessionLogTag(id));
  expect(sessionLogTag(id)).not.toBe(sessionLogTag(crypto.randomUUID()));
  expect(sessionLogTag(id)).toMatch(/^[0-9a-f]{12}$/);
});
