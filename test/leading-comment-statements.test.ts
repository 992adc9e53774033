// A statement that begins with a comment is one statement on every engine. PostgreSQL's used to
// be refused as "Only one statement per request is allowed": libpg-query counts leading
// comments into the statement's offset, and any offset read as an empty statement before it.
// sqlcommenter-style clients put `/* app=…, traceparent=… */` in front of every query.
// A `;` before the statement is still an empty statement: several statements, refused.
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, MYSQL_URL, PG_URL, workspaceSqliteDir, type Harness } from './support/harness.ts';

let h: Harness;
const table = `lead_comment_${process.pid}`;
const ENGINES = ['postgres', 'mysql', 'sqlite'] as const;

const COMMENTED_READS = [
  `/* app=billing,route=%2Finvoices */ SELECT count(*) AS n FROM ${table}`,
  `-- note\nSELECT count(*) AS n FROM ${table}`,
  `/* a */ /* b */\n-- c\nSELECT count(*) AS n FROM ${table}`,
  `SELECT count(*) AS n FROM ${table} /*traceparent='00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'*/`,
];

beforeAll(async () => {
  h = await createHarness();
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query(`DROP TABLE IF EXISTS ${table}; CREATE TABLE ${table} (id int); INSERT INTO ${table} VALUES (1), (2)`);
  await client.end();
  const my = await import('mysql2/promise');
  const conn = await my.createConnection(MYSQL_URL);
  await conn.query(`DROP TABLE IF EXISTS ${table}`);
  await conn.query(`CREATE TABLE ${table} (id int)`);
  await conn.query(`INSERT INTO ${table} VALUES (1), (2)`);
  await conn.end();
  const dir = workspaceSqliteDir(h, 'default');
  const Database = (await import('better-sqlite3')).default;
  const db = new Database(path.join(dir, 'comments.db'));
  db.exec(`CREATE TABLE ${table} (id int); INSERT INTO ${table} VALUES (1), (2);`);
  db.close();
  for (const [name, url] of [
    ['postgres', PG_URL],
    ['mysql', MYSQL_URL],
    ['sqlite', 'sqlite:comments.db'],
  ]) {
    const res = await h.call('POST', '/api/connections', h.adminKey, { name: `c-${name}`, url });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
});

afterAll(async () => {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query(`DROP TABLE IF EXISTS ${table}`);
  await client.end();
  const my = await import('mysql2/promise');
  const conn = await my.createConnection(MYSQL_URL);
  await conn.query(`DROP TABLE IF EXISTS ${table}`);
  await conn.end();
  await h?.close();
});

async function count(engine: string): Promise<number> {
  const res = await h.call('POST', '/api/query', h.adminKey, {
    connectionId: `c-${engine}`,
    sql: `SELECT count(*) AS n FROM ${table}`,
    rowFormat: 'objects',
  });
  expect(res.status).toBe(200);
  return Number(res.body.data.rows[0].n);
}

describe.each(ENGINES)('%s', (engine) => {
  it.each(COMMENTED_READS)('a read-only key runs %j', async (sql) => {
    const res = await h.call('POST', '/api/query', h.readerKey, { connectionId: `c-${engine}`, sql, rowFormat: 'objects' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(Number(res.body.data.rows[0].n)).toBe(2);
  });

  it('a write with a leading comment is still a write: refused for the reader, run for the admin', async () => {
    const sql = `/* app=x */ INSERT INTO ${table} VALUES (3)`;
    const refused = await h.call('POST', '/api/query', h.readerKey, { connectionId: `c-${engine}`, sql });
    expect(refused.status).toBe(403);
    expect(await count(engine)).toBe(2);
    const ran = await h.call('POST', '/api/query', h.adminKey, { connectionId: `c-${engine}`, sql });
    expect(ran.status, JSON.stringify(ran.body)).toBe(200);
    expect(await count(engine)).toBe(3);
    await h.call('POST', '/api/query', h.adminKey, { connectionId: `c-${engine}`, sql: `DELETE FROM ${table} WHERE id = 3` });
  });

  it.each([`/* x */ ; SELECT 1`, `-- c\n; SELECT 1`, `/* x */ SELECT 1; DELETE FROM ${table}`])(
    'several statements behind comments are still refused: %j',
    async (sql) => {
      const res = await h.call('POST', '/api/query', h.adminKey, { connectionId: `c-${engine}`, sql });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(await count(engine)).toBe(2);
    },
  );
});
