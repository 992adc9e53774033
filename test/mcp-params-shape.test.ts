// execute_query takes params under the same rules as POST /query (src/query/run.ts): a value
// that cannot be bound as given is refused naming it, instead of a stack overflow or a silent
// change (see test/query-params-shape.test.ts for the HTTP side).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpHarness, dataOf, textOf, TRANSPORTS, type McpHarness } from './support/mcp-harness.ts';

let m: McpHarness;
beforeAll(async () => {
  m = await createMcpHarness();
});
afterAll(async () => {
  await m?.close();
});

describe.each(TRANSPORTS)('execute_query params over %s', (transport) => {
  it('refuses nested arrays and unsafe integers, binds scalars and arrays of scalars', async () => {
    const client = await m.connect(transport, m.h.adminKey);
    for (const [params, field] of [
      [['a', [[1]]], 'params[1][0]'],
      // 2^53, the value the literal 9007199254740993 rounds to: the client sends a JSON number,
      // so neither a string (bound as text) nor a BigInt (JSON.stringify throws) would test this.
      [[Number.MAX_SAFE_INTEGER + 1], 'params[0]'],
    ] as const) {
      const result = (await client.callTool({
        name: 'execute_query',
        arguments: { connectionId: 'pg', sql: 'SELECT $1::text', params },
      })) as { isError?: boolean };
      expect(result.isError).toBe(true);
      const envelope = JSON.parse(textOf(result).split('\n')[1]);
      expect(envelope).toMatchObject({ code: 'invalid_request', details: { field } });
    }
    const ok = dataOf(
      await client.callTool({
        name: 'execute_query',
        arguments: { connectionId: 'pg', sql: 'SELECT $1::int + 1, array_length($2::int[], 1)', params: [41, [1, 2]] },
      }),
    );
    expect(ok.rows[0]).toEqual([42, 2]);
  });
});
