// Messages that misled ("A newcomer's first hour"): a `__proto__` key was reported as
// "Invalid JSON body", connectionId and url together as "Invalid input", `?limit=abc` as
// "received NaN"; a NUL character in a connection URL was saved. Each now names the field.
import { cliActor } from '../src/audit/audit.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addConnection } from '../src/connections/save-connection.ts';
import { InvalidRequestError } from '../src/errors.ts';
import { createHarness, PG_URL, workspaceSqliteDir, type Harness } from './support/harness.ts';
import Database from 'better-sqlite3';
import path from 'node:path';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
  const res = await h.call('POST', '/api/connections', h.adminKey, { name: 'msg-pg', url: PG_URL });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
});
afterAll(async () => {
  await h.close();
});

describe('forbidden keys', () => {
  it('a __proto__ key is named, not called invalid JSON', async () => {
    const res = await h.call(
      'POST',
      '/api/query',
      h.adminKey,
      '{"connectionId":"msg-pg","sql":"SELECT 1","params":[{"__proto__":{"x":1}}]}',
      { 'content-type': 'application/json' },
    );
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'invalid_request', details: { field: 'params[0].__proto__' } });
    expect(res.body.error).toBe('Invalid request: a "__proto__" key is not allowed (params[0].__proto__)');
  });

  it('constructor.prototype too; malformed JSON is still invalid_json', async () => {
    const res = await h.call('POST', '/api/query', h.adminKey, '{"constructor":{"prototype":{}}}', { 'content-type': 'application/json' });
    expect(res.status).toBe(400);
    expect(res.body.details.field).toBe('constructor.prototype');
    const bad = await h.call('POST', '/api/query', h.adminKey, '{"sql":', { 'content-type': 'application/json' });
    expect(bad.body.code).toBe('invalid_json');
    const empty = await h.call('POST', '/api/query', h.adminKey, '', { 'content-type': 'application/json' });
    expect(empty.body.code).toBe('invalid_json');
  });
});

describe('fields that cannot be given together', () => {
  it('connectionId and url in one connection test name both', async () => {
    const res = await h.call('POST', '/api/connections/test', h.adminKey, { connectionId: 'msg-pg', url: PG_URL });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('Invalid request: "connectionId" and "url" cannot be given together');
    expect(res.body.details).toEqual({ field: 'connectionId', fields: ['connectionId', 'url'] });
  });

  it('a single wrong field in the union is named', async () => {
    const res = await h.call('POST', '/api/connections/test', h.adminKey, { url: 42 });
    expect(res.status).toBe(400);
    expect(res.body.details.field).toBe('url');
  });
});

describe('query-string integers', () => {
  for (const value of ['abc', '0', '201', '1.5', '']) {
    it(`?limit=${value}`, async () => {
      const res = await h.call('GET', `/api/query/history?limit=${value}`, h.adminKey);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('Invalid request: limit must be an integer from 1 to 200');
      expect(res.body.details.field).toBe('limit');
    });
  }
});

describe('NUL characters in connection fields', () => {
  for (const [field, body] of [
    ['url', { url: `${PG_URL}\u0000x` }],
    ['url', { url: PG_URL.replace('/test', '/te%00st') }],
    ['host', { engine: 'postgres', host: '127.0.0.1\u0000', database: 'test' }],
    ['database', { engine: 'postgres', host: '127.0.0.1', database: 'te\u0000st' }],
    ['user', { engine: 'postgres', host: '127.0.0.1', database: 'test', user: 'post\u0000gres' }],
    ['password', { engine: 'postgres', host: '127.0.0.1', database: 'test', user: 'postgres', password: 'x\u0000' }],
    ['readUser', { url: PG_URL, readUser: 'r\u0000' }],
    ['readUrl', { url: PG_URL, readUrl: PG_URL.replace('postgres@', 'post%00gres@') }],
    ['database', { engine: 'sqlite', database: 'a\u0000.db' }],
  ] as const) {
    it(`refuses a NUL in ${field} (${JSON.stringify(body).slice(0, 60)})`, async () => {
      const res = await h.call('POST', '/api/connections', h.adminKey, { name: 'nul', ...body });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.details.field).toBe(field);
      expect(res.body.error).toMatch(/NUL character/);
      const test = await h.call('POST', '/api/connections/test', h.adminKey, body);
      expect(test.status, JSON.stringify(test.body)).toBe(400);
      expect(test.body.details.field).toBe(field);
    });
  }

  it('refuses it when changing a connection, and in the core the CLI calls', async () => {
    const res = await h.call('PATCH', '/api/connections/msg-pg', h.adminKey, { url: `${PG_URL}\u0000` });
    expect(res.status).toBe(400);
    expect(res.body.details.field).toBe('url');
    const ws = (await h.svc.db.selectFrom('workspaces').select('id').where('slug', '=', 'default').executeTakeFirstOrThrow()).id;
    for (const url of [`${PG_URL}\u0000`, PG_URL.replace('/test', '/te%00st')]) {
      const err = await addConnection(h.svc, ws, { name: 'cli-nul', url }, cliActor()).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidRequestError);
      expect((err as InvalidRequestError).details).toEqual({ field: 'url' });
    }
    const list = await h.call('GET', '/api/connections', h.adminKey);
    expect(list.body.data.connections.map((c: { name: string }) => c.name)).toEqual(['msg-pg']);
  });
});

describe('ATTACH on SQLite', () => {
  it('is refused for an admin by the guard with 400 naming sql and the reason', async () => {
    new Database(path.join(workspaceSqliteDir(h, 'default'), 'attach.db')).close();
    const add = await h.call('POST', '/api/connections', h.adminKey, { name: 'msg-lite', engine: 'sqlite', database: 'attach.db' });
    expect(add.status, JSON.stringify(add.body)).toBe(201);
    for (const sql of ["ATTACH DATABASE 'other.db' AS other", "ATTACH 'file:/etc/passwd?mode=ro' AS x", 'DETACH DATABASE other']) {
      const res = await h.call('POST', '/api/query', h.adminKey, { connectionId: 'msg-lite', sql });
      expect(res.status, `${sql}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.code).toBe('invalid_request');
      expect(res.body.details.field).toBe('sql');
      expect(res.body.error).toMatch(/ATTACH|DETACH/i);
    }
  });
});
