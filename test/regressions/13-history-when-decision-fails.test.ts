// Read-only v2 asks the connection's catalog before a PostgreSQL statement runs. When the
// database cannot be reached, that question fails first: the request must still answer 502 and
// write its one history entry (API.md: every query request past the connection look-up does).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../support/harness.ts';

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
  const res = await h.call('POST', '/api/connections', h.adminKey, { name: 'down', url: 'postgres://postgres@127.0.0.1:5999/test' });
  expect(res.status).toBe(201);
}, 30_000);

afterAll(async () => {
  await h.close();
});

describe('a PostgreSQL server that cannot be reached while deciding a read', () => {
  it('answers 502 connection_failed and writes exactly one failed history entry', async () => {
    const sql = `SELECT 1 AS unreachable_${Date.now()}`;
    const res = await h.call('POST', '/api/query', h.readerKey, { connectionId: 'down', sql });
    expect(res.status).toBe(502);
    expect(res.body.code).toBe('connection_failed');
    const history = await h.call('GET', '/api/query/history?limit=50', h.readerKey);
    const entries = (history.body.data.entries as { sql: string; status: string; error: string }[]).filter((e) => e.sql === sql);
    expect(entries).toHaveLength(1);
    expect(entries[0].status).toBe('failed');
    expect(entries[0].error).toContain('Could not connect to database');
  }, 30_000);
});
