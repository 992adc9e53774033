// Many sessions at once, on both transports and with different keys, each issuing queries in
// parallel: every answer reaches the session (and the request) that asked for it, and the
// registry is empty again once the clients are gone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpHarness, dataOf, eventually, type McpHarness } from './support/mcp-harness.ts';

let m: McpHarness;

beforeAll(async () => {
  m = await createMcpHarness();
});
afterAll(async () => {
  await m?.close();
});

describe('concurrent sessions', () => {
  it('never cross answers', async () => {
    const plan = [
      ['sse', m.h.adminKey],
      ['sse', m.h.readerKey],
      ['streamable', m.h.adminKey],
      ['streamable', m.h.readerKey],
      ['sse', m.h.readerKey],
      ['streamable', m.h.readerKey],
    ] as const;
    const clients = await Promise.all(plan.map(([t, key]) => m.connect(t, key)));
    expect(m.sessions.size).toBe(plan.length);

    const PER_CLIENT = 15;
    await Promise.all(
      clients.map(async (client, c) => {
        const calls = Array.from({ length: PER_CLIENT }, async (_, i) => {
          const tag = c * 1000 + i;
          // A random amount of work shuffles completion order between and within sessions
          // (pg_sleep is not a read for the guard, so the work is counting).
          const work = 1 + Math.floor(Math.random() * 200_000);
          const data = dataOf(
            await client.callTool({
              name: 'execute_query',
              arguments: {
                connectionId: 'pg',
                sql: 'SELECT $1::int AS tag, (SELECT count(*) FROM generate_series(1, $2::int)) AS work',
                params: [tag, work],
              },
            }),
          );
          expect(data.rows[0]).toEqual([tag, String(work)]);
        });
        await Promise.all(calls);
      }),
    );

    await Promise.all(clients.map((c) => c.close()));
    // Streamable sessions live until DELETE or idle expiry; SSE ones end with their stream.
    await eventually(() => m.sessions.size === 3);
    expect(await m.sessions.closeIdle(-1)).toBe(3);
    expect(m.sessions.size).toBe(0);
  });
});
