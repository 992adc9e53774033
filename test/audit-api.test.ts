// The audit log through the REST API: connection changes made with an admin key are recorded
// with the key, its user, the client address and `source: api`; no secret (password, reader
// password, SSH key, URL with a password) reaches an entry; GET /audit is admin-only, filtered,
// validated, in OpenAPI, per workspace, and works on a PostgreSQL store too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listApiKeys } from '../src/workspaces/api-keys.ts';
import { createHarness, createPgStoreHarness, type Harness } from './support/harness.ts';

const SECRETS = ['Api-Pass-1', 'Api-ReadPass-1', 'Api-Pass-2', 'Api-ReadPass-2', 'AuditKeyMaterial', 'Bastion-Pw-1'];
const SSH_KEY =
  '-----BEGIN OPENSSH PRIVATE KEY-----\nAuditKeyMaterialb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n';
const HOST_KEY = `SHA256:${'A'.repeat(43)}`;

let h: Harness;
let adminKeyId: string;
let adminUserId: string;

beforeAll(async () => {
  // The privilege audit of a saved connection dials it: keep an unreachable bastion short.
  h = await createHarness({ DBQ_CONNECTION_TEST_TIMEOUT_MS: '2000' });
  const keys = await listApiKeys(h.svc.db, 'default');
  const admin = keys.find((k) => k.name === 'admin-key')!;
  adminKeyId = admin.id;
  adminUserId = admin.user.id;
});
afterAll(async () => {
  await h?.close();
});

const audit = async (query = '', key = h.adminKey) => h.call('GET', `/api/audit${query}`, key);

describe('connection changes over the API', () => {
  let id: string;

  it('records connection.created, .updated and .deleted with the key, its user, the address and source api', async () => {
    const created = await h.call('POST', '/api/connections', h.adminKey, {
      name: 'secretive',
      url: 'postgres://postgres:Api-Pass-1@127.0.0.1:5432/test',
      readUser: 'postgres',
      readPassword: 'Api-ReadPass-1',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    id = created.body.data.connection.id;
    const patched = await h.call('PATCH', `/api/connections/${id}`, h.adminKey, {
      url: 'postgres://postgres:Api-Pass-2@localhost:5432/test',
      readPassword: 'Api-ReadPass-2',
      ssh: { host: '127.0.0.1', port: 1, user: 'jump', privateKey: SSH_KEY, hostKey: HOST_KEY },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const sshPassword = await h.call('PATCH', `/api/connections/${id}`, h.adminKey, {
      ssh: { host: '127.0.0.1', port: 1, user: 'jump', password: 'Bastion-Pw-1', hostKey: HOST_KEY },
    });
    expect(sshPassword.status, JSON.stringify(sshPassword.body)).toBe(200);
    expect((await h.call('DELETE', `/api/connections/${id}`, h.adminKey)).status).toBe(200);

    const res = await audit(`?targetId=${id}`);
    expect(res.status).toBe(200);
    const entries = res.body.data.entries;
    expect(entries.map((e: any) => e.action)).toEqual([
      'connection.deleted',
      'connection.updated',
      'connection.updated',
      'connection.created',
    ]);
    for (const e of entries) {
      expect(e.actor).toEqual({ userId: adminUserId, email: 'admin@acme.test', keyId: adminKeyId });
      expect(e.target).toEqual({ type: 'connection', id, name: 'secretive' });
      expect(e).toMatchObject({ ip: '127.0.0.1', source: 'api' });
    }
    const [deleted, secondUpdate, firstUpdate, createdEntry] = entries;
    expect(createdEntry.changes).toMatchObject({
      engine: 'postgres',
      host: '127.0.0.1',
      port: 5432,
      database: 'test',
      user: 'postgres',
      readUser: 'postgres',
      password: 'set',
      readPassword: 'set',
    });
    expect(firstUpdate.changes).toEqual({
      host: { from: '127.0.0.1', to: 'localhost' },
      ssh: { from: null, to: { host: '127.0.0.1', port: 1, user: 'jump', hostKey: HOST_KEY } },
      password: 'changed',
      readPassword: 'changed',
      sshPrivateKey: 'set',
    });
    expect(secondUpdate.changes).toEqual({ sshPrivateKey: 'removed', sshPassword: 'set' });
    expect(deleted.changes).toEqual({ engine: 'postgres', host: 'localhost', database: 'test' });
  });

  it('never stores or answers a secret: not in the rows, not in GET /audit', async () => {
    const rows = JSON.stringify(await h.svc.db.selectFrom('audit_log').selectAll().execute());
    const answer = JSON.stringify((await audit('?limit=200')).body);
    for (const secret of SECRETS) {
      expect(rows, secret).not.toContain(secret);
      expect(answer, secret).not.toContain(secret);
    }
    expect(rows).not.toContain('PRIVATE KEY');
  });
});

describe('GET /audit', () => {
  it('refuses a reader with 403 and a missing key with 401', async () => {
    const reader = await audit('', h.readerKey);
    expect(reader.status).toBe(403);
    expect(reader.body).toMatchObject({ success: false, code: 'insufficient_permissions' });
    expect((await h.call('GET', '/api/audit', null)).status).toBe(401);
  });

  it("shows a workspace's own entries only", async () => {
    const other = await h.call('GET', '/w/other/api/audit?limit=200', h.otherKey);
    expect(other.status).toBe(200);
    expect(JSON.stringify(other.body.data.entries)).not.toContain('secretive');
  });

  it('filters by action and actor, and refuses bad parameters with 400 naming them', async () => {
    const byAction = await audit('?action=connection.created');
    expect(byAction.body.data.entries.map((e: any) => e.action)).toEqual(['connection.created']);
    const byKey = await audit(`?actorId=${adminKeyId}&action=connection.deleted`);
    expect(byKey.body.data.entries).toHaveLength(1);
    expect((await audit('?actorId=nobody@acme.test')).body.data.entries).toEqual([]);
    for (const bad of ['?limit=0', '?limit=abc', '?action=key.stolen', '?since=yesterday', '?order=asc', '?cursor=zzz']) {
      const res = await audit(bad);
      expect(res.status, bad).toBe(400);
    }
  });

  it('pages with nextCursor', async () => {
    const first = await audit('?limit=2');
    expect(first.body.data.entries).toHaveLength(2);
    expect(first.body.data.nextCursor).toEqual(expect.any(String));
    const second = await audit(`?limit=2&cursor=${first.body.data.nextCursor}`);
    const ids = [...first.body.data.entries, ...second.body.data.entries].map((e: any) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort().reverse()).toEqual(ids);
  });

  it('is described in OpenAPI with its query parameters', async () => {
    const doc = (await h.call('GET', '/api/openapi.json', null)).body;
    const path = Object.keys(doc.paths).find((p) => p.endsWith('/audit'))!;
    expect(path).toBeDefined();
    const params = (doc.paths[path].get.parameters ?? []).map((p: any) => p.name);
    expect(params).toEqual(expect.arrayContaining(['limit', 'cursor', 'action', 'actorId', 'targetId', 'since', 'until']));
  });
});

describe('on a PostgreSQL store', () => {
  let pgh: Harness;
  beforeAll(async () => {
    pgh = await createPgStoreHarness();
  });
  afterAll(async () => {
    await pgh?.close();
  });

  it('records and lists an API change', async () => {
    const created = await pgh.call('POST', '/api/connections', pgh.adminKey, {
      name: 'pgstore',
      url: 'postgres://postgres:Pg-Store-Pw@127.0.0.1:5432/test',
    });
    expect(created.status).toBe(201);
    const res = await pgh.call('GET', '/api/audit?action=connection.created', pgh.adminKey);
    expect(res.status).toBe(200);
    expect(res.body.data.entries).toHaveLength(1);
    expect(res.body.data.entries[0]).toMatchObject({ target: { name: 'pgstore' }, source: 'api', actor: { email: 'admin@acme.test' } });
    expect(JSON.stringify(res.body)).not.toContain('Pg-Store-Pw');
  });
});
