// Every tool over both transports, with the SDK's own client, on a real SQLite file and the
// real PostgreSQL: the tool list and its hints, structuredContent equal to the API's `data`
// (and the same JSON as text), refusals as `isError` results with the API's message, and
// history entries with source `mcp`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { createMcpHarness, dataOf, textOf, TRANSPORTS, type McpHarness } from './support/mcp-harness.ts';

let m: McpHarness;

beforeAll(async () => {
  m = await createMcpHarness();
});
afterAll(async () => {
  await m?.close();
});

describe.each(TRANSPORTS)('over %s', (transport) => {
  let admin: Client;
  let reader: Client;

  beforeAll(async () => {
    admin = await m.connect(transport, m.h.adminKey);
    reader = await m.connect(transport, m.h.readerKey);
  });

  it('lists the seven tools with input and output schemas and hints', async () => {
    const { tools } = await reader.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(Object.keys(byName).sort()).toEqual([
      'describe_table',
      'execute_query',
      'generate_sql',
      'get_query_history',
      'list_connections',
      'list_tables',
      'search_objects',
    ]);
    for (const t of tools) {
      expect(t.description!.length).toBeGreaterThan(80);
      expect(t.outputSchema?.type).toBe('object');
      expect(t.inputSchema.type).toBe('object');
    }
    expect(byName.execute_query.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(byName.list_tables.annotations).toMatchObject({ readOnlyHint: true });
    expect(byName.execute_query.inputSchema.required).toEqual(['connectionId', 'sql']);
    expect(byName.execute_query.description).toMatch(/maxRows.*1000.*10000/);
    expect(byName.execute_query.description).toMatch(/one SQL statement/i);
  });

  it('list_connections returns what GET /api/connections returns', async () => {
    const res = await reader.callTool({ name: 'list_connections', arguments: {} });
    const rest = await m.h.call('GET', '/api/connections', m.h.readerKey);
    expect(res.structuredContent).toEqual(rest.body.data);
    expect(JSON.parse((res.content as any)[0].text)).toEqual(rest.body.data);
    expect(rest.body.data.connections.map((c: any) => c.name)).toEqual(['lite', 'pg']);
    expect(JSON.stringify(res)).not.toMatch(/password|secret/i);
  });

  it('list_tables and describe_table read the SQLite catalog', async () => {
    const tables = dataOf(await reader.callTool({ name: 'list_tables', arguments: { connectionId: 'lite' } }));
    expect(tables.connectionName).toBe('lite');
    expect(tables.tables.map((t: any) => t.name)).toEqual(expect.arrayContaining(['items', 'orders']));
    const desc = dataOf(await reader.callTool({ name: 'describe_table', arguments: { connectionId: 'lite', table: 'orders' } }));
    expect(desc.table.columns.map((c: any) => c.name)).toEqual(['id', 'item_id', 'qty']);
    expect(desc.table.columns[0]).toMatchObject({ primaryKey: true });
    expect(desc.table.foreignKeys[0]).toMatchObject({ columns: ['item_id'], refTable: 'items' });
    // Models often change the case of identifiers.
    expect(dataOf(await reader.callTool({ name: 'describe_table', arguments: { connectionId: 'lite', table: 'ITEMS' } })).table.name).toBe(
      'items',
    );
    const missing = await reader.callTool({ name: 'describe_table', arguments: { connectionId: 'lite', table: 'nope' } });
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toMatch(/^Table not found/);
  });

  it('describe_table reads the PostgreSQL catalog, with schema.table', async () => {
    const desc = dataOf(await reader.callTool({ name: 'describe_table', arguments: { connectionId: 'pg', table: 'pg_catalog.pg_class' } }));
    expect(desc.table).toMatchObject({ schema: 'pg_catalog', name: 'pg_class' });
    expect(desc.table.columns.some((c: any) => c.name === 'relname')).toBe(true);
  });

  it('execute_query returns the same data as POST /api/query, values encoded the same way', async () => {
    const sql = "SELECT 42::int8 AS big, 1.50::numeric AS n, DATE '2025-01-02' AS d, $1::text AS p, NULL AS z";
    const res = await reader.callTool({ name: 'execute_query', arguments: { connectionId: 'pg', sql, params: ['x'] } });
    const data = dataOf(res);
    const rest = await m.h.call('POST', '/api/query', m.h.readerKey, { connectionId: 'pg', sql, params: ['x'] });
    const strip = (d: any) => ({ ...d, queryId: undefined, durationMs: undefined });
    expect(strip(data)).toEqual(strip(rest.body.data));
    expect(data.rows).toEqual([['42', '1.50', '2025-01-02', 'x', null]]);
    expect(JSON.parse((res.content as any)[0].text)).toEqual(data);
  });

  it('execute_query honours maxRows and reports truncated', async () => {
    const data = dataOf(
      await reader.callTool({
        name: 'execute_query',
        arguments: { connectionId: 'pg', sql: 'SELECT g FROM generate_series(1, 50) g', maxRows: 5 },
      }),
    );
    expect(data.rowCount).toBe(5);
    expect(data.truncated).toBe(true);
  });

  it('execute_query failures are isError results with the API message, never protocol errors', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ connectionId: 'nope', sql: 'SELECT 1' }, /^Connection not found$/],
      [{ connectionId: 'pg', sql: 'SELECT * FROM no_such_table_mcp' }, /relation "no_such_table_mcp" does not exist/],
      [{ connectionId: 'pg', sql: 'SELECT 1; SELECT 2' }, /statement/i],
      [{ connectionId: 'lite', sql: "INSERT INTO items (name) VALUES ('x')" }, /^Insufficient permissions$/],
      [{ connectionId: 'pg', sql: 'SELECT 1', maxRows: 0 }, /maxRows/],
      [{ connectionId: 'pg', sql: 'SELECT 1', rowFormat: 'objects' }, /rowFormat|Unrecognized/i],
      [{ sql: 'SELECT 1' }, /connectionId/],
    ];
    for (const [args, message] of cases) {
      const res = await reader.callTool({ name: 'execute_query', arguments: args });
      expect(res.isError, JSON.stringify(args)).toBe(true);
      expect(res.structuredContent).toBeUndefined();
      expect((res.content as any)[0].text).toMatch(message);
    }
    // The envelope rides along for programs: code and details.
    const refused = await reader.callTool({ name: 'execute_query', arguments: { connectionId: 'lite', sql: 'DELETE FROM items' } });
    const envelope = JSON.parse((refused.content as any)[1].text);
    expect(envelope).toMatchObject({ success: false, code: 'insufficient_permissions', details: { reason: expect.any(String) } });
    const failed = await reader.callTool({ name: 'execute_query', arguments: { connectionId: 'pg', sql: 'SELECT 1/0' } });
    expect(JSON.parse((failed.content as any)[1].text)).toMatchObject({ code: 'query_failed', details: { sqlState: '22012' } });
  });

  it('an admin may write through execute_query', async () => {
    const data = dataOf(
      await admin.callTool({
        name: 'execute_query',
        arguments: { connectionId: 'lite', sql: "UPDATE items SET price = price WHERE name = 'apple'" },
      }),
    );
    expect(data.affectedRows).toBe(1);
  });

  it('get_query_history lists the calls with source mcp; a reader sees only their own', async () => {
    const marker = `mcp_hist_${transport}_${Date.now()}`;
    dataOf(await reader.callTool({ name: 'execute_query', arguments: { connectionId: 'lite', sql: `SELECT '${marker}' AS m` } }));
    await reader.callTool({
      name: 'execute_query',
      arguments: { connectionId: 'lite', sql: `DELETE FROM items WHERE name = '${marker}'` },
    });
    dataOf(await admin.callTool({ name: 'execute_query', arguments: { connectionId: 'lite', sql: `SELECT '${marker}' AS admin_only` } }));

    const mine = dataOf(await reader.callTool({ name: 'get_query_history', arguments: { limit: 200, connectionId: 'lite' } }));
    const entries = mine.entries.filter((e: any) => e.sql.includes(marker));
    expect(entries.map((e: any) => [e.status, e.source])).toEqual([
      ['rejected', 'mcp'],
      ['succeeded', 'mcp'],
    ]);
    expect(mine.entries.every((e: any) => e.user.email === 'reader@acme.test')).toBe(true);
    expect(entries[0].apiKey.name).toBe('reader-key');

    const rejected = dataOf(await reader.callTool({ name: 'get_query_history', arguments: { status: 'rejected', limit: 1 } }));
    expect(rejected.entries).toHaveLength(1);
    expect(rejected.entries[0].sql).toContain(marker);
    expect(rejected.nextCursor).toEqual(expect.any(String));

    const all = dataOf(await admin.callTool({ name: 'get_query_history', arguments: { limit: 200 } }));
    expect(all.entries.filter((e: any) => e.sql.includes(marker))).toHaveLength(3);
    // The REST view agrees.
    const rest = await m.h.call('GET', `/api/query/history?source=mcp&search=${marker}`, m.h.adminKey);
    expect(rest.body.data.entries).toHaveLength(3);
  });

  it('generate_sql writes, validates and runs SQL with the builtin generator; a reader gets no write SQL', async () => {
    const data = dataOf(
      await reader.callTool({
        name: 'generate_sql',
        arguments: { connectionId: 'lite', prompt: 'how many items are there', execute: true },
      }),
    );
    expect(data).toMatchObject({ dialect: 'sqlite', provider: 'builtin', validated: true });
    expect(data.sql).toMatch(/^select/i);
    expect(data.result.rows).toEqual([[3]]);
    const plain = dataOf(
      await reader.callTool({ name: 'generate_sql', arguments: { connectionId: 'lite', prompt: 'how many items are there' } }),
    );
    expect(plain.result).toBeNull();

    const write = await reader.callTool({
      name: 'generate_sql',
      arguments: { connectionId: 'lite', prompt: 'delete every item', execute: true },
    });
    expect(write.isError).toBe(true);
    expect(textOf(write)).toMatch(/^Could not generate SQL/);
  });
});
