// app.close() with open MCP streams must finish promptly: SSE streams and Streamable HTTP
// GET streams are responses that never end on their own, so the plugin closes them before
// Fastify waits for in-flight responses.
import { expect, it } from 'vitest';
import { createMcpHarness, dataOf } from './support/mcp-harness.ts';

it('closes open SSE and Streamable HTTP sessions on app.close()', async () => {
  const m = await createMcpHarness();
  try {
    const clients = await Promise.all([
      m.connect('sse', m.h.adminKey),
      m.connect('sse', m.h.readerKey, { keyIn: 'query' }),
      m.connect('streamable', m.h.adminKey),
    ]);
    for (const c of clients) dataOf(await c.callTool({ name: 'list_connections', arguments: {} }));
    const started = Date.now();
    await m.app.close();
    expect(Date.now() - started).toBeLessThan(2000);
    expect(m.sessions.size).toBe(0);
  } finally {
    await m.close();
  }
});
