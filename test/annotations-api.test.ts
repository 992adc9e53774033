// GET|PUT /connections/{id}/annotations on a fresh database of each engine (real PostgreSQL,
// MariaDB and a SQLite file): the document round-trips, each PUT is the next version and one
// audit entry, the database's own comments (COMMENT ON, MySQL COMMENT) show where no
// annotation replaces them, MCP describe_table and search_objects show and match descriptions,
// and bad documents (unknown names, a write or broken example, a reader's PUT) are refused
// with the example named and nothing stored.
import path from 'node:path';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { workspaceSqliteDir } from './support/harness.ts';
import { createApiKey } from '../src/workspaces/api-keys.ts';
import { createMcpHarness, dataOf, type McpHarness } from './support/mcp-harness.ts';

const SUFFIX = `${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
const DB = `dbq_annot_${SUFFIX}`;

const TABLES = [
  'CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(40) NOT NULL, cust_flg INTEGER)',
  'CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id), total DECIMAL(10,2), status VARCHAR(20))',
];

interface Case {
  name: 'postgres' | 'mysql' | 'sqlite';
  connection: string;
  /** The engine stores comments (SQLite has none). */
  comments: boolean;
}
const CASES: Case[] = [
  { name: 'postgres', connection: 'annot-pg', comments: true },
  { name: 'mysql', connection: 'annot-my', comments: true },
  { name: 'sqlite', connection: 'annot-lite', comments: false },
];

const DOC = {
  tables: {
    orders: {
      description: 'One row per checkout',
      synonyms: ['purchases'],
      columns: { total: { description: 'Amount charged after discounts, in euros', synonyms: ['revenue', 'amount'] } },
    },
    customers: { columns: { cust_flg: { description: '1 when the customer is a wholesale buyer' } } },
  },
  examples: [{ question: 'How many purchases are there?', sql: 'SELECT count(*) FROM orders' }],
};

let m: McpHarness;
let client: Client;
const ids: Record<string, string> = {};

const annotations = (c: string, key = m.h.readerKey) => m.h.call('GET', `/api/connections/${ids[c]}/annotations`, key);
const put = (c: string, body: unknown, key = m.h.adminKey) => m.h.call('PUT', `/api/connections/${ids[c]}/annotations`, key, body);
const auditCount = async () =>
  Number(
    (
      await m.h.svc.db
        .selectFrom('audit_log')
        .select((e) => e.fn.countAll().as('n'))
        .where('action', '=', 'connection.annotations_changed')
        .executeTakeFirstOrThrow()
    ).n,
  );

beforeAll(async () => {
  m = await createMcpHarness();
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${DB}`);
  await admin.end();
  const p = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:5432/${DB}` });
  await p.connect();
  for (const sql of TABLES) await p.query(sql);
  await p.query(`COMMENT ON TABLE customers IS 'People and firms who bought at least once'`);
  await p.query(`COMMENT ON COLUMN orders.status IS 'placed, shipped or cancelled'`);
  await p.query(`COMMENT ON COLUMN orders.total IS 'the database says: gross'`);
  await p.end();

  const my = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root' });
  await my.query(`CREATE DATABASE ${DB}`);
  await my.query(`USE ${DB}`);
  for (const sql of TABLES) await my.query(sql);
  await my.query(`ALTER TABLE customers COMMENT = 'People and firms who bought at least once'`);
  await my.query(`ALTER TABLE orders MODIFY status VARCHAR(20) COMMENT 'placed, shipped or cancelled'`);
  await my.query(`ALTER TABLE orders MODIFY total DECIMAL(10,2) COMMENT 'the database says: gross'`);
  await my.end();

  const lite = new Database(path.join(workspaceSqliteDir(m.h, 'default'), 'annot.db'));
  for (const sql of TABLES) lite.exec(sql);
  lite.close();

  for (const [name, url] of [
    ['annot-pg', `postgres://postgres@127.0.0.1:5432/${DB}`],
    ['annot-my', `mysql://root@127.0.0.1:3306/${DB}`],
    ['annot-lite', 'sqlite:annot.db'],
  ]) {
    const res = await m.h.call('POST', '/api/connections', m.h.adminKey, { name, url });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    ids[name] = res.body.data.connection.id;
  }
  client = await m.connect('streamable', m.h.readerKey);
}, 60_000);

afterAll(async () => {
  await m?.close();
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  await admin.end();
  const my = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root' });
  await my.query(`DROP DATABASE IF EXISTS ${DB}`);
  await my.end();
});

describe.each(CASES)('$name', ({ connection, comments }) => {
  it('starts empty, round-trips the document, and each PUT is the next version with one audit entry', async () => {
    const empty = await annotations(connection);
    expect(empty.status).toBe(200);
    expect(empty.body.data).toEqual({
      connectionId: ids[connection],
      version: 0,
      updatedAt: null,
      updatedBy: null,
      tables: {},
      examples: [],
    });

    const before = await auditCount();
    const saved = await put(connection, DOC);
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    expect(saved.body.data).toMatchObject({ version: 1, ...DOC });
    const read = await annotations(connection);
    expect(read.body.data).toMatchObject({ connectionId: ids[connection], version: 1, ...DOC });
    expect(read.body.data.updatedBy).toMatch(/^usr_/);
    expect(await auditCount()).toBe(before + 1);

    const second = await put(connection, { ...DOC, examples: [] });
    expect(second.body.data.version).toBe(2);
    const old = await m.h.call('GET', `/api/connections/${ids[connection]}/annotations?version=1`, m.h.readerKey);
    expect(old.body.data).toMatchObject({ version: 1, examples: DOC.examples });
    expect((await m.h.call('GET', `/api/connections/${ids[connection]}/annotations?version=9`, m.h.readerKey)).status).toBe(404);
    await put(connection, DOC);
  });

  it('refuses a bad document with a clear 400 and stores nothing', async () => {
    const version = (await annotations(connection)).body.data.version;
    const audits = await auditCount();
    const cases: [unknown, RegExp][] = [
      [{ tables: { refunds: { description: 'x' } } }, /tables\.refunds: no table or view/],
      [{ tables: { orders: { columns: { amount: { description: 'x' } } } } }, /tables\.orders\.columns\.amount: orders has no column/],
      [{ tables: { orders: { colour: 'red' } } }, /colour/],
      [
        { examples: [DOC.examples[0], { question: 'Wipe the orders', sql: 'DELETE FROM orders' }] },
        /examples\[1\] \("Wipe the orders"\): only read/,
      ],
      [{ examples: [{ question: 'Two at once', sql: 'SELECT 1; SELECT 2' }] }, /examples\[0\] \("Two at once"\)/],
      [{ examples: [{ question: 'Broken', sql: 'SELEC nothing' }] }, /examples\[0\] \("Broken"\)/],
      [{ tables: { orders: { synonyms: Array.from({ length: 30 }, (_, i) => `s${i}`) } } }, /synonyms/],
    ];
    for (const [body, message] of cases) {
      const res = await put(connection, body);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body).toMatchObject({ success: false, code: 'invalid_request' });
      expect(res.body.error).toMatch(message);
    }
    const reader = await put(connection, DOC, m.h.readerKey);
    expect(reader.status).toBe(403);
    expect((await annotations(connection)).body.data.version).toBe(version);
    expect(await auditCount()).toBe(audits);
  });

  it('describe_table shows annotations over the database comments', async () => {
    const orders = dataOf(
      await client.callTool({ name: 'describe_table', arguments: { connectionId: connection, table: 'orders' } }),
    ).table;
    expect(orders).toMatchObject({ description: 'One row per checkout', synonyms: ['purchases'] });
    const byName = Object.fromEntries(orders.columns.map((c: any) => [c.name, c]));
    // The annotation wins over the database's own comment on total.
    expect(byName.total).toMatchObject({ description: 'Amount charged after discounts, in euros', synonyms: ['revenue', 'amount'] });
    if (comments) expect(byName.status.description).toBe('placed, shipped or cancelled');
    else expect(byName.status.description).toBeUndefined();
    const customers = dataOf(
      await client.callTool({ name: 'describe_table', arguments: { connectionId: connection, table: 'customers' } }),
    ).table;
    expect(customers.description).toBe(comments ? 'People and firms who bought at least once' : undefined);
  });

  it('search_objects matches descriptions and synonyms and shows them', async () => {
    const tables = dataOf(
      await client.callTool({ name: 'search_objects', arguments: { connectionId: connection, pattern: 'purchases', detail: 'summary' } }),
    );
    expect(tables.objects).toEqual([expect.objectContaining({ kind: 'table', description: 'One row per checkout' })]);
    expect(tables.objects[0].name).toMatch(/orders$/);
    const columns = dataOf(
      await client.callTool({
        name: 'search_objects',
        arguments: { connectionId: connection, pattern: 'wholesale', kind: 'column', detail: 'summary' },
      }),
    );
    expect(columns.objects).toEqual([
      expect.objectContaining({ kind: 'column', table: 'customers', description: '1 when the customer is a wholesale buyer' }),
    ]);
    // A name match ranks before a description match.
    const revenue = (await m.h.call('GET', `/api/connections/${ids[connection]}/objects?pattern=total&kind=column`, m.h.readerKey)).body
      .data;
    expect(revenue.objects[0]).toMatch(/orders\.total$/);
    const names = (await m.h.call('GET', `/api/connections/${ids[connection]}/objects?pattern=revenue&kind=column`, m.h.readerKey)).body
      .data;
    expect(names.objects).toEqual([expect.stringMatching(/orders\.total$/)]);
  });
});

it('a tools-only key may not read them: names and example SQL show the schema it exists to hide', async () => {
  const { secret } = await createApiKey(m.h.svc.db, {
    workspace: 'default',
    email: 'reader@acme.test',
    name: 'tools-only',
    scope: { toolsOnly: true },
  });
  const res = await annotations('annot-lite', secret);
  expect(res.status).toBe(403);
  expect(res.body).toMatchObject({ code: 'insufficient_permissions', details: { reason: 'this key may run curated tools only' } });
});

it('another workspace can neither read nor change the annotations', async () => {
  const url = `/w/other/api/connections/${ids['annot-lite']}/annotations`;
  expect((await m.h.call('GET', url, m.h.otherKey)).status).toBe(404);
  expect((await m.h.call('PUT', url, m.h.otherKey, DOC)).status).toBe(404);
});
