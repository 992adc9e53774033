// params are bound by the driver as they are; what cannot be bound exactly is refused with a 400
// naming the parameter. Before: a params value nested 5,000 levels deep answered 500 (the stack
// overflowed), at 3,000 levels the JavaScript RangeError came back as the database's message;
// 1e400 was bound as Infinity and 9007199254740993 as …992, silently. Now such
// bodies are refused by the body parser before JSON.parse (MAX_JSON_DEPTH, 64 levels).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, PG_URL, type Harness } from './support/harness.ts';

let h: Harness;

function nested(levels: number): string {
  return '['.repeat(levels) + '1' + ']'.repeat(levels);
}

beforeAll(async () => {
  h = await createHarness();
  const res = await h.call('POST', '/api/connections', h.adminKey, { name: 'pp-pg', url: PG_URL });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
});
afterAll(async () => {
  await h.close();
});

describe('params shape', () => {
  for (const levels of [3_000, 5_000]) {
    it(`refuses params nested ${levels} levels with 400 naming the parameter`, async () => {
      const body = `{"connectionId":"pp-pg","sql":"SELECT $1::text, $2::text","params":["a",${nested(levels)}]}`;
      const res = await h.call('POST', '/api/query', h.adminKey, body, { 'content-type': 'application/json' });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.code).toBe('invalid_request');
      expect(res.body.details.field).toBe('params[1]');
      expect(res.body.error).toBe('Invalid request: the JSON body nests deeper than 64 levels (in params[1])');
    });
  }
  for (const levels of [2, 40]) {
    it(`refuses params nested ${levels} levels (within the body's depth) naming the element`, async () => {
      const body = `{"connectionId":"pp-pg","sql":"SELECT $1::text, $2::text","params":["a",${nested(levels)}]}`;
      const res = await h.call('POST', '/api/query', h.adminKey, body, { 'content-type': 'application/json' });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.details.field).toBe('params[1][0]');
      expect(res.body.error).toMatch(/^Invalid request: params\[1\]\[0\] must be a string, number, boolean or null/);
    });
  }

  it('refuses an object nested deeper than 32 levels; binds a shallow one as JSON text', async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 40; i++) deep = { a: deep };
    const bad = await h.call('POST', '/api/query', h.adminKey, { connectionId: 'pp-pg', sql: 'SELECT $1::text AS v', params: [deep] });
    expect(bad.status).toBe(400);
    expect(bad.body.details.field).toMatch(/^params\[0\]\.a\.a/);
    const good = await h.call('POST', '/api/query', h.adminKey, {
      connectionId: 'pp-pg',
      sql: 'SELECT $1::jsonb AS v',
      params: [{ a: [1, 'x'] }],
    });
    expect(good.status, JSON.stringify(good.body)).toBe(200);
    expect(good.body.data.rows[0][0]).toEqual({ a: [1, 'x'] });
  });

  it('binds scalars and arrays of scalars', async () => {
    const res = await h.call('POST', '/api/query', h.adminKey, {
      connectionId: 'pp-pg',
      sql: 'SELECT $1::int + 1 AS n, $2::text AS t, $3::bool AS b, $4::text AS z, array_length($5::int[], 1) AS len',
      params: [41, 'x', true, null, [1, 2, 3]],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.rows[0]).toEqual([42, 'x', true, null, 3]);
  });
});

describe('params that cannot be bound exactly', () => {
  for (const [literal, field] of [
    ['1e400', 'params[0]'],
    ['-1e400', 'params[0]'],
    ['9007199254740993', 'params[0]'],
    ['-9007199254740993', 'params[0]'],
    ['[1, 9007199254740993]', 'params[0][1]'],
    ['{"id": 9007199254740993}', 'params[0].id'],
  ] as const) {
    it(`refuses ${literal} with "pass it as a string"`, async () => {
      const body = `{"connectionId":"pp-pg","sql":"SELECT $1::text AS v","params":[${literal}]}`;
      const res = await h.call('POST', '/api/query', h.adminKey, body, { 'content-type': 'application/json' });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.details.field).toBe(field);
      expect(res.body.error).toMatch(/pass it as a string/);
    });
  }

  it('binds the largest safe integer and a big integer given as a string exactly', async () => {
    const res = await h.call('POST', '/api/query', h.adminKey, {
      connectionId: 'pp-pg',
      sql: 'SELECT $1::bigint::text AS a, $2::numeric::text AS b',
      params: [9007199254740991, '9007199254740993'],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.rows[0]).toEqual(['9007199254740991', '9007199254740993']);
  });

  it('applies to exports, async queries and the MCP-shared schema too', async () => {
    const body = `{"connectionId":"pp-pg","sql":"SELECT $1::text AS v","params":[1e400]}`;
    for (const url of ['/api/query/export', '/api/query?async=1']) {
      const res = await h.call('POST', url, h.adminKey, url.includes('async') ? body.replace('{', '{"async":true,') : body, {
        'content-type': 'application/json',
      });
      expect(res.status, `${url} ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.details.field).toBe('params[0]');
    }
  });
});
