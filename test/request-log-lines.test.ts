// Log lines of failed requests ("A newcomer's first hour"). Before: the request line carried
// `reqId` twice; a refused database login and a statement timeout were logged at error with a
// stack, as if dbq had a bug; and the driver's text was doubled (`role "analyst" does not exist:
// role "analyst" does not exist`, pino appending the cause's message to the error's).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, PG_URL, type Harness } from './support/harness.ts';

let h: Harness;
const logs: string[] = [];
const linesOf = (reqId: string) =>
  logs.filter((l) => l.includes(reqId)).map((l) => ({ raw: l, json: JSON.parse(l) as Record<string, any> }));

beforeAll(async () => {
  h = await createHarness({}, { logs });
  expect((await h.call('POST', '/api/connections', h.adminKey, { name: 'log-pg', url: PG_URL })).status).toBe(201);
  expect(
    (await h.call('POST', '/api/connections', h.adminKey, { name: 'log-analyst', url: PG_URL.replace('postgres@', 'analyst@') })).status,
  ).toBe(201);
});
afterAll(async () => {
  await h.close();
});

describe('request log lines', () => {
  it('name reqId once', async () => {
    const res = await h.call('GET', '/api/connections', h.adminKey);
    const [line] = linesOf(res.headers['x-request-id'] as string).filter((l) => l.json.msg === 'request');
    expect(line.raw.match(/"reqId"/g)).toHaveLength(1);
  });

  for (const [label, body, code, level] of [
    ['a refused database login (502)', { connectionId: 'log-analyst', sql: 'SELECT 1' }, 'connection_failed', 40],
    ['a statement timeout (504)', { connectionId: 'log-pg', sql: 'SELECT pg_sleep(2)', timeoutMs: 100 }, 'query_timeout', 40],
    ['a statement the database refused (422)', { connectionId: 'log-pg', sql: 'SELECT * FROM no_such_table_here' }, 'query_failed', 30],
    ['a statement the guard refused (403)', { connectionId: 'log-pg', sql: 'DROP TABLE x' }, 'insufficient_permissions', 30],
  ] as const) {
    it(`log ${label} without a stack, below error`, async () => {
      const res = await h.call('POST', '/api/query', code === 'insufficient_permissions' ? h.readerKey : h.adminKey, body);
      expect(res.body.code).toBe(code);
      const lines = linesOf(res.headers['x-request-id'] as string);
      const failure = lines.find((l) => l.json.code === code);
      expect(failure, JSON.stringify(lines.map((l) => l.raw))).toBeDefined();
      expect(failure!.json.level).toBe(level);
      expect(failure!.json.err).toBeUndefined();
      expect(failure!.raw).not.toMatch(/"stack"/);
      expect(failure!.json.msg).toBe(res.body.error);
      expect(lines.every((l) => l.json.level < 50)).toBe(true);
    });
  }

  it('say the driver text once', async () => {
    const res = await h.call('POST', '/api/query', h.adminKey, { connectionId: 'log-analyst', sql: 'SELECT 1' });
    expect(res.body.error).toBe('Could not connect to database: role "analyst" does not exist');
    const text = linesOf(res.headers['x-request-id'] as string)
      .map((l) => l.raw)
      .join('\n');
    expect(text.match(/role \\"analyst\\" does not exist/g)).toHaveLength(1);
  });
});
