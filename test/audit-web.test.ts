// The audit log through the web app's JSON API (session cookie + CSRF token, as the browser
// sends them): setup link, sign-in and failed sign-in, users and connections changed from the
// pages are recorded with the signed-in user (no key), the client address and `source: ui`;
// a failed sign-in records the email tried and never the password; the audit page and its
// API are for admins only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueSetupToken } from '../src/workspaces/setup-token.ts';
import { hashPassword } from '../src/workspaces/passwords.ts';
import { createWorkspace } from '../src/workspaces/workspaces.ts';
import { createHarness, type Harness } from './support/harness.ts';

const ADMIN = { email: 'admin@acme.test', password: 'correct horse' };
const READER = { email: 'reader@acme.test', password: 'reader password' };
const IP = '203.0.113.7';

let h: Harness;
let adminId: string;

interface Res {
  status: number;
  body: any;
  headers: Record<string, unknown>;
}

async function req(method: string, url: string, opts: { cookie?: string; csrf?: string; body?: unknown; ip?: string } = {}): Promise<Res> {
  const headers: Record<string, string> = {};
  if (opts.cookie) headers.cookie = opts.cookie;
  if (opts.csrf) headers['x-csrf-token'] = opts.csrf;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await h.app.inject({
    method: method as any,
    url,
    headers,
    remoteAddress: opts.ip ?? IP,
    payload: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  let body: unknown = res.body;
  try {
    body = JSON.parse(res.body);
  } catch {
    // HTML pages stay text
  }
  return { status: res.statusCode, body, headers: res.headers as Record<string, unknown> };
}

function cookieOf(res: Res): string {
  const raw = res.headers['set-cookie'];
  const m = /dbq_session=([^;]+)/.exec(Array.isArray(raw) ? raw.join('\n') : String(raw ?? ''));
  if (!m) throw new Error('no session cookie');
  return `dbq_session=${m[1]}`;
}

async function signIn(who: { email: string; password: string }, base = ''): Promise<{ cookie: string; csrf: string }> {
  const res = await req('POST', `${base}/ui/api/login`, { body: who });
  expect(res.status).toBe(200);
  return { cookie: cookieOf(res), csrf: res.body.data.csrfToken };
}

async function entries(query = '', workspace = 'default'): Promise<any[]> {
  const rows = await h.svc.db
    .selectFrom('audit_log')
    .innerJoin('workspaces', 'workspaces.id', 'audit_log.workspace_id')
    .selectAll('audit_log')
    .where('workspaces.slug', '=', workspace)
    .orderBy('audit_log.id', 'desc')
    .execute();
  return rows.filter((r) => !query || r.action === query);
}

beforeAll(async () => {
  h = await createHarness();
  await h.svc.db
    .updateTable('users')
    .set({ password_hash: await hashPassword(READER.password) })
    .where('email', '=', READER.email)
    .execute();
  adminId = (await h.svc.db.selectFrom('users').select('id').where('email', '=', ADMIN.email).executeTakeFirstOrThrow()).id;
});
afterAll(async () => {
  await h?.close();
});

describe('sign-in and setup', () => {
  it('records session.signed_in with the user, the address and source ui', async () => {
    await signIn(ADMIN);
    const [e] = await entries('session.signed_in');
    expect(e).toMatchObject({
      actor_user_id: adminId,
      actor_email: ADMIN.email,
      actor_key_id: null,
      ip: IP,
      source: 'ui',
      target_type: 'user',
      target_id: adminId,
      target_name: ADMIN.email,
      changes: null,
    });
  });

  it('records session.sign_in_failed with the email tried (known or not) and never the password', async () => {
    for (const tried of [
      { email: ADMIN.email, password: 'Wrong-Guess-1' },
      { email: 'Nobody@Acme.test', password: 'Wrong-Guess-2' },
    ]) {
      const res = await req('POST', '/ui/api/login', { body: tried });
      expect(res.status).toBe(401);
    }
    const failed = await entries('session.sign_in_failed');
    expect(failed.map((e) => e.target_name)).toEqual(['nobody@acme.test', ADMIN.email]);
    for (const e of failed) {
      expect(e).toMatchObject({ actor_user_id: null, actor_key_id: null, ip: IP, source: 'ui', target_type: 'user', target_id: null });
      expect(e.actor_email).toBe(e.target_name);
    }
    const all = JSON.stringify(await h.svc.db.selectFrom('audit_log').selectAll().execute());
    expect(all).not.toContain('Wrong-Guess');
    expect(all).not.toContain(ADMIN.password);
  });

  it('records user.created and setup.used when the setup link makes the first admin', async () => {
    const ws = await createWorkspace(h.svc.db, { slug: 'fresh', plan: 'enterprise' });
    const token = (await issueSetupToken(h.svc.db, 'fresh'))!;
    const res = await req('POST', '/w/fresh/ui/api/setup', { body: { token, email: 'First@Fresh.test', password: 'first admin pw' } });
    expect(res.status).toBe(201);
    const userId = res.body.data.user.id;
    const list = await entries('', 'fresh');
    expect(list.map((e) => e.action)).toEqual(['setup.used', 'user.created']);
    const [used, created] = list;
    expect(created).toMatchObject({
      actor_user_id: null,
      actor_email: 'first@fresh.test',
      ip: IP,
      source: 'ui',
      target_type: 'user',
      target_id: userId,
      target_name: 'first@fresh.test',
    });
    expect(JSON.parse(created.changes)).toEqual({ role: 'admin' });
    expect(used).toMatchObject({
      actor_user_id: userId,
      actor_email: 'first@fresh.test',
      ip: IP,
      source: 'ui',
      target_type: 'workspace',
      target_id: ws.id,
      target_name: 'fresh',
    });
    expect(JSON.stringify(list)).not.toContain(token);
    expect(JSON.stringify(list)).not.toContain('first admin pw');
  });
});

describe('users and connections changed from the web app', () => {
  it('records user.created, user.role_changed, user.disabled and user.enabled by the signed-in admin', async () => {
    const s = await signIn(ADMIN);
    const created = await req('POST', '/ui/api/users', {
      ...s,
      body: { email: 'web-made@acme.test', role: 'read_only', password: 'Web-User-Pw-1' },
    });
    expect(created.status).toBe(201);
    const id = created.body.data.user.id;
    expect((await req('PATCH', `/ui/api/users/${id}`, { ...s, body: { role: 'admin' } })).status).toBe(200);
    expect((await req('PATCH', `/ui/api/users/${id}`, { ...s, body: { disabled: true } })).status).toBe(200);
    expect((await req('PATCH', `/ui/api/users/${id}`, { ...s, body: { disabled: false } })).status).toBe(200);
    const list = (await entries()).filter((e) => e.target_id === id);
    expect(list.map((e) => e.action)).toEqual(['user.enabled', 'user.disabled', 'user.role_changed', 'user.created']);
    for (const e of list) {
      expect(e).toMatchObject({
        actor_user_id: adminId,
        actor_email: ADMIN.email,
        actor_key_id: null,
        ip: IP,
        source: 'ui',
        target_type: 'user',
        target_name: 'web-made@acme.test',
      });
    }
    expect(JSON.parse(list[2].changes)).toEqual({ role: { from: 'read_only', to: 'admin' } });
    expect(JSON.stringify(list)).not.toContain('Web-User-Pw-1');
  });

  it('records connection.created, .updated and .deleted without the password', async () => {
    const s = await signIn(ADMIN);
    const created = await req('POST', '/ui/api/connections', { ...s, body: { name: 'webconn', engine: 'sqlite', database: 'web.db' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.data.connection.id;
    const patched = await req('PATCH', `/ui/api/connections/${id}`, { ...s, body: { name: 'webconn2', readOnly: true } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect((await req('DELETE', `/ui/api/connections/${id}`, s)).status).toBe(200);
    const list = (await entries()).filter((e) => e.target_id === id);
    expect(list.map((e) => e.action)).toEqual(['connection.deleted', 'connection.updated', 'connection.created']);
    for (const e of list)
      expect(e).toMatchObject({ actor_user_id: adminId, actor_key_id: null, ip: IP, source: 'ui', target_type: 'connection' });
    expect(JSON.parse(list[1].changes)).toEqual({ name: { from: 'webconn', to: 'webconn2' }, readOnly: { from: false, to: true } });
    expect(list[0].target_name).toBe('webconn2');
  });
});

describe('the audit page and /ui/api/audit', () => {
  it('records key.created and key.revoked for a key made and revoked on the keys page, without its secret', async () => {
    const s = await signIn(ADMIN);
    const made = await req('POST', '/ui/api/keys', { ...s, body: { name: 'page-key', readOnly: true, expiresInDays: 30 } });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const { apiKey, secret } = made.body.data;
    expect((await req('POST', `/ui/api/keys/${apiKey.id}/revoke`, s)).status).toBe(200);
    const [created] = (await entries('key.created')).filter((e) => e.target_id === apiKey.id);
    const [revoked] = (await entries('key.revoked')).filter((e) => e.target_id === apiKey.id);
    for (const e of [created, revoked]) {
      expect(e).toMatchObject({
        actor_user_id: adminId,
        actor_email: ADMIN.email,
        actor_key_id: null,
        ip: IP,
        source: 'ui',
        target_type: 'key',
        target_name: 'page-key',
      });
    }
    expect(JSON.parse(created.changes!)).toMatchObject({ scope: { readOnly: true }, expiresAt: apiKey.expiresAt });
    expect(JSON.stringify(await h.svc.db.selectFrom('audit_log').selectAll().execute())).not.toContain(secret);
  });

  it('serves admins the entries, filtered and paged', async () => {
    const s = await signIn(ADMIN);
    const all = await req('GET', '/ui/api/audit?limit=3', s);
    expect(all.status).toBe(200);
    expect(all.body.data.entries).toHaveLength(3);
    expect(all.body.data.nextCursor).toEqual(expect.any(String));
    const more = await req('GET', `/ui/api/audit?limit=3&cursor=${all.body.data.nextCursor}`, s);
    const ids = [...all.body.data.entries, ...more.body.data.entries].map((e: any) => e.id);
    expect(new Set(ids).size).toBe(6);
    const failed = await req('GET', '/ui/api/audit?action=session.sign_in_failed&actorId=nobody@acme.test', s);
    expect(failed.body.data.entries).toHaveLength(1);
    expect(failed.body.data.entries[0]).toMatchObject({
      action: 'session.sign_in_failed',
      actor: { userId: null, email: 'nobody@acme.test', keyId: null },
      source: 'ui',
      ip: IP,
    });
    expect((await req('GET', '/ui/api/audit?limit=999', s)).status).toBe(400);
  });

  it('refuses a reader: 403 from the API and the page', async () => {
    const s = await signIn(READER);
    const api = await req('GET', '/ui/api/audit', s);
    expect(api.status).toBe(403);
    expect(api.body.code).toBe('insufficient_permissions');
    expect((await req('GET', '/settings/audit', s)).status).toBe(403);
    const admin = await signIn(ADMIN);
    expect((await req('GET', '/settings/audit', admin)).status).toBe(200);
    expect((await req('GET', '/settings/audit')).status).toBe(302);
  });
});
