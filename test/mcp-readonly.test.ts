// A read-only key over MCP is held to reads exactly as over REST: writes and escape attempts
// against a real PostgreSQL table come back as isError results, the table is unchanged, and
// each attempt is one `rejected` (or `failed`) history entry with source `mcp`.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { PG_URL } from './support/harness.ts';
import { createMcpHarness, dataOf, textOf, TRANSPORTS, type McpHarness } from './support/mcp-harness.ts';

let m: McpHarness;
let pgClient: pg.Client;
const table = `mcp_probe_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;

async function rowCount(): Promise<number> {
  return Number((await pgClient.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
}

beforeAll(async () => {
  m = await createMcpHarness();
  pgClient = new pg.Client({ connectionString: PG_URL });
  await pgClient.connect();
});
afterAll(async () => {
  await pgClient?.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
  await pgClient?.end();
  await m?.close();
});

const ATTEMPTS = [
  `DELETE FROM ${table}`,
  `DROP TABLE ${table}`,
  `WITH d AS (DELETE FROM ${table} RETURNING *) SELECT count(*) FROM d`,
  `SELECT 1; DELETE FROM ${table}`,
  `UPDATE ${table} SET v = 'x'`,
  `INSERT INTO ${table} VALUES (999, 'x')`,
  `TRUNCATE ${table}`,
  `SELECT * FROM ${table} FOR UPDATE`,
  `SELECT * INTO ${table}_copy FROM ${table}`,
  `SELECT set_config('default_transaction_read_only', 'off', false)`,
  `COPY ${table} FROM PROGRAM 'true'`,
  `/* harmless */ DELETE FROM ${table}`,
];

describe.each(TRANSPORTS)('over %s', (transport) => {
  let admin: Client;
  let reader: Client;

  beforeAll(async () => {
    admin = await m.connect(transport, m.h.adminKey);
    reader = await m.connect(transport, m.h.readerKey, transport === 'sse' ? { keyIn: 'query' } : {});
    // The admin builds the probe table through MCP: writes are allowed for admin keys.
    dataOf(
      await admin.callTool({
        name: 'execute_query',
        arguments: { connectionId: 'pg', sql: `CREATE TABLE IF NOT EXISTS ${table} (id int PRIMARY KEY, v text)` },
      }),
    );
    dataOf(await admin.callTool({ name: 'execute_query', arguments: { connectionId: 'pg', sql: `DELETE FROM ${table}` } }));
    const ins = dataOf(
      await admin.callTool({
        name: 'execute_query',
        arguments: { connectionId: 'pg', sql: `INSERT INTO ${table} SELECT g, 'v' || g FROM generate_series(1, 10) g` },
      }),
    );
    expect(ins.affectedRows).toBe(10);
  });

  it.each(ATTEMPTS)('refuses the reader: %s', async (sql) => {
    const res = await reader.callTool({ name: 'execute_query', arguments: { connectionId: 'pg', sql } });
    expect(res.isError).toBe(true);
    expect(textOf(res)).toMatch(/Insufficient permissions|Invalid request|not allowed|statement|read-only/i);
    expect(await rowCount()).toBe(10);
    const history = dataOf(await reader.callTool({ name: 'get_query_history', arguments: { limit: 1 } }));
    expect(history.entries[0]).toMatchObject({ sql, source: 'mcp', status: expect.stringMatching(/^(rejected|failed)$/) });
  });

  it('lets the reader read the same table', async () => {
    const data = dataOf(
      await reader.callTool({ name: 'execute_query', arguments: { connectionId: 'pg', sql: `SELECT count(*) AS n FROM ${table}` } }),
    );
    expect(data.rows).toEqual([['10']]);
  });

  it('refuses generate_sql write requests for the reader without touching the table', async () => {
    const res = await reader.callTool({
      name: 'generate_sql',
      arguments: { connectionId: 'pg', prompt: `delete all rows from ${table}`, execute: true },
    });
    if (!res.isError) expect((res.structuredContent as any).sql).not.toMatch(/^\s*(delete|drop|truncate|update)/i);
    expect(await rowCount()).toBe(10);
  });
});
