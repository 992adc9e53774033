// search_objects and GET /connections/{id}/objects on a fresh database of each
// engine (real PostgreSQL, MariaDB and a SQLite file): the pattern is a case-insensitive
// substring whose LIKE wildcards are plain characters, results rank exact > prefix > substring
// then by name, the three detail levels, the limit, every key may search, errors are envelopes,
// and the MCP tool answers what the route answers.
import path from 'node:path';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { workspaceSqliteDir } from './support/harness.ts';
import { createMcpHarness, dataOf, textOf, type McpHarness } from './support/mcp-harness.ts';

const SUFFIX = `${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
const PG_DB = `dbq_search_${SUFFIX}`;
const MY_DB = `dbq_search_${SUFFIX}`;
const VIEWER = `dbq_t_search_${SUFFIX}`;

const TABLES = [
  'CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(40) NOT NULL, email VARCHAR(80))',
  'CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id), total DECIMAL(10,2))',
  'CREATE TABLE order_items (id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL, qty INTEGER)',
  'CREATE TABLE audit_log (id INTEGER PRIMARY KEY, note VARCHAR(200))',
  'CREATE INDEX idx_orders_customer ON orders (customer_id)',
  'CREATE VIEW customer_orders AS SELECT c.name, o.total FROM customers c JOIN orders o ON o.customer_id = c.id',
];

interface EngineCase {
  name: 'postgres' | 'mysql' | 'sqlite';
  connection: string;
  /** Qualified name prefix: "public.", "<db>.", "" on SQLite. */
  q: string;
  hasFunctions: boolean;
}

const CASES: EngineCase[] = [
  { name: 'postgres', connection: 'search-pg', q: 'public.', hasFunctions: true },
  { name: 'mysql', connection: 'search-my', q: `${MY_DB}.`, hasFunctions: true },
  { name: 'sqlite', connection: 'search-lite', q: '', hasFunctions: false },
];

let m: McpHarness;
let client: Client;

const objects = (id: string, query: string, key = m.h.readerKey) => m.h.call('GET', `/api/connections/${id}/objects?${query}`, key);

beforeAll(async () => {
  m = await createMcpHarness();

  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${PG_DB}`);
  await admin.end();
  const p = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:5432/${PG_DB}` });
  await p.connect();
  for (const sql of TABLES) await p.query(sql);
  await p.query('CREATE FUNCTION order_total(n integer) RETURNS numeric LANGUAGE sql AS $$ SELECT n * 2.0 $$');
  await p.end();

  const my = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root' });
  await my.query(`CREATE DATABASE ${MY_DB}`);
  await my.query(`USE ${MY_DB}`);
  for (const sql of TABLES) await my.query(sql);
  await my.query('CREATE FUNCTION order_total(n INT) RETURNS DECIMAL(10,2) DETERMINISTIC RETURN n * 2');
  await my.query(`CREATE USER '${VIEWER}'@'%' IDENTIFIED BY 'Viewer-pw-1'`);
  await my.query(`GRANT SELECT ON ${MY_DB}.customers TO '${VIEWER}'@'%'`);
  await my.end();

  const lite = new Database(path.join(workspaceSqliteDir(m.h, 'default'), 'search.db'));
  for (const sql of TABLES) lite.exec(sql);
  lite.close();

  for (const [name, url] of [
    ['search-pg', `postgres://postgres@127.0.0.1:5432/${PG_DB}`],
    ['search-my', `mysql://root@127.0.0.1:3306/${MY_DB}`],
    ['search-lite', 'sqlite:search.db'],
  ]) {
    const res = await m.h.call('POST', '/api/connections', m.h.adminKey, { name, url });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  client = await m.connect('streamable', m.h.readerKey);
}, 60_000);

afterAll(async () => {
  await m?.close();
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${PG_DB} WITH (FORCE)`);
  await admin.end();
  const my = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root' });
  await my.query(`DROP DATABASE IF EXISTS ${MY_DB}`);
  await my.query(`DROP USER IF EXISTS '${VIEWER}'@'%'`);
  await my.end();
});

describe.each(CASES)('$name', ({ connection, q, hasFunctions }) => {
  it('ranks exact, then prefix, then substring, then by name; tables and views by default', async () => {
    const res = await objects(connection, 'pattern=order');
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ total: 3, truncated: false });
    expect(res.body.data.objects).toEqual([`${q}order_items`, `${q}orders`, `${q}customer_orders`]);
    expect((await objects(connection, 'pattern=ORDERS')).body.data.objects).toEqual([`${q}orders`, `${q}customer_orders`]);
    expect((await objects(connection, 'pattern=orders&kind=table')).body.data.objects).toEqual([`${q}orders`]);
    expect((await objects(connection, 'pattern=orders&kind=view')).body.data.objects).toEqual([`${q}customer_orders`]);
  });

  it('treats LIKE wildcards as plain characters', async () => {
    expect((await objects(connection, `pattern=${encodeURIComponent('%')}`)).body.data.objects).toEqual([]);
    expect((await objects(connection, 'pattern=_&kind=table')).body.data.objects).toEqual([`${q}audit_log`, `${q}order_items`]);
  });

  it('summary: column count for tables, table and type for columns', async () => {
    const tables = (await objects(connection, 'pattern=customers&kind=table&detail=summary')).body.data.objects;
    expect(tables).toEqual([{ name: `${q}customers`, kind: 'table', columnCount: 3 }]);
    const columns = (await objects(connection, 'pattern=customer_id&kind=column&detail=summary')).body.data.objects;
    expect(columns).toEqual([{ name: `${q}orders.customer_id`, kind: 'column', table: 'orders', type: expect.stringMatching(/int/i) }]);
  });

  it('full: a table as describe_table gives it, indexes with their columns', async () => {
    const full = (await objects(connection, 'pattern=customers&kind=table&detail=full')).body.data.objects;
    const described = dataOf(
      await client.callTool({ name: 'describe_table', arguments: { connectionId: connection, table: 'customers' } }),
    );
    expect(full).toEqual([described.table]);
    expect(full[0].columns.map((c: any) => c.name)).toEqual(['id', 'name', 'email']);
    const index = (await objects(connection, 'pattern=idx_orders&kind=index&detail=full')).body.data.objects;
    expect(index).toEqual([
      expect.objectContaining({ kind: 'index', name: 'idx_orders_customer', table: 'orders', unique: false, columns: ['customer_id'] }),
    ]);
  });

  it('functions where the engine has them', async () => {
    const res = (await objects(connection, 'pattern=order_total&kind=function&detail=full')).body.data;
    if (!hasFunctions) return expect(res.objects).toEqual([]);
    expect(res.objects).toEqual([
      expect.objectContaining({ kind: 'function', name: 'order_total', type: expect.stringMatching(/numeric|decimal/i) }),
    ]);
    expect(res.objects[0].arguments).toMatch(/n/);
  });

  it('limit cuts after ranking and says so', async () => {
    const res = (await objects(connection, 'kind=column&limit=2')).body.data;
    expect(res.objects).toHaveLength(2);
    expect(res.truncated).toBe(true);
    expect(res.total).toBeGreaterThan(2);
  });

  it('the MCP tool answers what the route answers', async () => {
    const rest = await objects(connection, 'pattern=order&detail=summary');
    const tool = await client.callTool({
      name: 'search_objects',
      arguments: { connectionId: connection, pattern: 'order', detail: 'summary' },
    });
    expect(dataOf(tool)).toEqual(rest.body.data);
  });
});

describe('errors and permissions', () => {
  it('refuses bad arguments with the envelope', async () => {
    for (const query of ['limit=501', 'limit=0', 'kind=trigger', 'detail=all', 'nope=1']) {
      const res = await objects('search-pg', query);
      expect(res.status, query).toBe(400);
      expect(res.body).toMatchObject({ success: false, code: 'invalid_request' });
    }
    const bad = await client.callTool({ name: 'search_objects', arguments: { connectionId: 'search-pg', limit: 501 } });
    expect(bad.isError).toBe(true);
  });

  it('any key of the workspace may search; other workspaces see no connection', async () => {
    expect((await objects('search-pg', 'pattern=orders', m.h.adminKey)).status).toBe(200);
    const other = await m.h.call('GET', '/w/other/api/connections/search-pg/objects?pattern=orders', m.h.otherKey);
    expect(other.status).toBe(404);
    expect(other.body.success).toBe(false);
    const missing = await client.callTool({ name: 'search_objects', arguments: { connectionId: 'nowhere' } });
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toMatch(/not found/i);
    expect((await m.h.call('GET', '/api/connections/search-pg/objects', null)).status).toBe(401);
  });

  it('reads the catalog as the reader login when the connection has one', async () => {
    const url = `mysql://root@127.0.0.1:3306/${MY_DB}`;
    const readUrl = `mysql://${VIEWER}:Viewer-pw-1@127.0.0.1:3306/${MY_DB}`;
    const res = await m.h.call('POST', '/api/connections', m.h.adminKey, { name: 'search-my-viewer', url, readUrl });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    // The viewer may read only customers, so MariaDB's information_schema shows it nothing else.
    expect((await objects('search-my-viewer', 'kind=table')).body.data.objects).toEqual([`${MY_DB}.customers`]);
    expect((await objects('search-my', 'kind=table')).body.data.total).toBe(4);
  });
});
