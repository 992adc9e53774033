// Curated tools over MCP, with the SDK's real Client on both transports: each tool is a tool
// of its own with a JSON Schema built from its parameters; a tools-only key sees only curated
// tools and cannot run execute_query; a `tools` scope filters them; and a change made while a
// client is connected — over REST in this process or by the CLI in another — reaches it as
// notifications/tools/list_changed and shows in its next tools/list.
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../src/workspaces/api-keys.ts';
import { createMcpHarness, dataOf, eventually, textOf, TRANSPORTS, type McpHarness } from './support/mcp-harness.ts';
import { workspaceSqliteDir } from './support/harness.ts';
import Database from 'better-sqlite3';
import { runCli } from './support/processes.ts';

let m: McpHarness;
let toolsOnlyKey: string;
let onlyTotalKey: string;

const TOTAL = {
  name: 'item_total',
  description: 'Price of the items named, by name; at most 20 names',
  connectionId: 'lite',
  sql: "SELECT name, price FROM items WHERE name IN (:names) AND price >= :min_price AND :day >= '2000-01-01' AND :mode IN ('a', 'b') AND length(:tag) <= 10 AND :flag IN (0, 1) ORDER BY name",
  parameters: [
    { name: 'names', type: 'array', items: { type: 'string', maxLength: 20 }, required: true, min: 1, max: 20, description: 'Item names' },
    { name: 'min_price', type: 'number', min: 0, max: 1000, default: 0 },
    { name: 'day', type: 'date', default: '2025-01-01' },
    { name: 'mode', type: 'enum', values: ['a', 'b'], default: 'a' },
    { name: 'tag', type: 'string', maxLength: 10, pattern: '^[a-z]*$', default: 'x' },
    { name: 'flag', type: 'boolean', default: false },
  ],
  maxRows: 50,
};

beforeAll(async () => {
  m = await createMcpHarness();
  const res = await m.h.call('POST', '/api/tools', m.h.adminKey, TOTAL);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const other = await m.h.call('POST', '/api/tools', m.h.adminKey, {
    name: 'item_count',
    description: 'How many items there are',
    connectionId: 'lite',
    sql: 'SELECT count(*) AS n FROM items',
  });
  expect(other.status).toBe(201);
  toolsOnlyKey = (
    await createApiKey(m.h.svc.db, { workspace: 'default', email: 'reader@acme.test', name: 'agent', scope: { toolsOnly: true } })
  ).secret;
  onlyTotalKey = (
    await createApiKey(m.h.svc.db, {
      workspace: 'default',
      email: 'reader@acme.test',
      name: 'only-total',
      scope: { tools: ['item_total'] },
    })
  ).secret;
});
afterAll(async () => {
  await m?.close();
});

function listChanges(client: Client): { count: number } {
  const seen = { count: 0 };
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    seen.count++;
  });
  return seen;
}

describe.each(TRANSPORTS)('curated tools over %s', (transport) => {
  it('a normal key sees the built-in tools and the curated ones, with a JSON Schema from the parameters', async () => {
    const client = await m.connect(transport, m.h.readerKey);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['execute_query', 'list_connections', 'item_total', 'item_count']));
    const total = tools.find((t) => t.name === 'item_total')!;
    expect(total.description).toBe(TOTAL.description);
    expect(total.inputSchema).toEqual({
      type: 'object',
      properties: {
        names: { type: 'array', items: { type: 'string', maxLength: 20 }, minItems: 1, maxItems: 20, description: 'Item names' },
        min_price: { type: 'number', minimum: 0, maximum: 1000, default: 0 },
        day: { type: 'string', format: 'date', default: '2025-01-01' },
        mode: { enum: ['a', 'b'], default: 'a' },
        tag: { type: 'string', maxLength: 10, pattern: '^[a-z]*$', default: 'x' },
        flag: { type: 'boolean', default: false },
      },
      required: ['names'],
      additionalProperties: false,
    });
    const data = dataOf(await client.callTool({ name: 'item_total', arguments: { names: ['pear', 'apple', 'nope'] } }));
    expect(data.rows).toEqual([
      ['apple', 1.5],
      ['pear', 2],
    ]);
    expect(data.tool).toEqual({ name: 'item_total', version: 1 });
    const bad = await client.callTool({ name: 'item_total', arguments: { names: ['pear'], tag: 'UPPER' } });
    expect(bad.isError).toBe(true);
    expect(JSON.parse(textOf(bad).split('\n')[1])).toMatchObject({ code: 'invalid_request', details: { field: 'params.tag' } });
    const history = await m.h.call('GET', '/api/query/history?limit=5', m.h.readerKey);
    expect(history.body.data.entries[0]).toMatchObject({ source: 'mcp', tool: { name: 'item_total', version: 1 } });
  });

  it('a tools-only key sees only curated tools, and execute_query is refused as a tool error', async () => {
    const client = await m.connect(transport, toolsOnlyKey);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['item_count', 'item_total']));
    // Only curated tools (the other transport's run may have added one by the CLI).
    expect(names.filter((n) => !/^(item_|cli_|granted_)/.test(n))).toEqual([]);
    const refused = await client.callTool({
      name: 'execute_query',
      arguments: { connectionId: 'lite', sql: 'SELECT count(*) FROM items' },
    });
    expect(refused.isError).toBe(true);
    expect(JSON.parse(textOf(refused).split('\n')[1])).toMatchObject({ code: 'insufficient_permissions' });
    const before = await m.h.call('GET', '/api/query/history?limit=100', m.h.adminKey);
    expect(before.body.data.entries.some((e: any) => e.sql === 'SELECT count(*) FROM items' && e.apiKey?.name === 'agent')).toBe(false);
    const listed = await client.callTool({ name: 'list_connections', arguments: {} });
    expect(listed.isError).toBe(true);
    expect(dataOf(await client.callTool({ name: 'item_count', arguments: {} })).rows).toEqual([[3]]);
  });

  it('a key scoped to some tools lists only those', async () => {
    const client = await m.connect(transport, onlyTotalKey);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('item_total');
    expect(names).not.toContain('item_count');
    const refused = await client.callTool({ name: 'item_count', arguments: {} });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/^Insufficient permissions/);
  });

  it('a tool created, edited and deleted over REST while the client is connected reaches it', async () => {
    const client = await m.connect(transport, m.h.readerKey);
    const seen = listChanges(client);
    await client.listTools();
    const name = `live_${transport}`;
    const created = await m.h.call('POST', '/api/tools', m.h.adminKey, {
      name,
      description: 'v1',
      connectionId: 'lite',
      sql: 'SELECT 1 AS one',
    });
    expect(created.status).toBe(201);
    await eventually(() => seen.count >= 1, 5000);
    expect((await client.listTools()).tools.find((t) => t.name === name)?.description).toBe('v1');
    await m.h.call('PATCH', `/api/tools/${name}`, m.h.adminKey, { description: 'v2' });
    await eventually(() => seen.count >= 2, 5000);
    expect((await client.listTools()).tools.find((t) => t.name === name)?.description).toBe('v2');
    await m.h.call('DELETE', `/api/tools/${name}`, m.h.adminKey);
    await eventually(() => seen.count >= 3, 5000);
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain(name);
  });

  it("a grant change that hides a tool's connection from the caller reaches its client, and undoing it brings the tool back", async () => {
    const db = `grants_${transport}.db`;
    new Database(path.join(workspaceSqliteDir(m.h, 'default'), db)).close();
    const conn = await m.h.call('POST', '/api/connections', m.h.adminKey, { name: `granted-${transport}`, url: `sqlite:${db}` });
    expect(conn.status, JSON.stringify(conn.body)).toBe(201);
    const name = `granted_${transport}`;
    expect(
      (
        await m.h.call('POST', '/api/tools', m.h.adminKey, {
          name,
          description: 'on a granted connection',
          connectionId: conn.body.data.connection.id,
          sql: 'SELECT 1 AS one',
        })
      ).status,
    ).toBe(201);
    const client = await m.connect(transport, m.h.readerKey);
    const seen = listChanges(client);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain(name);

    const grants = `/api/connections/${conn.body.data.connection.id}/grants`;
    expect((await m.h.call('PUT', grants, m.h.adminKey, { everyone: false, users: [] })).status).toBe(200);
    await eventually(() => seen.count >= 1, 5000);
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain(name);
    const hidden = await client.callTool({ name, arguments: {} });
    expect(hidden.isError).toBe(true);
    expect(JSON.parse(textOf(hidden).split('\n')[1])).toMatchObject({ code: 'tool_not_found' });

    expect((await m.h.call('PUT', grants, m.h.adminKey, { everyone: true })).status).toBe(200);
    await eventually(() => seen.count >= 2, 5000);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain(name);
  });

  it('a tool created by the CLI in another process reaches the connected client', async () => {
    const client = await m.connect(transport, toolsOnlyKey);
    const seen = listChanges(client);
    const name = `cli_${transport}`;
    const file = path.join(m.h.dataDir, `${name}.json`);
    fs.writeFileSync(
      file,
      JSON.stringify({
        name,
        description: 'made by the CLI',
        connectionId: 'lite',
        sql: 'SELECT name FROM items WHERE name = :name',
        parameters: [{ name: 'name', type: 'string', required: true }],
      }),
    );
    const out = await runCli({ DBQ_DATA_DIR: m.h.dataDir }, 'tool', 'create', '--workspace', 'default', '--file', file);
    expect(out.tool).toMatchObject({ name, version: 1 });
    await eventually(() => seen.count >= 1, 8000);
    const listed = (await client.listTools()).tools.find((t) => t.name === name);
    expect(listed?.inputSchema.required).toEqual(['name']);
    expect(dataOf(await client.callTool({ name, arguments: { name: 'plum' } })).rows).toEqual([['plum']]);
    const audit = await m.h.svc.db.selectFrom('audit_log').selectAll().where('target_name', '=', name).execute();
    expect(audit).toMatchObject([{ action: 'tool.created', source: 'cli' }]);
  });
});

it('closing the sessions ends their watches', async () => {
  const client = await m.connect('streamable', m.h.readerKey);
  await client.listTools();
  await eventually(() => m.h.svc.toolChanges.size === 1);
  // Close every client the harness opened: no watch may outlive them.
  await m.app.close();
  await eventually(() => m.h.svc.toolChanges.size === 0, 5000);
});
