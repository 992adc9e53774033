// DBQ_MAX_RESULT_BYTES: a /query JSON result stops adding rows once its encoded size would
// pass the cap and says `truncated: true` — on every engine, for synchronous and async
// queries alike. Set to its minimum (1 KiB) here so a thousand small rows pass it.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, MYSQL_URL, PG_URL, workspaceSqliteDir, type Harness } from './support/harness.ts';

const CAP = 1024;
let h: Harness;

const CASES = [
  { engine: 'postgres', conn: 'pg', rows: (n: number) => `SELECT g, repeat('x', 40) AS pad FROM generate_series(1, ${n}) g` },
  { engine: 'mysql', conn: 'my', rows: (n: number) => `SELECT seq AS g, REPEAT('x', 40) AS pad FROM seq_1_to_${n}` },
  {
    engine: 'sqlite',
    conn: 'lite',
    rows: (n: number) =>
      `WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < ${n}) SELECT g, replace(hex(zeroblob(20)), '0', 'x') AS pad FROM s`,
  },
] as const;

beforeAll(async () => {
  h = await createHarness({ DBQ_MAX_RESULT_BYTES: String(CAP) });
  fs.writeFileSync(path.join(workspaceSqliteDir(h, 'default'), 'cap.db'), '');
  for (const [name, body] of [
    ['pg', { url: PG_URL }],
    ['my', { url: MYSQL_URL }],
    ['lite', { engine: 'sqlite', database: 'cap.db' }],
  ] as const) {
    const res = await h.call('POST', '/api/connections', h.adminKey, { name, ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
});

afterAll(async () => {
  await h?.close();
});

for (const c of CASES) {
  describe(`DBQ_MAX_RESULT_BYTES on ${c.engine}`, () => {
    it('stops near the cap with truncated: true, keeping the first rows in order', async () => {
      const res = await h.call('POST', '/api/query', h.readerKey, { connectionId: c.conn, sql: c.rows(1000), maxRows: 1000 });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const d = res.body.data;
      expect(d.truncated).toBe(true);
      expect(d.rowCount).toBe(d.rows.length);
      expect(d.rowCount).toBeGreaterThan(5);
      expect(d.rowCount).toBeLessThan(1000);
      expect(Buffer.byteLength(JSON.stringify(d.rows))).toBeLessThanOrEqual(CAP);
      expect(d.rows.map((r: unknown[]) => Number(r[0]))).toEqual(Array.from({ length: d.rowCount }, (_, i) => i + 1));
      expect(d.rows[0][1]).toBe('x'.repeat(40));
    });

    it('a result under the cap is whole', async () => {
      const res = await h.call('POST', '/api/query', h.readerKey, { connectionId: c.conn, sql: c.rows(5) });
      expect(res.body.data).toMatchObject({ rowCount: 5, truncated: false });
    });

    it('applies to async results too', async () => {
      const res = await h.call('POST', '/api/query', h.readerKey, { connectionId: c.conn, sql: c.rows(1000), maxRows: 1000, async: true });
      expect(res.status).toBe(202);
      let state: any;
      for (let i = 0; i < 200; i++) {
        state = (await h.call('GET', `/api/query/${res.body.data.queryId}`, h.readerKey)).body.data;
        if (state.status !== 'running') break;
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(state.status).toBe('succeeded');
      expect(state.result.truncated).toBe(true);
      expect(state.result.rowCount).toBeLessThan(1000);
    });
  });
}

it('a row bigger than the whole cap leaves an empty, truncated result', async () => {
  const res = await h.call('POST', '/api/query', h.readerKey, { connectionId: 'pg', sql: `SELECT repeat('y', ${CAP * 2}) AS big` });
  expect(res.body.data).toMatchObject({ rows: [], rowCount: 0, truncated: true });
});
