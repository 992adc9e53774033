// Each JSON-RPC message POSTed over MCP counts one request against the workspace's plan, like
// one /api request: RateLimit-* headers on the POST responses of both transports, and past the
// free plan's 60 per minute a 429 envelope — the SDK client's call fails, nothing runs.
import { cliActor } from '../src/audit/audit.ts';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../src/workspaces/workspaces.ts';
import { createMcpHarness, dataOf, type McpHarness } from './support/mcp-harness.ts';

let m: McpHarness;

beforeAll(async () => {
  m = await createMcpHarness();
});
afterAll(async () => {
  await m?.close();
});

describe('plan limits', () => {
  it('sends RateLimit-* headers on MCP POSTs and refuses past the free plan', async () => {
    await setWorkspacePlan(m.h.svc.db, 'other', 'free', cliActor());
    const seen: Headers[] = [];
    const recordingFetch: typeof fetch = async (url, init) => {
      const res = await fetch(url, init);
      if (init?.method === 'POST') seen.push(res.headers);
      return res;
    };
    const headers = { authorization: `Bearer ${m.h.otherKey}` };
    const sse = new Client({ name: 't', version: '1' });
    await sse.connect(new SSEClientTransport(new URL(`${m.origin}/w/other/sse`), { requestInit: { headers }, fetch: recordingFetch }));
    const streamable = new Client({ name: 't', version: '1' });
    await streamable.connect(
      new StreamableHTTPClientTransport(new URL(`${m.origin}/w/other/mcp`), { requestInit: { headers }, fetch: recordingFetch }),
    );

    dataOf(await sse.callTool({ name: 'list_connections', arguments: {} }));
    dataOf(await streamable.callTool({ name: 'list_connections', arguments: {} }));
    // initialize + initialized + one call on each transport
    expect(seen).toHaveLength(6);
    for (const h of seen) expect(h.get('ratelimit-limit')).toBe('60');
    expect(Number(seen[5].get('ratelimit-remaining'))).toBe(54);

    let refused: unknown = null;
    for (let i = 0; i < 60 && !refused; i++) {
      const client = i % 2 ? sse : streamable;
      await client.callTool({ name: 'list_connections', arguments: {} }).catch((err) => (refused = err));
    }
    expect(String(refused)).toMatch(/429|Rate limit exceeded/);
    const last = seen[seen.length - 1];
    expect(last.get('retry-after')).toMatch(/^\d+$/);
    await sse.close();
    await streamable.close();
  });
});
