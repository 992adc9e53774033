// Value encoding, result limits and catalog calls of every engine adapter, on the real
// servers. The encoding table is the API contract's: int8/numeric/big integers as exact
// strings, timestamps as ISO 8601 with the server's fractional digits, bytea/blob as base64,
// arrays as JSON arrays, NaN/±Infinity as strings.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Column, Engine, EngineName } from '../src/engines/engine.ts';
import { QueryFailedError } from '../src/errors.ts';
import { ENGINES, closeAllEngines, openEngine, rejectionOf, run, uniqueName } from './support/engines.ts';

interface EncodingCase {
  setup: string[];
  select: string;
  columns: Column[];
  rows: unknown[][];
  /** Expressions whose values need no table: SQL and the expected row. */
  scalars: { sql: string; row: unknown[] }[];
  teardown: string[];
}

const col = (name: string, type: string): Column => ({ name, type });

const ENCODINGS: Record<EngineName, (t: string) => EncodingCase> = {
  postgres: (t) => ({
    setup: [
      `CREATE TYPE ${t}_mood AS ENUM ('sad', 'happy')`,
      `CREATE TABLE ${t} (id int4, i2 int2, i8 int8, f4 float4, f8 float8, n numeric(10,2), b bool, d date,
        ts timestamp(6), tstz timestamptz, tm time, j json, jb jsonb, by bytea, u uuid, tx text, mood ${t}_mood,
        iv interval, ip inet, a4 int4[], a8 int8[], atx text[], nest int4[], moods ${t}_mood[])`,
      `INSERT INTO ${t} VALUES (1, -32768, 9223372036854775807, 1.5, 0.1, 19.90, true, '2026-01-02',
        '2026-01-02 03:04:05.123456', '2026-01-02 03:04:05.123456+02', '12:34:56.789012',
        '{"a":[1,2,{"b":null}]}', '{"k": "v"}', '\\x00ff10', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
        'héllo "q"', 'happy', '1 day 02:03:04', '192.168.0.1/24', '{1,NULL,3}', '{9223372036854775807,-1}',
        '{"a,b","c\\"d",NULL,"NULL"}', '{{1,2},{3,4}}', '{sad,happy}')`,
      `INSERT INTO ${t} (id) VALUES (2)`,
    ],
    select: `SELECT i2, i8, f4, f8, n, b, d, ts, tstz, tm, j, jb, by, u, tx, mood, iv, ip, a4, a8, atx, nest, moods
             FROM ${t} ORDER BY id`,
    columns: [
      col('i2', 'int2'),
      col('i8', 'int8'),
      col('f4', 'float4'),
      col('f8', 'float8'),
      col('n', 'numeric'),
      col('b', 'bool'),
      col('d', 'date'),
      col('ts', 'timestamp'),
      col('tstz', 'timestamptz'),
      col('tm', 'time'),
      col('j', 'json'),
      col('jb', 'jsonb'),
      col('by', 'bytea'),
      col('u', 'uuid'),
      col('tx', 'text'),
      col('mood', `${t}_mood`),
      col('iv', 'interval'),
      col('ip', 'inet'),
      col('a4', 'int4[]'),
      col('a8', 'int8[]'),
      col('atx', 'text[]'),
      col('nest', 'int4[]'),
      col('moods', `${t}_mood[]`),
    ],
    rows: [
      [
        -32768,
        '9223372036854775807',
        1.5,
        0.1,
        '19.90',
        true,
        '2026-01-02',
        '2026-01-02T03:04:05.123456',
        '2026-01-02T01:04:05.123456Z',
        '12:34:56.789012',
        { a: [1, 2, { b: null }] },
        { k: 'v' },
        'AP8Q',
        'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
        'héllo "q"',
        'happy',
        '1 day 02:03:04',
        '192.168.0.1/24',
        [1, null, 3],
        ['9223372036854775807', '-1'],
        ['a,b', 'c"d', null, 'NULL'],
        [
          [1, 2],
          [3, 4],
        ],
        ['sad', 'happy'],
      ],
      Array(23).fill(null),
    ],
    scalars: [
      {
        sql: `SELECT 'NaN'::float8, 'Infinity'::float8, '-Infinity'::float4, 'NaN'::numeric, 'Infinity'::numeric,
                     '-Infinity'::numeric, 9007199254740993::int8, 2147483647::int4, 1e300::float8`,
        row: ['NaN', 'Infinity', '-Infinity', 'NaN', 'Infinity', '-Infinity', '9007199254740993', 2147483647, 1e300],
      },
      {
        sql: `SELECT '2026-01-02 03:04:05+00'::timestamptz, '2026-01-02 03:04:05.000001-05:30'::timestamptz,
                     '1999-12-31 23:59:59.5'::timestamp, 'infinity'::timestamptz, '00:00:00'::time`,
        row: ['2026-01-02T03:04:05Z', '2026-01-02T08:34:05.000001Z', '1999-12-31T23:59:59.5', 'infinity', '00:00:00'],
      },
      {
        sql: `SELECT ARRAY['2026-01-02 03:04:05.5+00'::timestamptz], ARRAY['\\x01'::bytea, NULL],
                     ARRAY['{"a":1}'::jsonb], '{}'::int4[], ARRAY[1.5, 'NaN']::numeric[]`,
        row: [['2026-01-02T03:04:05.5Z'], ['AQ==', null], [{ a: 1 }], [], ['1.5', 'NaN']],
      },
    ],
    teardown: [`DROP TABLE IF EXISTS ${t}`, `DROP TYPE IF EXISTS ${t}_mood`],
  }),

  mysql: (t) => ({
    setup: [
      `CREATE TABLE ${t} (id INT, bi BIGINT, bu BIGINT UNSIGNED, i INT, amount DECIMAL(10,2), f FLOAT, d DOUBLE,
        flag TINYINT(1), dt DATE, dtm DATETIME(6), ts TIMESTAMP(6) NULL, tm TIME(6), j JSON, bl BLOB,
        vb VARBINARY(8), tx TEXT, vc VARCHAR(20), e ENUM('sad', 'happy'), bt BIT(8), y YEAR)`,
      `INSERT INTO ${t} VALUES (1, 9223372036854775807, 18446744073709551615, -2147483648, 19.90, 1.1, 0.1, 1,
        '2026-01-02', '2026-01-02 03:04:05.123456', '2026-01-02 03:04:05.123456', '12:34:56.789012',
        '{"a":[1,2,{"b":null}]}', x'00ff10', x'0102', 'héllo "q"', 'x', 'happy', b'10101010', 2026)`,
      `INSERT INTO ${t} (id) VALUES (2)`,
    ],
    select: `SELECT bi, bu, i, amount, f, d, flag, dt, dtm, ts, tm, j, bl, vb, tx, vc, e, bt, y FROM ${t} ORDER BY id`,
    columns: [
      col('bi', 'BIGINT'),
      col('bu', 'BIGINT UNSIGNED'),
      col('i', 'INT'),
      col('amount', 'DECIMAL'),
      col('f', 'FLOAT'),
      col('d', 'DOUBLE'),
      col('flag', 'TINYINT'),
      col('dt', 'DATE'),
      col('dtm', 'DATETIME'),
      col('ts', 'TIMESTAMP'),
      col('tm', 'TIME'),
      col('j', 'JSON'),
      col('bl', 'BLOB'),
      col('vb', 'VARBINARY'),
      col('tx', 'TEXT'),
      col('vc', 'VARCHAR'),
      col('e', 'ENUM'),
      col('bt', 'BIT'),
      col('y', 'YEAR'),
    ],
    rows: [
      [
        '9223372036854775807',
        '18446744073709551615',
        -2147483648,
        '19.90',
        1.1,
        0.1,
        1,
        '2026-01-02',
        '2026-01-02T03:04:05.123456',
        '2026-01-02T03:04:05.123456Z',
        '12:34:56.789012',
        { a: [1, 2, { b: null }] },
        'AP8Q',
        'AQI=',
        'héllo "q"',
        'x',
        'happy',
        170,
        2026,
      ],
      Array(19).fill(null),
    ],
    scalars: [
      {
        sql: `SELECT CAST(9007199254740993 AS SIGNED), CAST(1.5 AS DECIMAL(4,2)), CAST('2026-01-02 03:04:05' AS DATETIME),
                     CAST('2026-01-02 03:04:05.5' AS DATETIME(1)), CAST('-01:00:00' AS TIME)`,
        row: ['9007199254740993', '1.50', '2026-01-02T03:04:05', '2026-01-02T03:04:05.5', '-01:00:00'],
      },
    ],
    teardown: [`DROP TABLE IF EXISTS ${t}`],
  }),

  sqlite: (t) => ({
    setup: [
      `CREATE TABLE ${t} (id INTEGER PRIMARY KEY, big INTEGER, small INTEGER, r REAL, b BLOB, s TEXT, n NUMERIC, untyped)`,
      `INSERT INTO ${t} VALUES (1, 9223372036854775807, -42, 0.1, x'00ff10', 'héllo "q"', 19.90, 'x')`,
      `INSERT INTO ${t} (id) VALUES (2)`,
    ],
    select: `SELECT big, small, r, b, s, n, untyped FROM ${t} ORDER BY id`,
    columns: [
      col('big', 'INTEGER'),
      col('small', 'INTEGER'),
      col('r', 'REAL'),
      col('b', 'BLOB'),
      col('s', 'TEXT'),
      col('n', 'NUMERIC'),
      col('untyped', ''),
    ],
    rows: [['9223372036854775807', -42, 0.1, 'AP8Q', 'héllo "q"', 19.9, 'x'], Array(7).fill(null)],
    scalars: [
      {
        sql: `SELECT 9007199254740993, 9007199254740991, -9007199254740993, 1e999, -1e999, 2.5, NULL`,
        row: ['9007199254740993', 9007199254740991, '-9007199254740993', 'Infinity', '-Infinity', 2.5, null],
      },
    ],
    teardown: [`DROP TABLE IF EXISTS ${t}`],
  }),
};

/** Rows 1..n with a 100-character text column, in every dialect. */
const series = (n: number) =>
  `WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < ${n}) SELECT g, '${'x'.repeat(100)}' AS pad FROM s`;

afterAll(closeAllEngines);

for (const engineCase of ENGINES) {
  describe(`${engineCase.name} engine`, () => {
    let engine: Engine;
    const table = uniqueName('vals');
    const enc = ENCODINGS[engineCase.name](table);
    const p = (n: number) => (engineCase.name === 'postgres' ? `$${n}` : '?');

    beforeAll(async () => {
      engine = openEngine(engineCase.config());
      for (const sql of enc.setup) await run(engine, sql);
    });

    afterAll(async () => {
      for (const sql of enc.teardown) await run(engine, sql).catch(() => {});
    });

    describe('value encoding', () => {
      it('encodes a table of every type per the contract, column types included', async () => {
        const result = await run(engine, enc.select, { readOnly: true });
        expect(result.columns).toEqual(enc.columns);
        expect(result.rows).toEqual(enc.rows);
        expect(result.rowCount).toBe(2);
        expect(result.truncated).toBe(false);
        expect(result.affectedRows).toBeNull();
        // Exactness, not just equality after JSON: int8 max is a string, never a rounded float.
        expect(JSON.parse(JSON.stringify(result.rows))).toEqual(enc.rows);
      });

      it('encodes the same way when parameters are bound (prepared statements)', async () => {
        const withParam = enc.select.replace(' ORDER BY id', ` WHERE id = ${p(1)} OR id = ${p(2)} ORDER BY id`);
        const result = await run(engine, withParam, { readOnly: true, params: [1, 2] });
        expect(result.columns).toEqual(enc.columns);
        expect(result.rows).toEqual(enc.rows);
      });

      it('encodes special and boundary values', async () => {
        for (const { sql, row } of enc.scalars) {
          const result = await run(engine, sql, { readOnly: true });
          expect(result.rows, sql).toEqual([row]);
        }
      });

      it('binds parameters as values, never as SQL text', async () => {
        const evil = "x'; DROP TABLE " + table + '; --';
        const result = await run(engine, `SELECT ${p(1)} AS a, ${p(2)} AS b`, { readOnly: true, params: [evil, 41] });
        expect(result.rows[0][0]).toBe(evil);
        expect(Number(result.rows[0][1])).toBe(41);
      });
    });

    describe('results', () => {
      it('reads at most maxRows rows and says when more existed', async () => {
        const cut = await run(engine, series(50), { readOnly: true, maxRows: 10 });
        expect(cut.rowCount).toBe(10);
        expect(cut.rows.map((r) => Number(r[0]))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        expect(cut.truncated).toBe(true);
        const exact = await run(engine, series(50), { readOnly: true, maxRows: 50 });
        expect(exact.rowCount).toBe(50);
        expect(exact.truncated).toBe(false);
      });

      it('stops adding rows past maxBytes', async () => {
        const result = await run(engine, series(50), { readOnly: true, maxBytes: 1_000 });
        expect(result.truncated).toBe(true);
        expect(result.rowCount).toBeGreaterThan(0);
        expect(result.rowCount).toBeLessThan(10);
        expect(JSON.stringify(result.rows).length).toBeLessThanOrEqual(1_000);
      });

      it('reports affectedRows for writes and null for row results', async () => {
        const t = uniqueName('aff');
        try {
          await run(engine, `CREATE TABLE ${t} (x INT)`);
          const insert = await run(engine, `INSERT INTO ${t} (x) VALUES (1), (2), (3)`);
          expect(insert).toEqual({ columns: [], rows: [], rowCount: 0, truncated: false, affectedRows: 3 });
          const update = await run(engine, `UPDATE ${t} SET x = 10 WHERE x > ${p(1)}`, { params: [1] });
          expect(update.affectedRows).toBe(2);
          const select = await run(engine, `SELECT x FROM ${t} ORDER BY x`);
          expect(select.affectedRows).toBeNull();
          expect(select.rows.map((r) => Number(r[0]))).toEqual([1, 10, 10]);
        } finally {
          await run(engine, `DROP TABLE IF EXISTS ${t}`);
        }
      });

      it('streams rows with a row cap and gives the connection back when the consumer stops early', async () => {
        const single = openEngine(engineCase.config({ maxConnections: 1, acquireTimeoutMs: 2_000 }));
        // 1000 rows: MariaDB's max_recursive_iterations default.
        const stream = await single.stream!({ sql: series(1000), params: [], readOnly: true, timeoutMs: 10_000, maxRows: 600 });
        expect(stream.columns.map((c) => c.name)).toEqual(['g', 'pad']);
        let count = 0;
        for await (const row of stream.rows) {
          count++;
          expect(Number(row[0])).toBe(count);
        }
        expect(count).toBe(600);

        const early = await single.stream!({ sql: series(1000), params: [], readOnly: true, timeoutMs: 10_000, maxRows: 1000 });
        for await (const row of early.rows) {
          if (Number(row[0]) === 5) break;
        }
        // The only pooled connection is free again, and clean.
        const after = await run(single, 'SELECT 1 AS one', { readOnly: true });
        expect(Number(after.rows[0][0])).toBe(1);
      });
    });

    describe('catalog', () => {
      it('test() reports the server version from a fresh connection', async () => {
        const { serverVersion } = await engine.test(5_000);
        const expected = { postgres: /^PostgreSQL \d+\.\d+$/, mysql: /^(MariaDB|MySQL) \d+\.\d+\.\d+$/, sqlite: /^SQLite 3\.\d+\.\d+$/ };
        expect(serverVersion).toMatch(expected[engineCase.name]);
      });

      it('validate() plans without running and reports the database error', async () => {
        const t = uniqueName('val');
        await run(engine, `CREATE TABLE ${t} (x INT)`);
        try {
          await engine.validate(`SELECT x FROM ${t}`);
          await engine.validate(`INSERT INTO ${t} (x) VALUES (1)`);
          const count = await run(engine, `SELECT count(*) FROM ${t}`);
          expect(Number(count.rows[0][0])).toBe(0);
          const err = await rejectionOf(engine.validate(`SELECT nope FROM ${t}`));
          expect(err).toBeInstanceOf(QueryFailedError);
          expect(err.details.sqlState).toBeTruthy();
          if (engineCase.name === 'postgres') expect(err.details.position).toBe(8);
        } finally {
          await run(engine, `DROP TABLE IF EXISTS ${t}`);
        }
      });

      it('listTables() lists tables and views with columns, primary and foreign keys', async () => {
        const parent = uniqueName('parent');
        const child = uniqueName('child');
        const view = uniqueName('view');
        try {
          await run(engine, `CREATE TABLE ${parent} (id INT NOT NULL PRIMARY KEY, name VARCHAR(40))`);
          await run(
            engine,
            `CREATE TABLE ${child} (id INT NOT NULL PRIMARY KEY, parent_id INT, FOREIGN KEY (parent_id) REFERENCES ${parent} (id))`,
          );
          await run(engine, `CREATE VIEW ${view} AS SELECT id FROM ${parent}`);
          const tables = await engine.listTables();
          const p = tables.find((t) => t.name === parent);
          const c = tables.find((t) => t.name === child);
          const v = tables.find((t) => t.name === view);
          expect(p?.kind).toBe('table');
          expect(p?.columns.map((x) => [x.name, x.nullable, x.primaryKey])).toEqual([
            ['id', false, true],
            ['name', true, false],
          ]);
          expect(p?.columns[1].type.toLowerCase()).toMatch(/varchar|character varying/);
          expect(c?.foreignKeys).toEqual([expect.objectContaining({ columns: ['parent_id'], refTable: parent, refColumns: ['id'] })]);
          expect(v?.kind).toBe('view');
        } finally {
          await run(engine, `DROP VIEW IF EXISTS ${view}`);
          await run(engine, `DROP TABLE IF EXISTS ${child}`);
          await run(engine, `DROP TABLE IF EXISTS ${parent}`);
        }
      });
    });
  });
}
