// Scoped keys: a key narrower than its user and never wider — at creation (unknown or
// ungranted connections, past expiry, the workspace's maxKeyDays, a key creating a key), at
// every request (refused on its first request after expiresAt, audited once), and as a
// program sees itself (GET /keys/self). Real store, real SQLite connections, real CLI.
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApiKey } from '../src/workspaces/api-keys.ts';
import { createHarness, createPgStoreHarness, workspaceSqliteDir, type Harness } from './support/harness.ts';
import { runDbq } from './support/cli.ts';
import { sleep, until } from './support/wait.ts';

let h: Harness;
let idA: string;
let idB: string;

const dbq = (...args: string[]) => runDbq(h.dataDir, args);

async function audit(action: string, targetId?: string) {
  let q = h.svc.db.selectFrom('audit_log').selectAll().where('action', '=', action);
  if (targetId) q = q.where('target_id', '=', targetId);
  return q.execute();
}

async function keyFor(email: string, body: Record<string, unknown>, by = h.adminKey) {
  const res = await h.call('POST', '/api/keys', by, { name: 'k', user: email, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data as { apiKey: any; secret: string };
}

beforeAll(async () => {
  h = await createHarness();
  const dir = workspaceSqliteDir(h, 'default');
  for (const f of ['keys-a.db', 'keys-b.db']) {
    const db = new Database(path.join(dir, f));
    db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t (v) VALUES ('x');");
    db.close();
  }
  idA = (await h.call('POST', '/api/connections', h.adminKey, { name: 'a', url: 'sqlite:keys-a.db' })).body.data.connection.id;
  idB = (await h.call('POST', '/api/connections', h.adminKey, { name: 'b', url: 'sqlite:keys-b.db' })).body.data.connection.id;
  // A key's `tools` must name live tools (test/key-scope-unknown-tool.test.ts).
  for (const name of ['t_one', 't_two']) {
    const res = await h.call('POST', '/api/tools', h.adminKey, { name, description: name, connectionId: idA, sql: 'SELECT v FROM t' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
});

afterAll(async () => {
  await h?.close();
});

afterEach(() => {
  vi.useRealTimers();
});

describe('creating a scoped key', () => {
  it('stores only the narrowing, with connections resolved to ids, and audits key.created with the scope', async () => {
    const { apiKey, secret } = await keyFor('admin@acme.test', { name: 'agent', readOnly: true, connections: ['a'], expiresInDays: 30 });
    expect(apiKey.scope).toEqual({ readOnly: true, connections: [idA] });
    expect(Date.parse(apiKey.expiresAt) - Date.now()).toBeGreaterThan(29.9 * 86_400_000);
    expect(apiKey.expiresSoon).toBe(false);
    expect(secret).toMatch(/^dbq_/);
    const [entry] = await audit('key.created', apiKey.id);
    expect(JSON.parse(entry.changes!)).toMatchObject({ scope: { readOnly: true, connections: [idA] }, expiresAt: apiKey.expiresAt });
    expect(entry.source).toBe('api');
    expect(JSON.stringify(entry)).not.toContain(secret);

    const plain = await keyFor('admin@acme.test', { name: 'plain', readOnly: false });
    expect(plain.apiKey.scope).toBeNull();
    // An empty list is not "every connection": it is refused, naming the field.
    for (const field of ['connections', 'tools']) {
      const empty = await h.call('POST', '/api/keys', h.adminKey, { name: 'empty', [field]: [] });
      expect(empty.status).toBe(400);
      expect(empty.body.details).toMatchObject({ field });
    }
  });

  it('refuses an unknown connection with 400 naming it, and a connection the user may not use exactly the same way', async () => {
    const unknown = await h.call('POST', '/api/keys', h.adminKey, { name: 'x', user: 'reader@acme.test', connections: ['nope'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toContain('"nope"');
    expect(unknown.body.details).toMatchObject({ field: 'connections', connection: 'nope' });

    await h.call('PUT', `/api/connections/${idB}/grants`, h.adminKey, { everyone: false, users: [] });
    try {
      const hidden = await h.call('POST', '/api/keys', h.adminKey, { name: 'x', user: 'reader@acme.test', connections: ['b'] });
      expect(hidden.status).toBe(400);
      expect(hidden.body.error).toBe('connections: unknown connection "b"');
      const before = (await h.call('GET', '/api/keys', h.adminKey)).body.data.apiKeys.length;
      expect(before).toBeGreaterThan(0);
    } finally {
      await h.call('PUT', `/api/connections/${idB}/grants`, h.adminKey, { everyone: true });
    }
  });

  it('refuses an expiry in the past, or both expiresAt and expiresInDays', async () => {
    const past = await h.call('POST', '/api/keys', h.adminKey, { name: 'x', expiresAt: '2020-01-01T00:00:00Z' });
    expect(past.status).toBe(400);
    expect(past.body.details.field).toBe('expiresAt');
    const both = await h.call('POST', '/api/keys', h.adminKey, { name: 'x', expiresAt: '2099-01-01T00:00:00Z', expiresInDays: 3 });
    expect(both.status).toBe(400);
  });

  it('lets only admins create keys for another user; a readOnly key of an admin is no admin here', async () => {
    const byReader = await h.call('POST', '/api/keys', h.readerKey, { name: 'x', user: 'admin@acme.test' });
    expect(byReader.status).toBe(403);
    const roAdmin = await keyFor('admin@acme.test', { name: 'ro-admin', readOnly: true });
    const byRoAdmin = await h.call('POST', '/api/keys', roAdmin.secret, { name: 'x', user: 'reader@acme.test' });
    expect(byRoAdmin.status).toBe(403);
    expect(byRoAdmin.body.code).toBe('insufficient_permissions');
    const listed = await h.call('GET', '/api/keys', roAdmin.secret);
    expect(listed.body.data.apiKeys.every((k: any) => k.user.email === 'admin@acme.test')).toBe(true);
    const patch = await h.call('PATCH', '/api/workspace', roAdmin.secret, { maxKeyDays: 5 });
    expect(patch.status).toBe(403);
  });

  it('never creates a key wider than the key that asks for it', async () => {
    const parent = await keyFor('admin@acme.test', {
      name: 'parent',
      readOnly: true,
      connections: ['a'],
      tools: ['t_one'],
      expiresInDays: 10,
    });
    expect(parent.apiKey.expiresSoon).toBe(true);
    const wider = await h.call('POST', '/api/keys', parent.secret, { name: 'child', connections: ['b'] });
    expect(wider.status).toBe(403);
    expect(wider.body.details.reason).toMatch(/connection/);
    const longer = await h.call('POST', '/api/keys', parent.secret, { name: 'child', expiresInDays: 30 });
    expect(longer.status).toBe(403);
    expect(longer.body.details.reason).toMatch(/outlive/);
    const otherTool = await h.call('POST', '/api/keys', parent.secret, { name: 'child', tools: ['t_two'] });
    expect(otherTool.status).toBe(403);
    expect(otherTool.body.details.reason).toContain('t_two');

    const child = await h.call('POST', '/api/keys', parent.secret, { name: 'child', readOnly: false });
    expect(child.status).toBe(201);
    expect(child.body.data.apiKey.scope).toEqual({ readOnly: true, connections: [idA], tools: ['t_one'] });
    expect(child.body.data.apiKey.expiresAt).toBe(parent.apiKey.expiresAt);

    const toolsOnly = await keyFor('admin@acme.test', { name: 'tools', toolsOnly: true });
    const fromTools = await h.call('POST', '/api/keys', toolsOnly.secret, { name: 'x' });
    expect(fromTools.status).toBe(403);
    expect(fromTools.body.details.reason).toMatch(/curated tools/);
  });

  it('revokes own keys (others: 404) and audits key.revoked', async () => {
    const mine = await keyFor('reader@acme.test', { name: 'mine' });
    const theirs = await keyFor('admin@acme.test', { name: 'theirs' });
    expect((await h.call('POST', `/api/keys/${theirs.apiKey.id}/revoke`, h.readerKey)).status).toBe(404);
    const revoked = await h.call('POST', `/api/keys/${mine.apiKey.id}/revoke`, h.readerKey);
    expect(revoked.status).toBe(200);
    expect(revoked.body.data.apiKey.revokedAt).not.toBeNull();
    expect((await h.call('GET', '/api/connections', mine.secret)).status).toBe(401);
    expect(await audit('key.revoked', mine.apiKey.id)).toHaveLength(1);
    expect(await audit('key.revoked', theirs.apiKey.id)).toHaveLength(0);
  });
});

describe('the workspace maxKeyDays', () => {
  it('gives keys without expiry that lifetime and refuses longer ones naming expiresAt', async () => {
    expect((await h.call('PATCH', '/api/workspace', h.readerKey, { maxKeyDays: 90 })).status).toBe(403);
    const set = await h.call('PATCH', '/api/workspace', h.adminKey, { maxKeyDays: 90 });
    expect(set.status).toBe(200);
    expect(set.body.data.workspace).toMatchObject({ slug: 'default', maxKeyDays: 90 });
    expect((await h.call('GET', '/api/workspace', h.readerKey)).body.data.workspace.maxKeyDays).toBe(90);
    const [changed] = await audit('workspace.settings_changed');
    expect(JSON.parse(changed.changes!)).toEqual({ maxKeyDays: { from: null, to: 90 } });
    try {
      const { apiKey } = await keyFor('reader@acme.test', { name: 'default-life' });
      expect(Math.abs(Date.parse(apiKey.expiresAt) - (Date.now() + 90 * 86_400_000))).toBeLessThan(60_000);
      const tooLong = await h.call('POST', '/api/keys', h.adminKey, { name: 'x', expiresInDays: 91 });
      expect(tooLong.status).toBe(400);
      expect(tooLong.body.details.field).toBe('expiresAt');
      expect(tooLong.body.error).toContain('expiresAt');
      expect((await h.call('PATCH', '/api/workspace', h.adminKey, { maxKeyDays: 0 })).status).toBe(400);
    } finally {
      expect((await h.call('PATCH', '/api/workspace', h.adminKey, { maxKeyDays: null })).status).toBe(200);
    }
  });
});

describe('a key past its expiresAt', () => {
  it('works until then, is refused with 401 on its first request after, and key.expired is audited once', async () => {
    const { apiKey, secret } = await createApiKey(h.svc.db, {
      workspace: 'default',
      email: 'reader@acme.test',
      name: 'short',
      expiresAt: new Date(Date.now() + 1500).toISOString(),
    });
    expect((await h.call('GET', '/api/connections', secret)).status).toBe(200);
    expect(await audit('key.expired', apiKey.id)).toHaveLength(0);
    // Expiry is read from Date.now(): the clock is moved past it (and runs on from there)
    // instead of the test waiting it out.
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    vi.setSystemTime(Date.parse(apiKey.expiresAt!) + 50);
    for (let i = 0; i < 3; i++) {
      const res = await h.call('POST', '/api/query', secret, { connectionId: 'a', sql: 'SELECT 1' });
      expect(res.status).toBe(401);
      // Still the 401 of any refused key, plus the reason only the key's holder can provoke.
      expect(res.body).toEqual({
        success: false,
        error: 'Invalid or missing API key',
        code: 'invalid_api_key',
        details: { reason: 'expired' },
      });
    }
    await until('key.expired in the audit log', async () => (await audit('key.expired', apiKey.id)).length > 0, 3000);
    // "Once" is an absence: a second entry would have been written by now.
    await sleep(100);
    const entries = await audit('key.expired', apiKey.id);
    expect(entries).toHaveLength(1);
    expect(entries[0].actor_email).toBe('dbq');
    // A 401 writes no history.
    const history = await h.svc.db.selectFrom('query_history').select('id').where('api_key_id', '=', apiKey.id).execute();
    expect(history).toHaveLength(0);
    const listed = (await h.call('GET', '/api/keys', h.adminKey)).body.data.apiKeys.find((k: any) => k.id === apiKey.id);
    expect(listed).toMatchObject({ expired: true, expiresSoon: false });
  });
});

describe('GET /keys/self', () => {
  it("tells a program its scope, expiry, its user's own role and what it may effectively do", async () => {
    const { apiKey, secret } = await keyFor('admin@acme.test', { name: 'agent', readOnly: true, connections: ['a'], expiresInDays: 30 });
    const res = await h.call('GET', '/api/keys/self', secret);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      apiKey: {
        id: apiKey.id,
        name: 'agent',
        prefix: apiKey.prefix,
        scope: { readOnly: true, connections: [idA] },
        expiresAt: apiKey.expiresAt,
        user: { id: apiKey.user.id, email: 'admin@acme.test', role: 'admin' },
      },
      effective: { readOnly: true, rawSql: true, connections: [idA], tools: null },
    });
    const reader = await h.call('GET', '/api/keys/self', h.readerKey);
    expect(reader.body.data.apiKey.scope).toBeNull();
    expect(reader.body.data.effective).toEqual({ readOnly: true, rawSql: true, connections: null, tools: null });
  });
});

describe('history seen through a connection-scoped key', () => {
  it("holds only the entries of the key's connections", async () => {
    const { secret } = await keyFor('admin@acme.test', { name: 'only-a', connections: ['a'] });
    await h.call('POST', '/api/query', h.adminKey, { connectionId: 'b', sql: 'SELECT 2' });
    await h.call('POST', '/api/query', h.adminKey, { connectionId: 'a', sql: 'SELECT 1' });
    const all = (await h.call('GET', '/api/query/history?limit=200', h.adminKey)).body.data.entries;
    expect(all.some((e: any) => e.connectionId === idB)).toBe(true);
    const scoped = (await h.call('GET', '/api/query/history?limit=200', secret)).body.data.entries;
    expect(scoped.length).toBeGreaterThan(0);
    expect(scoped.every((e: any) => e.connectionId === idA)).toBe(true);
  });
});

describe('async queries seen through a connection-scoped key', () => {
  it('are 404 when they ran on a connection outside the scope, though the same user ran them', async () => {
    const scoped = await keyFor('admin@acme.test', { name: 'async-a', connections: ['a'] });
    const onB = await h.call('POST', '/api/query', h.adminKey, { connectionId: 'b', sql: 'SELECT 2', async: true });
    const onA = await h.call('POST', '/api/query', h.adminKey, { connectionId: 'a', sql: 'SELECT 1', async: true });
    expect(onB.status).toBe(202);
    for (const q of [onA, onB]) {
      await until(
        'the query to finish',
        async () => (await h.call('GET', `/api/query/${q.body.data.queryId}`, h.adminKey)).body.data.status !== 'running',
        5000,
      );
    }
    const hidden = await h.call('GET', `/api/query/${onB.body.data.queryId}`, scoped.secret);
    expect(hidden.status).toBe(404);
    expect(hidden.body.code).toBe('query_not_found');
    expect((await h.call('POST', `/api/query/${onB.body.data.queryId}/cancel`, scoped.secret)).status).toBe(404);
    expect((await h.call('GET', `/api/query/${onA.body.data.queryId}`, scoped.secret)).body.data.status).toBe('succeeded');
  });
});

describe('GET /keys', () => {
  it("lists every key for an admin and only the caller's own otherwise, never a secret", async () => {
    const all = (await h.call('GET', '/api/keys', h.adminKey)).body.data.apiKeys;
    expect(new Set(all.map((k: any) => k.user.email))).toEqual(new Set(['admin@acme.test', 'reader@acme.test']));
    const own = (await h.call('GET', '/api/keys', h.readerKey)).body.data.apiKeys;
    expect(own.length).toBeGreaterThan(0);
    expect(own.every((k: any) => k.user.email === 'reader@acme.test')).toBe(true);
    expect(JSON.stringify(all)).not.toContain(h.adminKey);
  });
});

describe('OpenAPI', () => {
  it('describes the keys, workspace and grants endpoints with their bodies', async () => {
    const res = await h.call('GET', '/api/openapi.json', null);
    const paths = res.body.paths;
    for (const p of ['/api/keys', '/api/keys/self', '/api/keys/{id}/revoke', '/api/workspace', '/api/connections/{id}/grants'])
      expect(Object.keys(paths)).toContain(p);
    const body = paths['/api/keys'].post.requestBody.content['application/json'].schema.properties;
    expect(Object.keys(body)).toEqual(
      expect.arrayContaining(['name', 'user', 'readOnly', 'connections', 'toolsOnly', 'tools', 'expiresAt', 'expiresInDays']),
    );
    expect(paths['/api/workspace'].patch.requestBody.content['application/json'].schema.properties.maxKeyDays).toBeDefined();
    expect(paths['/api/connections/{id}/grants'].put).toBeDefined();
  });
});

describe('the CLI', () => {
  it('creates a scoped key (--json shape of the contract), lists its scope and expiry, sets maxKeyDays, audits as the local operator', async () => {
    const created = await dbq(
      'key',
      'create',
      '--workspace',
      'default',
      '--user',
      'reader@acme.test',
      '--name',
      'cli-agent',
      '--read-only',
      '--connection',
      'a',
      '--expires-in-days',
      '7',
      '--json',
    );
    expect(created.code, created.stderr).toBe(0);
    const out = JSON.parse(created.stdout);
    expect(Object.keys(out.apiKey).sort()).toEqual(['expiresAt', 'id', 'name', 'prefix', 'scope']);
    expect(out.apiKey.scope).toEqual({ readOnly: true, connections: [idA] });
    expect((await h.call('GET', '/api/keys/self', out.secret)).body.data.apiKey.id).toBe(out.apiKey.id);
    const [entry] = await audit('key.created', out.apiKey.id);
    expect(entry.source).toBe('cli');
    expect(entry.actor_email).toMatch(/^local:/);

    const listed = await dbq('key', 'list', '--workspace', 'default');
    expect(listed.stdout).toMatch(/cli-agent.*read-only; connections .*expires soon/);

    const bad = await dbq('key', 'create', '--workspace', 'default', '--user', 'reader@acme.test', '--name', 'x', '--connection', 'nope');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('nope');

    const max = await dbq('workspace', 'set-max-key-days', 'default', '30', '--json');
    expect(max.code, max.stderr).toBe(0);
    expect(JSON.parse(max.stdout).workspace.maxKeyDays).toBe(30);
    expect((await dbq('workspace', 'set-max-key-days', 'default', 'none')).code).toBe(0);
    expect((await h.call('GET', '/api/workspace', h.adminKey)).body.data.workspace.maxKeyDays).toBeNull();
  }, 120_000);
});

describe('on a PostgreSQL store', () => {
  let pgh: Harness;
  beforeAll(async () => {
    pgh = await createPgStoreHarness();
  });
  afterAll(async () => {
    await pgh?.close();
  });

  it('scopes, limits the lifetime, grants, and audits an expiry once, as on SQLite', async () => {
    const db = new Database(path.join(workspaceSqliteDir(pgh, 'default'), 'pg-store.db'));
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY)');
    db.close();
    const conn = (await pgh.call('POST', '/api/connections', pgh.adminKey, { name: 'lite', url: 'sqlite:pg-store.db' })).body.data
      .connection;
    expect((await pgh.call('PATCH', '/api/workspace', pgh.adminKey, { maxKeyDays: 90 })).status).toBe(200);
    const created = await pgh.call('POST', '/api/keys', pgh.adminKey, { name: 'agent', readOnly: true, connections: ['lite'] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.data.apiKey.scope).toEqual({ readOnly: true, connections: [conn.id] });
    expect(Math.abs(Date.parse(created.body.data.apiKey.expiresAt) - (Date.now() + 90 * 86_400_000))).toBeLessThan(60_000);
    expect((await pgh.call('POST', '/api/query', created.body.data.secret, { connectionId: 'lite', sql: 'DELETE FROM t' })).status).toBe(
      403,
    );

    expect((await pgh.call('PUT', `/api/connections/${conn.id}/grants`, pgh.adminKey, { everyone: false, users: [] })).status).toBe(200);
    expect((await pgh.call('POST', '/api/query', pgh.readerKey, { connectionId: 'lite', sql: 'SELECT 1' })).status).toBe(404);
    expect((await pgh.call('GET', `/api/connections/${conn.id}/grants`, pgh.adminKey)).body.data).toEqual({ everyone: false, users: [] });

    const { apiKey, secret } = await createApiKey(pgh.svc.db, {
      workspace: 'default',
      email: 'reader@acme.test',
      name: 'short',
      expiresAt: new Date(Date.now() + 300).toISOString(),
    });
    // As above: the clock moves past the expiry instead of the test waiting it out.
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    vi.setSystemTime(Date.parse(apiKey.expiresAt!) + 100);
    await Promise.all([1, 2, 3].map(() => pgh.call('GET', '/api/connections', secret)));
    const expired = () =>
      pgh.svc.db.selectFrom('audit_log').select('id').where('action', '=', 'key.expired').where('target_id', '=', apiKey.id).execute();
    await until('key.expired in the audit log', async () => (await expired()).length > 0, 3000);
    // "Once" is an absence: a second entry would have been written by now.
    await sleep(100);
    expect(await expired()).toHaveLength(1);
  });
});
