// A PostgreSQL JSON value nested deeper than 1,000 levels is answered as its text: parsed, it
// could not be written back out (JSON.stringify recurses per level) and a read-only key's
// `SELECT repeat('[', 5000) … ::json` answered 500 and broke exports. Shallower values stay
// JSON values, as the contract says.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createHarness, PG_URL, type Harness } from './support/harness.ts';

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
  const res = await h.call('POST', '/api/connections', h.adminKey, { name: 'pg', url: PG_URL });
  expect(res.status).toBe(201);
});

afterAll(async () => {
  await h?.close();
});

const SQL =
  "SELECT (repeat('[', 5000) || repeat(']', 5000))::json AS deep, (repeat('[', 1000) || repeat(']', 1000))::jsonb AS limit_, '{\"a\": [1, {\"b\": \"[[[\"}]}'::json AS plain";

it('answers a read of a deeply nested JSON value with its text, and shallower ones as JSON', async () => {
  const res = await h.call('POST', '/api/query', h.readerKey, { connectionId: 'pg', sql: SQL, rowFormat: 'objects' });
  expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
  const row = res.body.data.rows[0];
  expect(typeof row.deep).toBe('string');
  expect(row.deep.length).toBe(10_000);
  expect(Array.isArray(row.limit_)).toBe(true);
  expect(row.plain).toEqual({ a: [1, { b: '[[[' }] });
});

it('exports it too', async () => {
  const res = await h.app.inject({
    method: 'POST',
    url: '/api/query/export',
    headers: { authorization: `Bearer ${h.readerKey}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ connectionId: 'pg', sql: SQL, format: 'ndjson' }),
  });
  expect(res.statusCode).toBe(200);
  // NDJSON: a header line with the columns, then one array per row.
  const [deep, limit, plain] = JSON.parse(res.body.split('\n')[1]);
  expect(typeof deep).toBe('string');
  expect(Array.isArray(limit)).toBe(true);
  expect(plain).toEqual({ a: [1, { b: '[[[' }] });
});
