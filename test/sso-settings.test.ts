// GET|PUT|DELETE /workspace/sso on both stores: admins only, bad input refused with nothing
// stored, the client secret sealed at rest and never returned or audited, the redirect URI to
// register, workspaces apart, and password sign-in refused (before any password is checked)
// while SSO has it off, back once SSO is removed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ssoClientSettings } from '../src/sso/sso-settings.ts';
import { createHarness, createPgStoreHarness, type Harness } from './support/harness.ts';

const SECRET = 'the-client-secret-0123456789';
const VALID = {
  issuer: 'https://login.acme.test/realms/main',
  clientId: 'dbq',
  clientSecret: SECRET,
  allowedDomains: ['Acme.test', '@corp.acme.test'],
  defaultRole: 'read_only',
};

describe.each([
  ['SQLite store', () => createHarness({ DBQ_PUBLIC_URL: 'https://dbq.example.com/' })],
  ['PostgreSQL store', () => createPgStoreHarness({ DBQ_PUBLIC_URL: 'https://dbq.example.com/' })],
])('single sign-on settings (%s)', (_name, make) => {
  let h: Harness;
  beforeAll(async () => {
    h = await make();
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  const audits = () => h.svc.db.selectFrom('audit_log').selectAll().where('action', '=', 'sso.configured').orderBy('id').execute();
  const signIn = (password: string) => h.call('POST', '/ui/api/login', null, { email: 'admin@acme.test', password });

  it('shows SSO off, and the redirect URI to register first', async () => {
    const res = await h.call('GET', '/api/workspace/sso', h.adminKey);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      configured: false,
      issuer: null,
      clientId: null,
      clientSecretSet: false,
      allowedDomains: [],
      defaultRole: 'read_only',
      passwordSignIn: true,
      redirectUri: 'https://dbq.example.com/sso/callback',
      updatedAt: null,
    });
    const other = await h.call('GET', '/w/other/api/workspace/sso', h.otherKey);
    expect(other.body.data.redirectUri).toBe('https://dbq.example.com/w/other/sso/callback');
  });

  it('is for admins only', async () => {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const res = await h.call(method, '/api/workspace/sso', h.readerKey, method === 'PUT' ? VALID : undefined);
      expect(res.status, method).toBe(403);
    }
    expect(await audits()).toHaveLength(0);
  });

  it('refuses bad input with a message naming the field, and stores nothing', async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ ...VALID, clientSecret: undefined }, 'clientSecret', 'required the first time'],
      [{ ...VALID, issuer: 'http://login.acme.test' }, 'issuer', 'https://'],
      [{ ...VALID, issuer: 'not a url' }, 'issuer', 'URL'],
      [{ ...VALID, issuer: 'https://login.acme.test/?x=1' }, 'issuer', 'no query'],
      [{ ...VALID, allowedDomains: [] }, 'allowedDomains', 'at least one'],
      [{ ...VALID, allowedDomains: ['acme'] }, 'allowedDomains', 'not a domain'],
      [{ ...VALID, allowedDomains: ['a b.test'] }, 'allowedDomains', 'not a domain'],
      [{ ...VALID, defaultRole: 'owner' }, 'defaultRole', ''],
      [{ ...VALID, passwordSignIn: 'no' }, 'passwordSignIn', ''],
      [{ ...VALID, extra: 1 }, '', 'extra'],
    ];
    for (const [body, field, words] of cases) {
      const res = await h.call('PUT', '/api/workspace/sso', h.adminKey, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe('invalid_request');
      if (field) expect(res.body.details?.field, JSON.stringify(body)).toBe(field);
      expect(res.body.error).toContain(words);
    }
    expect((await h.call('GET', '/api/workspace/sso', h.adminKey)).body.data.configured).toBe(false);
    expect(await h.svc.db.selectFrom('workspace_sso').selectAll().execute()).toHaveLength(0);
    expect(await audits()).toHaveLength(0);
  });

  it('stores the secret sealed, never returns or audits it', async () => {
    const res = await h.call('PUT', '/api/workspace/sso', h.adminKey, VALID);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      configured: true,
      issuer: VALID.issuer,
      clientId: 'dbq',
      clientSecretSet: true,
      allowedDomains: ['acme.test', 'corp.acme.test'],
      defaultRole: 'read_only',
      passwordSignIn: true,
      redirectUri: 'https://dbq.example.com/sso/callback',
    });
    expect(JSON.stringify(res.body)).not.toContain(SECRET);
    const row = await h.svc.db.selectFrom('workspace_sso').selectAll().executeTakeFirstOrThrow();
    expect(row.client_secret).toMatch(/^v1:/);
    expect(row.client_secret).not.toContain(SECRET);
    const entries = await audits();
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ source: 'api', actor_email: 'admin@acme.test', target_type: 'workspace' });
    expect(JSON.parse(entries[0].changes!)).toEqual({
      issuer: VALID.issuer,
      clientId: 'dbq',
      allowedDomains: ['acme.test', 'corp.acme.test'],
      defaultRole: 'read_only',
      passwordSignIn: true,
      clientSecret: 'set',
    });
    const got = await h.call('GET', '/api/workspace/sso', h.adminKey);
    expect(JSON.stringify(got.body)).not.toContain(SECRET);
    // The other workspace is untouched.
    expect((await h.call('GET', '/w/other/api/workspace/sso', h.otherKey)).body.data.configured).toBe(false);
  });

  it('keeps the stored secret when a later PUT leaves it out; audits only what changed', async () => {
    const res = await h.call('PUT', '/api/workspace/sso', h.adminKey, { ...VALID, clientSecret: undefined, passwordSignIn: false });
    expect(res.status).toBe(200);
    const ws = await h.svc.db.selectFrom('workspaces').select('id').where('slug', '=', 'default').executeTakeFirstOrThrow();
    const opened = await ssoClientSettings(h.svc.db, h.svc.secretBox, ws.id);
    expect(opened?.clientSecret).toBe(SECRET);
    expect(JSON.parse((await audits()).at(-1)!.changes!)).toEqual({ passwordSignIn: { from: true, to: false } });
  });

  it('refuses the password sign-in while SSO has it off — a right password and a wrong one alike', async () => {
    for (const password of ['correct horse', 'wrong password']) {
      const res = await signIn(password);
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ success: false, code: 'password_sign_in_disabled' });
      expect(res.body.error).toContain('Password sign-in is turned off for this workspace');
    }
    const offered = await h.call('GET', '/ui/api/sso', null);
    expect(offered.body.data).toEqual({ sso: true, passwordSignIn: false });
    // Another workspace keeps its passwords.
    expect((await h.call('GET', '/w/other/ui/api/sso', null)).body.data).toEqual({ sso: false, passwordSignIn: true });
  });

  it('DELETE turns SSO off and passwords work again', async () => {
    const res = await h.call('DELETE', '/api/workspace/sso', h.adminKey);
    expect(res.status).toBe(200);
    expect(res.body.data.configured).toBe(false);
    expect((await signIn('correct horse')).status).toBe(200);
    expect(JSON.parse((await audits()).at(-1)!.changes!)).toMatchObject({ removed: true });
    expect((await h.call('DELETE', '/api/workspace/sso', h.adminKey)).status).toBe(404);
  });

  it('is described in OpenAPI, the secret write-only', async () => {
    const doc = (await h.call('GET', '/api/openapi.json', null)).body;
    const path = doc.paths['/api/workspace/sso'] ?? doc.paths['/workspace/sso'];
    expect(Object.keys(path).sort()).toEqual(['delete', 'get', 'put']);
    expect(JSON.stringify(path.put.requestBody)).toContain('clientSecret');
    expect(JSON.stringify(path.get.responses)).not.toContain('"clientSecret"');
  });
});
