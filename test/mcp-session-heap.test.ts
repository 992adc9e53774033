// One Streamable HTTP session used to grow the server's heap by
// ~16 KB per `execute_query` of 100 rows (6 KB for `SELECT 1`), so a long-lived agent session
// ran a 256 MB heap out of memory between 5,000 and 10,000 calls. The SDK (1.x) keeps every
// answered JSON-mode request in its transport's `_streamMapping`, the Response and body with
// it, until the session closes (src/mcp/release-answered-streams.ts). Here a dbq in its own
// process, started with --expose-gc, serves 20,000 calls in one session per transport, and its
// heap after GC may grow by less than 10 MB. The client uses isolatedFetch (the SDK client's
// own per-request listener pile-up) though only the server's heap is measured.
// The 2026-07-28 revision (SDK v2, a server built per request, no session) gets the same run.
// The same SDK gap left a cancelled call's POST (SDK clients cancel on their request timeout)
// unanswered for good, its request, response and entry (~15 KB) kept: it is now answered 202.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { connectSoakClient, isolatedFetch, soak, startHeapServer, type HeapServer, type SoakTransport } from './support/mcp-soak.ts';

const CALLS = 20_000;
const WARMUP = 500;
const MAX_GROWTH = 10 * 1024 * 1024;
const ARGS = { connectionId: 'pg', sql: 'SELECT 1 AS one' };

let server: HeapServer;

beforeAll(async () => {
  server = await startHeapServer();
});

afterAll(async () => {
  await server?.stop();
});

describe('20,000 tool calls in one session (2025-era) or from one client (2026-07-28, no session)', () => {
  for (const transport of ['sse', 'streamable', 'modern'] as SoakTransport[]) {
    it(`${transport}: the server's heap grows by less than 10 MB`, { timeout: 900_000 }, async () => {
      const client = await connectSoakClient(transport, server.origin, server.key);
      try {
        await client.listTools();
        // Warm-up first: compiled code and lazily loaded modules are not per-call growth.
        await soak(client, WARMUP, ARGS, WARMUP, async () => {});
        const before = (await server.heap()).heapUsed;
        const marks: string[] = [];
        await soak(client, CALLS, ARGS, 5_000, async (done) => {
          marks.push(`${done}: +${(((await server.heap()).heapUsed - before) / 1024 / 1024).toFixed(1)} MB`);
        });
        const growth = (await server.heap()).heapUsed - before;
        expect(growth, `heap growth over ${CALLS} calls (${marks.join(', ')})`).toBeLessThan(MAX_GROWTH);
      } finally {
        await client.end();
      }
    });
  }
});

describe('a Streamable HTTP call the client cancels', () => {
  it('has its POST answered 202 at once, and the session goes on', async () => {
    let open = 0;
    const statuses: number[] = [];
    // Counts the tool-call POSTs still waiting for their HTTP response.
    const tracking: typeof fetch = async (url, init) => {
      if (init?.method !== 'POST' || !String(init.body).includes('"tools/call"')) return isolatedFetch(url, init);
      open++;
      try {
        const res = await isolatedFetch(url, init);
        statuses.push(res.status);
        return res;
      } finally {
        open--;
      }
    };
    const client = new Client({ name: 'cancel', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(`${server.origin}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${server.key}` } },
      fetch: tracking,
    });
    await client.connect(transport);
    try {
      for (let i = 0; i < 5; i++) {
        // The SDK client gives up after `timeout` and sends notifications/cancelled.
        const call = client.callTool({ name: 'execute_query', arguments: { connectionId: 'pg', sql: 'SELECT pg_sleep(5)' } }, undefined, {
          timeout: 200,
        });
        await expect(call).rejects.toThrow(/timed out/i);
      }
      await vi.waitFor(() => expect(open).toBe(0), { timeout: 3_000 });
      expect(statuses).toEqual([202, 202, 202, 202, 202]);
      const res = await client.callTool({ name: 'execute_query', arguments: ARGS });
      expect(res.isError).toBeFalsy();
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
  });
});
