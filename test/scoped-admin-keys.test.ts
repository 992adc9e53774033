// An admin's scoped key administers no more than its scope: a key narrowed to connection A
// cannot change, delete or re-grant connection B, nor create connections; a tools-only key
// administers nothing (connections, grants, the audit log). Each refusal leaves the store as it was.
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, workspaceSqliteDir, type Harness } from './support/harness.ts';

let h: Harness;
let idA: string;
let idB: string;

async function keyFor(body: Record<string, unknown>): Promise<string> {
  const res = await h.call('POST', '/api/keys', h.adminKey, { name: 'scoped', ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.secret as string;
}

async function snapshot() {
  const connections = await h.svc.db
    .selectFrom('connections')
    .select(['id', 'name', 'read_only', 'grants_everyone', 'updated_at'])
    .orderBy('id')
    .execute();
  const grants = await h.svc.db.selectFrom('connection_grants').selectAll().execute();
  return { connections, grants };
}

beforeAll(async () => {
  h = await createHarness();
  const dir = workspaceSqliteDir(h, 'default');
  for (const f of ['adm-a.db', 'adm-b.db']) new Database(path.join(dir, f)).close();
  idA = (await h.call('POST', '/api/connections', h.adminKey, { name: 'adm-a', url: 'sqlite:adm-a.db' })).body.data.connection.id;
  idB = (await h.call('POST', '/api/connections', h.adminKey, { name: 'adm-b', url: 'sqlite:adm-b.db' })).body.data.connection.id;
});

afterAll(async () => {
  await h?.close();
});

describe('an admin key narrowed to one connection', () => {
  it('changes its own connection but not another, nor creates one, nor re-grants another', async () => {
    const key = await keyFor({ connections: [idA] });
    const own = await h.call('PATCH', `/api/connections/${idA}`, key, { readOnly: true });
    expect(own.status, JSON.stringify(own.body)).toBe(200);

    const before = await snapshot();
    const attempts: [string, string, unknown?][] = [
      ['PATCH', `/api/connections/${idB}`, { readOnly: true }],
      ['DELETE', `/api/connections/${idB}`],
      ['PUT', `/api/connections/${idB}/grants`, { everyone: false, users: [] }],
      ['GET', `/api/connections/${idB}/grants`],
      ['POST', '/api/connections', { name: 'adm-c', url: 'sqlite:adm-c.db' }],
    ];
    for (const [method, url, body] of attempts) {
      const res = await h.call(method, url, key, body);
      expect(res.status, `${method} ${url}: ${JSON.stringify(res.body)}`).toBe(403);
      expect(res.body.code).toBe('insufficient_permissions');
      expect(typeof res.body.details?.reason).toBe('string');
    }
    expect(await snapshot()).toEqual(before);
  });
});

describe('an admin key limited to curated tools', () => {
  it('administers nothing: connections, grants and the audit log answer 403 and nothing changes', async () => {
    const key = await keyFor({ toolsOnly: true });
    const before = await snapshot();
    const attempts: [string, string, unknown?][] = [
      ['PATCH', `/api/connections/${idA}`, { readOnly: false }],
      ['PUT', `/api/connections/${idA}/grants`, { everyone: false, users: [] }],
      ['POST', '/api/connections', { name: 'adm-d', url: 'sqlite:adm-d.db' }],
      ['GET', '/api/audit'],
    ];
    for (const [method, url, body] of attempts) {
      const res = await h.call(method, url, key, body);
      expect(res.status, `${method} ${url}: ${JSON.stringify(res.body)}`).toBe(403);
      expect(res.body.details?.reason).toBe('this key may run curated tools only');
    }
    expect(await snapshot()).toEqual(before);
  });
});
