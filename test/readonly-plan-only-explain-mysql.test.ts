// API.md v1.1 on the machine's real MariaDB: EXPLAIN without ANALYZE of INSERT/UPDATE/DELETE/
// REPLACE plans and never runs, so it is a read when every part of the explained statement
// passes a read's checks. MariaDB refuses it inside a read-only transaction (1792), so it runs in
// an ordinary transaction that is always rolled back; on a connection whose reads log in as a
// read-only user it is refused (MariaDB checks the write's privileges: 1142), never retried as
// the owner. EXPLAIN ANALYZE / ANALYZE run the statement: refused. Every case checks the table.
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, MYSQL_URL, type Harness } from './support/harness.ts';

let h: Harness;
let my: mysql.Connection;
const suffix = `${process.pid}_${Math.random().toString(36).slice(2, 7)}`;
const table = `plan_my_${suffix}`;
const other = `plan_my_src_${suffix}`;
const fn = `plan_my_fn_${suffix}`;
const viewer = `dbq_t_planv_${suffix}`;
const VIEWER_PW = `Plan-Viewer-${suffix}`;
/** A reader login that may write elsewhere (the audit says can_write) but only read here. */
const partial = `dbq_t_planp_${suffix}`;

beforeAll(async () => {
  h = await createHarness();
  my = await mysql.createConnection({ host: '127.0.0.1', user: 'root', database: 'test' });
  await my.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v varchar(20))`);
  await my.query(`INSERT INTO ${table} VALUES (1, 'a'), (2, 'b')`);
  await my.query(`CREATE TABLE ${other} (id int PRIMARY KEY)`);
  await my.query(`INSERT INTO ${other} VALUES (7), (8)`);
  await my.query(`CREATE FUNCTION ${fn}(x int) RETURNS int DETERMINISTIC NO SQL RETURN x`);
  await my.query(`CREATE USER '${viewer}'@'%' IDENTIFIED BY '${VIEWER_PW}'`);
  await my.query(`GRANT SELECT ON test.${table} TO '${viewer}'@'%'`);
  await my.query(`GRANT SELECT ON test.${other} TO '${viewer}'@'%'`);
  await my.query(`CREATE USER '${partial}'@'%' IDENTIFIED BY '${VIEWER_PW}'`);
  await my.query(`GRANT SELECT ON test.${table} TO '${partial}'@'%'`);
  await my.query(`GRANT SELECT, INSERT ON test.${other} TO '${partial}'@'%'`);
  for (const [name, extra] of [
    ['my', {}],
    ['my-ro', { readOnly: true }],
    ['my-reader', { readUrl: `mysql://${viewer}:${VIEWER_PW}@127.0.0.1:3306/test` }],
    ['my-reader-ro', { readOnly: true, readUrl: `mysql://${viewer}:${VIEWER_PW}@127.0.0.1:3306/test` }],
    ['my-partial', { readUrl: `mysql://${partial}:${VIEWER_PW}@127.0.0.1:3306/test` }],
  ] as const) {
    const res = await h.call('POST', '/api/connections', h.adminKey, { name, url: MYSQL_URL, ...extra });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
}, 30_000);

afterAll(async () => {
  await h.close();
  await my.query(`DROP USER IF EXISTS '${viewer}'@'%'`);
  await my.query(`DROP USER IF EXISTS '${partial}'@'%'`);
  await my.query(`DROP FUNCTION IF EXISTS ${fn}`);
  await my.query(`DROP TABLE IF EXISTS ${table}, ${other}`);
  await my.end();
});

async function state(): Promise<string> {
  const [rows] = await my.query(`SELECT * FROM ${table} ORDER BY id`);
  const [src] = await my.query(`SELECT * FROM ${other} ORDER BY id`);
  return JSON.stringify([rows, src]);
}

const query = (key: string, connectionId: string, sql: string) => h.call('POST', '/api/query', key, { connectionId, sql });

const PLANS = [
  `EXPLAIN DELETE FROM ${table} WHERE id = 1`,
  `EXPLAIN UPDATE ${table} SET v = UPPER(v) WHERE id = 2`,
  `EXPLAIN INSERT INTO ${table} (id, v) VALUES (3, 'c')`,
  `EXPLAIN REPLACE INTO ${table} VALUES (1, 'z')`,
  `EXPLAIN INSERT INTO ${table} (id, v) SELECT id, 'x' FROM ${other} WHERE id > 0`,
  `EXPLAIN INSERT INTO \`${table}\`(id, v) VALUES (4, 'd') ON DUPLICATE KEY UPDATE v = VALUES(v)`,
  `EXPLAIN EXTENDED DELETE FROM ${table} WHERE id IN (SELECT id FROM ${other})`,
  `EXPLAIN PARTITIONS UPDATE ${table} SET v = 'p'`,
  `explain /* a plan */ delete from test.${table} where id = 2`,
  `DESCRIBE DELETE FROM ${table} WHERE id = 1`,
];

describe('MariaDB: EXPLAIN without ANALYZE of a write is a read', () => {
  it('plans INSERT, UPDATE, DELETE, REPLACE and INSERT … SELECT for a read-only key and for an admin on a read-only connection, running none of them', async () => {
    const before = await state();
    for (const [key, connection] of [
      [h.readerKey, 'my'],
      [h.adminKey, 'my-ro'],
      [h.readerKey, 'my-ro'],
    ] as const) {
      for (const sql of PLANS) {
        const res = await query(key, connection, sql);
        expect(res.status, `${connection}: ${sql} → ${JSON.stringify(res.body)}`).toBe(200);
        expect(res.body.data.statementType).toBe('EXPLAIN');
        expect(res.body.data.rowCount).toBeGreaterThan(0);
        expect(JSON.stringify(res.body.data.rows)).toContain('plan_my_');
      }
      const json = await query(key, connection, `EXPLAIN FORMAT=JSON DELETE FROM ${table} WHERE id = 1`);
      expect(json.status, JSON.stringify(json.body)).toBe(200);
      expect(JSON.parse(json.body.data.rows[0][0]).query_block).toBeDefined();
      expect(await state()).toBe(before);
    }
    // The plan-only session left nothing behind: the next statements see the table as it was.
    const count = await query(h.readerKey, 'my', `SELECT COUNT(*) FROM ${table}`);
    expect(String(count.body.data.rows[0][0])).toBe('2');
  });

  it('refuses what runs the statement or anything beyond a plan, and changes nothing', async () => {
    const before = await state();
    const cases: [string, number[]][] = [
      [`EXPLAIN ANALYZE DELETE FROM ${table}`, [403]],
      [`ANALYZE DELETE FROM ${table}`, [403]],
      [`ANALYZE FORMAT=JSON DELETE FROM ${table}`, [403]],
      [`EXPLAIN /*x*/ ANALYZE DELETE FROM ${table}`, [403]],
      [`EXPLAIN -- x\nANALYZE DELETE FROM ${table}`, [403]],
      [`EXPLAIN # x\nAnAlYzE DELETE FROM ${table}`, [403]],
      [`EXPLAIN FORMAT=JSON ANALYZE DELETE FROM ${table}`, [403]],
      [`EXPLAIN /*!50000 ANALYZE */ DELETE FROM ${table}`, [403]],
      [`EXPLAIN /*M!100000 ANALYZE */ DELETE FROM ${table}`, [403]],
      [`/*!50000 EXPLAIN */ DELETE FROM ${table}`, [403]],
      [`EXPLAIN DELETE FROM ${table} /*!50000 , ${other} */`, [403]],
      [`EXPLAIN DELETE FROM ${table} WHERE id = ${fn}(1)`, [403]],
      [`EXPLAIN DELETE FROM ${table} WHERE id = \`abs\`(1)`, [403]],
      [`EXPLAIN DELETE FROM ${table} WHERE id = SLEEP(2)`, [403]],
      [`EXPLAIN UPDATE ${table} SET v = GET_LOCK('dbq_plan', 0)`, [403]],
      [`EXPLAIN INSERT INTO ${table} (id, v) VALUES (5, RELEASE_ALL_LOCKS())`, [403]],
      [`EXPLAIN UPDATE ${table} SET v = (SELECT @x := 1)`, [403]],
      [`EXPLAIN INSERT INTO ${table} (id) SELECT id FROM ${other} FOR UPDATE`, [403]],
      [`EXPLAIN INSERT INTO ${table} (id) SELECT id FROM ${other} LOCK IN SHARE MODE`, [403]],
      [`EXPLAIN INSERT INTO ${table} (id) SELECT id FROM ${other} INTO OUTFILE '/tmp/dbq_plan_${suffix}'`, [403]],
      [`EXPLAIN FOR CONNECTION 1`, [403, 422]],
      [`eXpLaIn AnAlYzE dElEtE FROM ${table}`, [403]],
      [`EXPLAIN \`ANALYZE\` DELETE FROM ${table}`, [403, 422]],
      // MySQL 8.1: the plan is written to a user variable.
      [`EXPLAIN FORMAT=JSON INTO @plan DELETE FROM ${table}`, [403, 422]],
      [`EXPLAIN DELETE FROM ${table} WHERE id = (SELECT NEXT VALUE FOR s)`, [403]],
      [`EXPLAIN DELETE FROM ${table} WHERE id = 1; DELETE FROM ${table}`, [400]],
      [`EXPLAIN DELETE FROM ${table}; DELETE FROM ${table}`, [400]],
    ];
    for (const [key, connection] of [
      [h.readerKey, 'my'],
      [h.adminKey, 'my-ro'],
    ] as const) {
      for (const [sql, statuses] of cases) {
        const res = await query(key, connection, sql);
        expect(statuses, `${connection}: ${sql} → ${res.status} ${JSON.stringify(res.body)}`).toContain(res.status);
      }
      expect(await state()).toBe(before);
    }
  });

  it('refuses a plan-only EXPLAIN of a write where reads log in as a read-only user, saying why, and never as the owner', async () => {
    const before = await state();
    const refusals: [string, string][] = [
      [h.readerKey, 'my-reader'],
      [h.adminKey, 'my-reader-ro'],
      [h.readerKey, 'my-reader-ro'],
      // Decided before anything runs for a reader login that can only read; for one that can
      // write elsewhere, MariaDB's own refusal of the reader login (1142) answers the same.
      [h.readerKey, 'my-partial'],
    ];
    for (const [key, connection] of refusals) {
      for (const sql of [`EXPLAIN DELETE FROM ${table} WHERE id = 1`, `EXPLAIN INSERT INTO ${table} (id, v) VALUES (9, 'z')`]) {
        const res = await query(key, connection, sql);
        expect(res.status, `${connection}: ${sql} → ${JSON.stringify(res.body)}`).toBe(403);
        expect(res.body.code).toBe('insufficient_permissions');
        expect(res.body.details.reason).toMatch(/MariaDB\/MySQL check write privileges for EXPLAIN of a write.*read-only user/);
        if (connection === 'my-partial') expect(res.body.details.errno).toBe(1142);
      }
    }
    // Plain reads there still log in as the reader and work.
    for (const connection of ['my-reader', 'my-partial']) {
      const res = await query(h.readerKey, connection, `EXPLAIN SELECT * FROM ${table}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    expect(await state()).toBe(before);
  });

  it("runs an admin's plan-only EXPLAIN on a writable connection with reader credentials as the admin statement it was", async () => {
    const before = await state();
    const res = await query(h.adminKey, 'my-reader', `EXPLAIN DELETE FROM ${table} WHERE id = 1`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(JSON.stringify(res.body.data.rows)).toContain(table);
    expect(await state()).toBe(before);
  });

  it('keeps an admin write on a writable connection a write, and an ordinary read in its read-only transaction', async () => {
    const write = await query(h.adminKey, 'my', `UPDATE ${table} SET v = v WHERE id = 1`);
    expect(write.status, JSON.stringify(write.body)).toBe(200);
    const refused = await query(h.readerKey, 'my', `DELETE FROM ${table} WHERE id = 1`);
    expect(refused.status).toBe(403);
    const mode = await query(h.readerKey, 'my', 'SELECT @@session.tx_read_only');
    expect(String(mode.body.data.rows[0][0])).toBe('1');
  });
});
