// Authentication, the envelope, workspace addressing and isolation, and the operational
// endpoints, through the real Fastify app (inject) on a real store.
import { cliActor } from '../src/audit/audit.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, revokeApiKey, listApiKeys } from '../src/workspaces/api-keys.ts';
import { createUser, setUserDisabled, setUserRole } from '../src/workspaces/users.ts';
import { createHarness, type Harness } from './support/harness.ts';

let h: Harness;
const logs: string[] = [];

beforeAll(async () => {
  h = await createHarness({ DBQ_BASE_DOMAIN: 'dbq.test', DBQ_METRICS_TOKEN: 'metrics-secret' }, { logs });
});
afterAll(async () => {
  await h.close();
});

describe('authentication', () => {
  it('accepts a valid key with any casing of the Bearer scheme', async () => {
    for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
      const res = await h.call('GET', '/api/connections', null, undefined, { authorization: `${scheme} ${h.adminKey}` });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true, data: { connections: [] } });
    }
  });

  it('answers every kind of bad key with the same 401 envelope', async () => {
    const { apiKey, secret: revoked } = await createApiKey(h.svc.db, { workspace: 'default', email: 'admin@acme.test', name: 'to-revoke' });
    await revokeApiKey(h.svc.db, 'default', apiKey.id);
    await createUser(h.svc.db, { workspace: 'default', email: 'gone@acme.test', role: 'admin' }, cliActor());
    const { secret: disabledUsersKey } = await createApiKey(h.svc.db, { workspace: 'default', email: 'gone@acme.test', name: 'x' });
    await setUserDisabled(h.svc.db, 'default', 'gone@acme.test', true, cliActor());
    const flipped = h.adminKey.slice(0, 10) + (h.adminKey[10] === 'a' ? 'b' : 'a') + h.adminKey.slice(11);
    const cases: [string, Record<string, string>][] = [
      ['missing', {}],
      ['not bearer', { authorization: `Basic ${h.adminKey}` }],
      ['malformed', { authorization: 'Bearer hello' }],
      ['bad checksum', { authorization: `Bearer ${flipped}` }],
      ['revoked', { authorization: `Bearer ${revoked}` }],
      ['disabled user', { authorization: `Bearer ${disabledUsersKey}` }],
      ['other workspace', { authorization: `Bearer ${h.otherKey}` }],
    ];
    for (const [why, headers] of cases) {
      const res = await h.call('GET', '/api/connections', null, undefined, headers);
      expect(res.status, why).toBe(401);
      expect(res.body, why).toEqual({ success: false, error: 'Invalid or missing API key', code: 'invalid_api_key' });
      expect(res.headers['x-request-id'], why).toBeTruthy();
    }
  });

  it('does not accept ?api_key= under /api', async () => {
    const res = await h.call('GET', `/api/connections?api_key=${h.adminKey}`, null);
    expect(res.status).toBe(401);
  });

  it('applies a role change to existing keys at the next request', async () => {
    await createUser(h.svc.db, { workspace: 'default', email: 'flip@acme.test', role: 'admin' }, cliActor());
    const { secret } = await createApiKey(h.svc.db, { workspace: 'default', email: 'flip@acme.test', name: 'flip' });
    const body = { name: 'flip-conn', engine: 'sqlite', database: 'flip.db' };
    expect((await h.call('POST', '/api/connections', secret, body)).status).toBe(201);
    await setUserRole(h.svc.db, 'default', 'flip@acme.test', 'read_only', cliActor());
    const res = await h.call('POST', '/api/connections', secret, { ...body, name: 'flip-conn-2' });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ success: false, error: 'Insufficient permissions', code: 'insufficient_permissions' });
    expect((await h.call('DELETE', '/api/connections/flip-conn', h.adminKey)).status).toBe(200);
  });

  it('records lastUsedAt', async () => {
    await h.call('GET', '/api/connections', h.readerKey);
    const keys = await listApiKeys(h.svc.db, 'default');
    expect(keys.find((k) => k.name === 'reader-key')?.lastUsedAt).toBeTruthy();
  });
});

describe('workspace addressing and isolation', () => {
  it('serves the path form, the root alias and /api/v1', async () => {
    await h.call('POST', '/w/other/api/connections', h.otherKey, { name: 'only-other', engine: 'sqlite', database: 'other.db' });
    const viaPath = await h.call('GET', '/w/other/api/connections', h.otherKey);
    const viaV1 = await h.call('GET', '/w/other/api/v1/connections', h.otherKey);
    expect(viaPath.body.data.connections.map((c: any) => c.name)).toEqual(['only-other']);
    expect(viaV1.body).toEqual(viaPath.body);
    expect((await h.call('GET', '/api/v1/connections', h.adminKey)).status).toBe(200);
    expect((await h.call('GET', '/w/default/api/connections', h.adminKey)).status).toBe(200);
  });

  it("never shows or runs another workspace's connection", async () => {
    const other = (await h.call('GET', '/w/other/api/connections', h.otherKey)).body.data.connections[0];
    expect((await h.call('GET', '/api/connections', h.adminKey)).body.data.connections.map((c: any) => c.name)).not.toContain('only-other');
    for (const ref of [other.id, other.name]) {
      const q = await h.call('POST', '/api/query', h.adminKey, { connectionId: ref, sql: 'SELECT 1' });
      expect(q.status).toBe(404);
      expect(q.body).toMatchObject({ error: 'Connection not found', code: 'connection_not_found' });
      expect((await h.call('PATCH', `/api/connections/${ref}`, h.adminKey, { readOnly: true })).status).toBe(404);
      expect((await h.call('DELETE', `/api/connections/${ref}`, h.adminKey)).status).toBe(404);
    }
    // The key of `default` used at other's address is a 401, not a 404 or a leak.
    expect((await h.call('GET', '/w/other/api/connections', h.adminKey)).status).toBe(401);
  });

  it('answers 401 (not 404) for an unknown workspace under /api, 404 on public pages', async () => {
    expect((await h.call('GET', '/w/nope/api/connections', h.adminKey)).status).toBe(401);
    const docs = await h.call('GET', '/w/nope/docs', null);
    expect(docs.status).toBe(404);
    expect(docs.body).toMatchObject({ success: false, error: 'Workspace not found', code: 'workspace_not_found' });
  });

  it('serves the host form when DBQ_BASE_DOMAIN is set', async () => {
    const res = await h.call('GET', '/api/connections', h.otherKey, undefined, { host: 'other.dbq.test' });
    expect(res.status).toBe(200);
    expect(res.body.data.connections.map((c: any) => c.name)).toEqual(['only-other']);
    expect((await h.call('GET', '/api/connections', h.adminKey, undefined, { host: 'other.dbq.test' })).status).toBe(401);
  });
});

describe('envelope and request errors', () => {
  it('answers unknown routes with 404 Not found in the envelope', async () => {
    const res = await h.call('GET', '/api/nothing-here', h.adminKey);
    expect(res.status).toBe(404);
    const root = await h.call('GET', '/definitely/not/here', null);
    expect(root.body).toEqual({ success: false, error: 'Not found', code: 'not_found' });
  });

  it('refuses malformed JSON with 400 Invalid JSON body and creates nothing', async () => {
    const res = await h.call('POST', '/api/connections', h.adminKey, '{"name": "x", engine', { 'content-type': 'application/json' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ success: false, error: 'Invalid JSON body', code: 'invalid_json' });
    expect((await h.call('GET', '/api/connections', h.adminKey)).body.data.connections).toEqual([]);
  });

  it('refuses bodies over the limit with 413', async () => {
    const big = JSON.stringify({ connectionId: 'x', sql: `SELECT '${'x'.repeat(1_100_000)}'` });
    const res = await h.call('POST', '/api/query', h.adminKey, big, { 'content-type': 'application/json' });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ success: false, error: 'Request body too large', code: 'payload_too_large' });
  });

  it('names the field on wrong types, unknown fields and out-of-range values', async () => {
    const cases: [unknown, string][] = [
      [{ connectionId: 'x', sql: 42 }, 'sql'],
      [{ connectionId: 'x', sql: 'SELECT 1', maxRows: 0 }, 'maxRows'],
      [{ connectionId: 'x', sql: 'SELECT 1', maxRows: 10_001 }, 'maxRows'],
      [{ connectionId: 'x', sql: 'SELECT 1', timeoutMs: 300_001 }, 'timeoutMs'],
      [{ connectionId: 'x', sql: 'SELECT 1', rowFormat: 'xml' }, 'rowFormat'],
      [{ sql: 'SELECT 1' }, 'connectionId'],
      [{ connectionId: 'x', sql: 'SELECT 1', options: '-c x' }, 'options'],
      [[1, 2], ''],
    ];
    for (const [body, field] of cases) {
      const res = await h.call('POST', '/api/query', h.adminKey, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe('invalid_request');
      expect(res.body.error).toContain(field);
    }
  });

  it('keeps the client X-Request-Id when it is a plain token, replaces it otherwise', async () => {
    const kept = await h.call('GET', '/healthz', null, undefined, { 'x-request-id': 'trace-123' });
    expect(kept.headers['x-request-id']).toBe('trace-123');
    const replaced = await h.call('GET', '/healthz', null, undefined, { 'x-request-id': 'bad id\nInjected: yes' });
    expect(replaced.headers['x-request-id']).not.toContain('Injected');
  });
});

describe('operations', () => {
  it('serves healthz, readyz and a token-guarded metrics endpoint', async () => {
    expect((await h.call('GET', '/healthz', null)).body).toEqual({ success: true, data: { status: 'ok' } });
    expect((await h.call('GET', '/readyz', null)).body.data.status).toBe('ready');
    expect((await h.call('GET', '/metrics', null)).status).toBe(401);
    const metrics = await h.call('GET', '/metrics', 'metrics-secret');
    expect(metrics.status).toBe(200);
    expect(String(metrics.body)).toContain('dbq_http_requests_total');
  });

  it('publishes OpenAPI 3.1 generated from the route schemas, and a docs page', async () => {
    const res = await h.call('GET', '/api/openapi.json', null);
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    for (const path of [
      '/api/connections',
      '/api/connections/test',
      '/api/connections/{id}',
      '/api/query',
      '/api/query/history',
      '/api/ai/generate',
    ]) {
      expect(Object.keys(res.body.paths)).toContain(path);
    }
    expect(res.body.paths['/api/query'].post.requestBody.content['application/json'].schema.properties.maxRows.maximum).toBe(10000);
    const docs = await h.call('GET', '/docs', null);
    expect(String(docs.body)).toContain('<title>dbq API</title>');
    expect((await h.call('GET', '/w/other/docs', null)).status).toBe(200);
  });

  it('never writes keys or passwords to the logs', async () => {
    await h.call('GET', `/api/connections?api_key=${h.readerKey}`, null);
    await h.call('POST', '/api/connections', h.adminKey, { name: 'logged', url: 'postgres://u:Very-Secret-Pw@127.0.0.1:5999/db' });
    await h.call('POST', '/api/connections/test', h.adminKey, { url: 'postgres://u:Very-Secret-Pw@127.0.0.1:5999/db' });
    const text = logs.join('\n');
    expect(text.length).toBeGreaterThan(0);
    expect(text).not.toContain(h.adminKey);
    expect(text).not.toContain(h.readerKey);
    expect(text).not.toContain('Very-Secret-Pw');
  });
});
