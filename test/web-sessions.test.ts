// Web app sessions through inject(): the cookie's flags, hashed storage, CSRF refusals, the
// per-request user check (a disabled user's session dies), admin-only endpoints, the sign-in
// rate limit and the one-time setup token. The browser-level flows are in web-browser.test.ts.
import { cliActor } from '../src/audit/audit.ts';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSample } from '../src/cli/serve.ts';
import { listHistory } from '../src/history/history.ts';
import { issueSetupToken } from '../src/workspaces/setup-token.ts';
import { csrfTokenFor } from '../src/console/sessions.ts';
import { hashPassword } from '../src/workspaces/passwords.ts';
import { createUser, setUserDisabled, setUserRole } from '../src/workspaces/users.ts';
import { createWorkspace } from '../src/workspaces/workspaces.ts';
import { createHarness, type Harness } from './support/harness.ts';

const ADMIN = { email: 'admin@acme.test', password: 'correct horse' };
const READER = { email: 'reader@acme.test', password: 'reader password' };

let h: Harness;

interface Res {
  status: number;
  body: any;
  headers: Record<string, unknown>;
}

async function req(
  method: string,
  url: string,
  opts: { cookie?: string; csrf?: string; body?: unknown; headers?: Record<string, string>; remoteAddress?: string } = {},
): Promise<Res> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.cookie) headers.cookie = opts.cookie;
  if (opts.csrf) headers['x-csrf-token'] = opts.csrf;
  if (opts.body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
  const res = await h.app.inject({
    method: method as any,
    url,
    headers,
    remoteAddress: opts.remoteAddress,
    payload: opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body),
  });
  let body: unknown = res.body;
  try {
    body = JSON.parse(res.body);
  } catch {
    // HTML pages stay text
  }
  return { status: res.statusCode, body, headers: res.headers as Record<string, unknown> };
}

function setCookie(res: Res): string {
  const raw = res.headers['set-cookie'];
  return Array.isArray(raw) ? raw.join('\n') : String(raw ?? '');
}

function cookieOf(res: Res): string {
  const m = /dbq_session=([^;]+)/.exec(setCookie(res));
  if (!m) throw new Error(`no session cookie in ${setCookie(res)}`);
  return `dbq_session=${m[1]}`;
}

async function signIn(who: { email: string; password: string }, base = ''): Promise<{ cookie: string; csrf: string; res: Res }> {
  const res = await req('POST', `${base}/ui/api/login`, { body: who });
  expect(res.status).toBe(200);
  return { cookie: cookieOf(res), csrf: res.body.data.csrfToken, res };
}

beforeAll(async () => {
  h = await createHarness();
  // The harness's reader has no password; give it one the way the store holds it.
  await h.svc.db
    .updateTable('users')
    .set({ password_hash: await hashPassword(READER.password) })
    .where('email', '=', READER.email)
    .execute();
});

afterAll(async () => {
  await h?.close();
});

describe('sign-in', () => {
  it('sets an HttpOnly, SameSite=Lax session cookie scoped to the workspace path, not Secure over plain http', async () => {
    const { res } = await signIn(ADMIN);
    const cookie = setCookie(res);
    expect(cookie).toMatch(/dbq_session=[A-Za-z0-9_-]{43};/);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Lax');
    expect(cookie).toContain('Path=/;');
    expect(cookie).toMatch(/Max-Age=43\d\d\d/);
    expect(cookie).not.toContain('Secure');
    expect(res.body.data.user).toMatchObject({ email: ADMIN.email, role: 'admin' });

    const other = await req('POST', '/w/other/ui/api/login', { body: { email: 'admin@other.test', password: 'nope nope' } });
    expect(other.status).toBe(401);
  });

  it('stores only a hash of the session token', async () => {
    const { cookie } = await signIn(ADMIN);
    const token = cookie.split('=')[1];
    const rows = await h.svc.db.selectFrom('web_sessions').selectAll().execute();
    expect(rows.some((r) => r.token_hash === createHash('sha256').update(token).digest('hex'))).toBe(true);
    expect(JSON.stringify(rows)).not.toContain(token);
  });

  it('refuses wrong credentials with one message and no cookie', async () => {
    for (const body of [
      { email: ADMIN.email, password: 'wrong password' },
      { email: 'nobody@acme.test', password: 'whatever' },
    ]) {
      const res = await req('POST', '/ui/api/login', { body, remoteAddress: '10.9.9.9' });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ success: false, error: 'Invalid email or password', code: 'invalid_credentials' });
      expect(res.headers['set-cookie']).toBeUndefined();
    }
  });

  it('the session endpoint tells who is signed in, and logout ends the session', async () => {
    const { cookie, csrf } = await signIn(ADMIN);
    const me = await req('GET', '/ui/api/session', { cookie });
    expect(me.body.data).toMatchObject({ signedIn: true, user: { email: ADMIN.email }, csrfToken: csrf });
    const out = await req('POST', '/ui/api/logout', { cookie, csrf });
    expect(out.status).toBe(200);
    expect(setCookie(out)).toMatch(/dbq_session=; Path=\/; Max-Age=0/);
    expect((await req('GET', '/ui/api/session', { cookie })).body.data).toEqual({ signedIn: false, setupNeeded: false });
    expect((await req('GET', '/ui/api/keys', { cookie })).status).toBe(401);
  });

  it('marks the cookie Secure when the request came over HTTPS through a trusted proxy', async () => {
    const proxied = await createHarness({ DBQ_TRUST_PROXY: 'true' });
    try {
      const res = await proxied.app.inject({
        method: 'POST',
        url: '/w/default/ui/api/login',
        headers: { 'content-type': 'application/json', 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.7' },
        payload: JSON.stringify(ADMIN),
      });
      expect(res.statusCode).toBe(200);
      const cookie = String(res.headers['set-cookie']);
      expect(cookie).toContain('; Secure');
      expect(cookie).toContain('Path=/w/default;');
    } finally {
      await proxied.close();
    }
  });

  it('rate limits failed sign-ins per address and email, even when the password is then right', async () => {
    const who = { email: 'limited@acme.test', password: 'the right one' };
    await createUser(h.svc.db, { workspace: 'default', role: 'read_only', ...who }, cliActor());
    const remoteAddress = '10.1.1.1';
    for (let i = 0; i < 5; i++) {
      expect(
        (await req('POST', '/ui/api/login', { body: { email: 'LIMITED@acme.test', password: `bad ${i}` }, remoteAddress })).status,
      ).toBe(401);
    }
    const limited = await req('POST', '/ui/api/login', { body: who, remoteAddress });
    expect(limited.status).toBe(429);
    expect(limited.body.code).toBe('rate_limited');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.headers['set-cookie']).toBeUndefined();
    // The same account from another address, and another account from this address, still work.
    expect((await req('POST', '/ui/api/login', { body: who, remoteAddress: '10.1.1.2' })).status).toBe(200);
    expect((await req('POST', '/ui/api/login', { body: READER, remoteAddress })).status).toBe(200);
  });
});

describe('csrf', () => {
  it('refuses unsafe requests without the session token, with a wrong one, or from another origin', async () => {
    const { cookie, csrf } = await signIn(READER);
    const body = { name: 'csrf-test' };
    const missing = await req('POST', '/ui/api/keys', { cookie, body });
    expect(missing.status).toBe(403);
    expect(missing.body.code).toBe('csrf_failed');
    expect((await req('POST', '/ui/api/keys', { cookie, body, csrf: csrfTokenFor('some-other-session') })).status).toBe(403);
    expect((await req('POST', '/ui/api/keys', { cookie, body, csrf, headers: { origin: 'https://evil.example' } })).status).toBe(403);
    expect((await req('POST', '/ui/api/keys', { cookie, body, csrf, headers: { 'sec-fetch-site': 'cross-site' } })).status).toBe(403);
    // A cross-site HTML form can only send form or text bodies.
    const text = await req('POST', '/ui/api/keys', { cookie, csrf, body: JSON.stringify(body), headers: { 'content-type': 'text/plain' } });
    expect(text.status).toBe(400);
    const created = await req('POST', '/ui/api/keys', {
      cookie,
      body,
      csrf,
      headers: { origin: 'http://localhost:80', 'sec-fetch-site': 'same-origin' },
    });
    expect(created.status).toBe(201);
    expect(created.body.data.secret).toMatch(/^dbq_/);
    expect(created.headers['cache-control']).toBe('no-store');
  });

  it('refuses a cross-origin sign-in (login CSRF)', async () => {
    const res = await req('POST', '/ui/api/login', { body: ADMIN, headers: { origin: 'https://evil.example' } });
    expect(res.status).toBe(403);
    expect(res.headers['set-cookie']).toBeUndefined();
  });
});

describe('per-request user check', () => {
  it("kills a disabled user's session, and re-enabling does not revive it", async () => {
    const { cookie } = await signIn(READER);
    expect((await req('GET', '/ui/api/keys', { cookie })).status).toBe(200);
    await setUserDisabled(h.svc.db, 'default', READER.email, true, cliActor()); // as the CLI would
    const after = await req('GET', '/ui/api/keys', { cookie });
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('sign_in_required');
    await setUserDisabled(h.svc.db, 'default', READER.email, false, cliActor());
    expect((await req('GET', '/ui/api/keys', { cookie })).status).toBe(401);
    const page = await req('GET', '/settings/api-keys', { cookie });
    expect(page.status).toBe(302);
    expect(page.headers.location).toBe('/login?next=%2Fsettings%2Fapi-keys');
  });

  it('disabling from the users page signs the user out at once; a demoted admin is read-only at the next request', async () => {
    const admin = await signIn(ADMIN);
    const reader = await signIn(READER);
    const users = (await req('GET', '/ui/api/users', { cookie: admin.cookie })).body.data.users as { id: string; email: string }[];
    const readerId = users.find((u) => u.email === READER.email)!.id;
    const res = await req('PATCH', `/ui/api/users/${readerId}`, { cookie: admin.cookie, csrf: admin.csrf, body: { disabled: true } });
    expect(res.status).toBe(200);
    expect(res.body.data.user.disabled).toBe(true);
    expect(await h.svc.db.selectFrom('web_sessions').select('id').where('user_id', '=', readerId).execute()).toEqual([]);
    expect((await req('GET', '/ui/api/session', { cookie: reader.cookie })).body.data.signedIn).toBe(false);
    await req('PATCH', `/ui/api/users/${readerId}`, { cookie: admin.cookie, csrf: admin.csrf, body: { disabled: false } });

    const self = users.find((u) => u.email === ADMIN.email)!.id;
    const selfDemote = await req('PATCH', `/ui/api/users/${self}`, { cookie: admin.cookie, csrf: admin.csrf, body: { role: 'read_only' } });
    expect(selfDemote.status).toBe(400);

    await setUserRole(h.svc.db, 'default', ADMIN.email, 'read_only', cliActor());
    try {
      expect((await req('GET', '/ui/api/users', { cookie: admin.cookie })).status).toBe(403);
    } finally {
      await setUserRole(h.svc.db, 'default', ADMIN.email, 'admin', cliActor());
    }
    expect((await req('GET', '/ui/api/users', { cookie: admin.cookie })).status).toBe(200);
  });

  it('a session belongs to one workspace', async () => {
    const { cookie } = await signIn(ADMIN);
    expect((await req('GET', '/w/default/ui/api/keys', { cookie })).status).toBe(200);
    expect((await req('GET', '/w/other/ui/api/keys', { cookie })).status).toBe(401);
    expect((await req('GET', '/w/nope/ui/api/keys', { cookie })).status).toBe(404);
  });

  it('slides the expiry forward and refreshes the cookie', async () => {
    const { cookie } = await signIn(ADMIN);
    const token = cookie.split('=')[1];
    const hash = createHash('sha256').update(token).digest('hex');
    const old = new Date(Date.now() - 2 * 3_600_000).toISOString();
    await h.svc.db
      .updateTable('web_sessions')
      .set({ last_seen_at: old, expires_at: new Date(Date.now() + 600_000).toISOString() })
      .where('token_hash', '=', hash)
      .execute();
    const res = await req('GET', '/ui/api/session', { cookie });
    expect(res.body.data.signedIn).toBe(true);
    expect(setCookie(res)).toMatch(/Max-Age=43\d\d\d/);
    const row = await h.svc.db.selectFrom('web_sessions').selectAll().where('token_hash', '=', hash).executeTakeFirstOrThrow();
    expect(Date.parse(row.expires_at) - Date.now()).toBeGreaterThan(11 * 3_600_000);

    await h.svc.db
      .updateTable('web_sessions')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('token_hash', '=', hash)
      .execute();
    expect((await req('GET', '/ui/api/session', { cookie })).body.data.signedIn).toBe(false);
  });
});

describe('permissions', () => {
  it('refuses a reader on the users page and its JSON endpoint', async () => {
    const { cookie, csrf } = await signIn(READER);
    const api = await req('GET', '/ui/api/users', { cookie });
    expect(api.status).toBe(403);
    expect(api.body).toMatchObject({ success: false, error: 'Insufficient permissions', code: 'insufficient_permissions' });
    expect(
      (await req('POST', '/ui/api/users', { cookie, csrf, body: { email: 'x@acme.test', role: 'admin', password: 'password1' } })).status,
    ).toBe(403);
    const page = await req('GET', '/settings/users', { cookie });
    expect(page.status).toBe(403);
    expect(page.headers['content-type']).toContain('text/html');
    expect((await req('GET', '/settings/connections', { cookie })).status).toBe(200);
  });

  it('lets a reader see and revoke only their own keys; an admin sees and revokes all', async () => {
    const reader = await signIn(READER);
    const admin = await signIn(ADMIN);
    const own = await req('GET', '/ui/api/keys', { cookie: reader.cookie });
    expect(own.body.data.scope).toBe('own');
    expect(own.body.data.apiKeys.every((k: any) => k.user.email === READER.email)).toBe(true);
    const all = await req('GET', '/ui/api/keys', { cookie: admin.cookie });
    expect(all.body.data.scope).toBe('workspace');
    const adminKey = all.body.data.apiKeys.find((k: any) => k.user.email === ADMIN.email);
    const refused = await req('POST', `/ui/api/keys/${adminKey.id}/revoke`, { cookie: reader.cookie, csrf: reader.csrf });
    expect(refused.status).toBe(404);
    const readerKey = all.body.data.apiKeys.find((k: any) => k.user.email === READER.email && !k.revokedAt);
    const revoked = await req('POST', `/ui/api/keys/${readerKey.id}/revoke`, { cookie: admin.cookie, csrf: admin.csrf });
    expect(revoked.status).toBe(200);
    expect(revoked.body.data.apiKey.revokedAt).not.toBeNull();
  });

  it('lets readers list and test connections but not change them', async () => {
    await ensureSample(h.svc);
    const { cookie, csrf } = await signIn(READER);
    const list = await req('GET', '/ui/api/connections', { cookie });
    expect(list.body.data.connections.map((c: any) => c.name)).toContain('sample');
    const test = await req('POST', '/ui/api/connections/test', { cookie, csrf, body: { connectionId: 'sample' } });
    expect(test.status).toBe(200);
    expect(test.body.data.ok).toBe(true);
    expect(
      (await req('POST', '/ui/api/connections', { cookie, csrf, body: { name: 'x', engine: 'sqlite', database: 'x.db' } })).status,
    ).toBe(403);
    expect((await req('DELETE', '/ui/api/connections/sample', { cookie, csrf })).status).toBe(403);
    expect(JSON.stringify(list.body)).not.toMatch(/password|secret/i);
  });

  it('runs console queries through runQuery with history source ui and no key', async () => {
    await ensureSample(h.svc);
    const { cookie, csrf } = await signIn(READER);
    const res = await req('POST', '/ui/api/query', { cookie, csrf, body: { connectionId: 'sample', sql: 'SELECT 1 AS one' } });
    expect(res.status).toBe(200);
    expect(res.body.data.rows).toEqual([[1]]);
    const write = await req('POST', '/ui/api/query', { cookie, csrf, body: { connectionId: 'sample', sql: 'DELETE FROM customers' } });
    expect(write.status).toBe(403);
    const hist = await req('GET', '/ui/api/history?limit=5', { cookie });
    expect(hist.body.data.entries[0]).toMatchObject({ source: 'ui', status: 'rejected', apiKey: null, user: { email: READER.email } });
    const ws = await h.svc.db.selectFrom('workspaces').selectAll().where('slug', '=', 'default').executeTakeFirstOrThrow();
    const all = await listHistory(
      h.svc.db,
      {
        workspace: { id: ws.id, slug: 'default', plan: ws.plan },
        user: { id: 'x', email: 'x', role: 'admin', accountRole: 'admin' },
        apiKey: null,
      },
      { limit: 10 },
    );
    expect(all.entries.filter((e) => e.source === 'ui').length).toBeGreaterThanOrEqual(2);
  });
});

describe('pages', () => {
  it('redirects to sign-in with a next link, at the root and in the path form', async () => {
    const root = await req('GET', '/');
    expect(root.status).toBe(302);
    expect(root.headers.location).toBe('/login?next=%2F');
    const path = await req('GET', '/w/other/settings/api-keys');
    expect(path.status).toBe(302);
    expect(path.headers.location).toBe('/w/other/login?next=%2Fw%2Fother%2Fsettings%2Fapi-keys');
    const login = await req('GET', '/w/other/login');
    expect(login.status).toBe(200);
    expect(login.headers['content-security-policy']).toContain("script-src 'self'");
    expect(login.headers['x-frame-options']).toBe('DENY');
    expect((await req('GET', '/w/nope/login')).status).toBe(404);
  });

  it('sends a signed-in user from /login to a safe next page only', async () => {
    const { cookie } = await signIn(ADMIN);
    expect((await req('GET', '/login?next=%2Fsettings%2Fusers', { cookie })).headers.location).toBe('/settings/users');
    expect((await req('GET', '/login?next=https%3A%2F%2Fevil.example', { cookie })).headers.location).toBe('/');
    expect((await req('GET', '/login?next=%2F%2Fevil.example', { cookie })).headers.location).toBe('/');
  });
});

describe('host-form workspaces', () => {
  it('addresses the workspace by host name when DBQ_BASE_DOMAIN is set', async () => {
    const hosted = await createHarness({ DBQ_BASE_DOMAIN: 'dbq.test' });
    try {
      const page = await hosted.app.inject({ method: 'GET', url: '/settings/api-keys', headers: { host: 'other.dbq.test' } });
      expect(page.statusCode).toBe(302);
      expect(page.headers.location).toBe('/login?next=%2Fsettings%2Fapi-keys');
      // default's admin is not a user of `other`.
      const login = await hosted.app.inject({
        method: 'POST',
        url: '/ui/api/login',
        headers: { host: 'other.dbq.test', 'content-type': 'application/json' },
        payload: JSON.stringify(ADMIN),
      });
      expect(login.statusCode).toBe(401);
      const ok = await hosted.app.inject({
        method: 'POST',
        url: '/ui/api/login',
        headers: { host: 'localhost', 'content-type': 'application/json' },
        payload: JSON.stringify(ADMIN),
      });
      expect(ok.statusCode).toBe(200);
      expect(String(ok.headers['set-cookie'])).toContain('Path=/;');
      expect((await hosted.app.inject({ method: 'GET', url: '/login', headers: { host: 'nope.dbq.test' } })).statusCode).toBe(404);
    } finally {
      await hosted.close();
    }
  });
});

describe('first-run setup', () => {
  it('creates the first admin once with the setup token, then refuses it', async () => {
    await createWorkspace(h.svc.db, { slug: 'fresh' });
    expect(await issueSetupToken(h.svc.db, 'default')).toBeNull(); // default has users
    const token = (await issueSetupToken(h.svc.db, 'fresh'))!;
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const rows = await h.svc.db.selectFrom('web_setup_tokens').selectAll().execute();
    expect(JSON.stringify(rows)).not.toContain(token);

    expect((await req('GET', '/w/fresh/setup?token=wrong')).status).toBe(403);
    expect((await req('GET', `/w/fresh/setup?token=${token}`)).status).toBe(200);
    expect((await req('GET', '/w/fresh/ui/api/session')).body.data).toEqual({ signedIn: false, setupNeeded: true });

    const wrong = await req('POST', '/w/fresh/ui/api/setup', {
      body: { token: `${token.slice(0, -1)}x`, email: 'boss@fresh.test', password: 'long enough pw' },
    });
    expect(wrong.status).toBe(403);
    expect(wrong.body.code).toBe('setup_unavailable');
    // A refused email does not burn the link.
    const bad = await req('POST', '/w/fresh/ui/api/setup', { body: { token, email: 'not-an-email', password: 'long enough pw' } });
    expect(bad.status).toBe(400);

    const ok = await req('POST', '/w/fresh/ui/api/setup', { body: { token, email: 'boss@fresh.test', password: 'long enough pw' } });
    expect(ok.status).toBe(201);
    expect(ok.body.data.user).toMatchObject({ email: 'boss@fresh.test', role: 'admin' });
    expect(setCookie(ok)).toContain('Path=/w/fresh;');

    const again = await req('POST', '/w/fresh/ui/api/setup', { body: { token, email: 'second@fresh.test', password: 'long enough pw' } });
    expect(again.status).toBe(403);
    const page = await req('GET', `/w/fresh/setup?token=${token}`);
    expect(page.status).toBe(302);
    // The old link's holder is told it was used (the login page reads `setup=used`).
    expect(page.headers.location).toBe('/w/fresh/login?setup=used');
    expect(await issueSetupToken(h.svc.db, 'fresh')).toBeNull();
    expect((await req('POST', '/w/fresh/ui/api/login', { body: { email: 'boss@fresh.test', password: 'long enough pw' } })).status).toBe(
      200,
    );
  });
});
