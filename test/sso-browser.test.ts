// Single sign-on through real Chromium against a real OpenID Connect provider (oidc-provider
// on a loopback port, test/support/oidc-test-provider.ts): the first sign-in creates the user
// with the default role, the second signs the same user in, other domains, unverified emails
// and disabled users are refused with a sentence on the sign-in page, a callback that does not
// belong to the browser's own flow (no flow cookie, wrong state), an ID token with another
// nonce and a provider answering for another issuer are refused (each for that reason, as the
// audit log says), and with password sign-in off the password is refused by the web page and
// the endpoint alike.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SsoClients } from '../src/sso/sso-clients.ts';
import { ADMIN, type BrowserHarness, poll, signInAt, startBrowserHarness } from './support/browser.ts';
import type { Harness } from './support/harness.ts';
import { startTestIdp, type TestIdp } from './support/oidc-test-provider.ts';

let w: BrowserHarness;
let h: Harness, base: string;
let idp: TestIdp;

const ACCOUNTS = {
  ana: { email: 'Ana@Acme.test', emailVerified: true },
  eve: { email: 'eve@elsewhere.test', emailVerified: true },
  uma: { email: 'uma@acme.test', emailVerified: false },
  dan: { email: 'dan@acme.test', emailVerified: true },
};

beforeAll(async () => {
  w = await startBrowserHarness({ context: { viewport: { width: 1280, height: 900 } } });
  ({ h, base } = w);
  // Only tests let an http issuer through (production insists on https).
  h.svc.sso = new SsoClients({ insecureHttpForTests: true, timeoutMs: 5_000 });
  idp = await startTestIdp({ redirectUris: [`${base}/sso/callback`], accounts: ACCOUNTS });
  const res = await fetch(`${base}/api/workspace/sso`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${h.adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      issuer: idp.issuer,
      clientId: idp.clientId,
      clientSecret: idp.clientSecret,
      allowedDomains: ['acme.test'],
      defaultRole: 'read_only',
    }),
  });
  expect(res.status).toBe(200);
}, 120_000);

afterAll(async () => {
  await w?.close();
  await idp?.close();
});

/** On the provider's pages: its development login (any name), then its consent page. */
async function atProvider(p: Page, login: string): Promise<void> {
  await p.waitForURL((u) => u.origin === idp.issuer);
  await p.locator('input[name="login"]').fill(login);
  await p.locator('input[name="password"]').fill('anything');
  await p.getByRole('button', { name: 'Sign-in' }).click();
  // The consent page on a first visit of this browser (the login page is gone by then).
  await p.getByRole('button', { name: 'Continue' }).click();
  await p.waitForURL((u) => u.origin === base && !u.pathname.startsWith('/sso'));
}

/** A fresh browser (no dbq or provider cookies), through the sign-in page's SSO button. */
async function ssoSignIn(login: string, from = '/login'): Promise<Page> {
  const ctx = await w.browser.newContext();
  const p = await ctx.newPage();
  w.watch(p);
  await p.goto(`${base}${from}`);
  await p.getByRole('link', { name: 'Sign in with SSO' }).click();
  await atProvider(p, login);
  return p;
}

async function setSso(issuer: string): Promise<void> {
  const res = await fetch(`${base}/api/workspace/sso`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${h.adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ issuer, clientId: idp.clientId, allowedDomains: ['acme.test'], defaultRole: 'read_only' }),
  });
  expect(res.status).toBe(200);
}

const userRows = (email: string) => h.svc.db.selectFrom('users').selectAll().where('email', '=', email).execute();
/** Why the last refused sign-in was refused, as the audit log tells an admin. */
const lastRefusal = async (): Promise<string> => JSON.parse((await auditOf('session.sign_in_failed')).at(-1)!.changes!).message;
const auditOf = (action: string) => h.svc.db.selectFrom('audit_log').selectAll().where('action', '=', action).orderBy('id').execute();

describe('single sign-on', () => {
  it('shows the redirect URI to register, and never the secret', async () => {
    const res = await fetch(`${base}/api/workspace/sso`, { headers: { authorization: `Bearer ${h.adminKey}` } });
    const body = (await res.json()) as { data: Record<string, unknown> };
    expect(body.data).toMatchObject({ configured: true, clientSecretSet: true, redirectUri: `${base}/sso/callback` });
    expect(JSON.stringify(body)).not.toContain(idp.clientSecret);
  });

  it('a first sign-in from an allowed domain creates the user with the default role', async () => {
    const p = await ssoSignIn('ana');
    expect(new URL(p.url()).pathname).toBe('/');
    await poll(() => p.locator('.topbar .email').textContent()).toBe('ana@acme.test');
    const rows = await userRows('ana@acme.test');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ role: 'read_only', password_hash: null, disabled_at: null });
    const created = (await auditOf('user.created')).filter((e) => e.target_name === 'ana@acme.test');
    expect(created).toHaveLength(1);
    expect(created[0].source).toBe('sso');
    expect(JSON.parse(created[0].changes!)).toEqual({ role: 'read_only', source: 'sso' });
    // The same cookie session as a password sign-in: the console's API answers it.
    const session = await p.evaluate(async (): Promise<any> => (await fetch('/ui/api/session')).json());
    expect(session.data).toMatchObject({ signedIn: true, user: { email: 'ana@acme.test', role: 'read_only' } });
    await p.context().close();
  });

  it('a second sign-in signs the same user in', async () => {
    const before = (await userRows('ana@acme.test'))[0];
    // Signed out on a page of the app: sign-in, then back to that page.
    const p = await ssoSignIn('ana', '/settings/account');
    expect(new URL(p.url()).pathname).toBe('/settings/account');
    await poll(() => p.locator('.topbar .email').textContent()).toBe('ana@acme.test');
    const rows = await userRows('ana@acme.test');
    expect(rows).toHaveLength(1);
    expect(rows[0].id).toBe(before.id);
    expect((await auditOf('user.created')).filter((e) => e.target_name === 'ana@acme.test')).toHaveLength(1);
    const signedIn = (await auditOf('session.signed_in')).filter((e) => e.target_name === 'ana@acme.test');
    expect(signedIn).toHaveLength(2);
    expect(signedIn.every((e) => e.source === 'sso')).toBe(true);
    await p.context().close();
  });

  it('an email of another domain is refused with a sentence, and nobody is created', async () => {
    const p = await ssoSignIn('eve');
    expect(new URL(p.url()).pathname).toBe('/login');
    await poll(() => p.getByTestId('sso-error').textContent()).toContain('Your email domain may not sign in to this workspace');
    expect(await userRows('eve@elsewhere.test')).toHaveLength(0);
    const failed = (await auditOf('session.sign_in_failed')).filter((e) => e.target_name === 'eve@elsewhere.test');
    expect(JSON.parse(failed[0].changes!)).toEqual({
      method: 'sso',
      reason: 'domain',
      message: 'Accounts of elsewhere.test may not sign in to this workspace',
    });
    await p.context().close();
  });

  it('an unverified email is refused, and nobody is created', async () => {
    const p = await ssoSignIn('uma');
    expect(new URL(p.url()).pathname).toBe('/login');
    await poll(() => p.getByTestId('sso-error').textContent()).toContain('has not verified your email address');
    expect(await userRows('uma@acme.test')).toHaveLength(0);
    await p.context().close();
  });

  it('a disabled user is refused', async () => {
    await h.svc.db.updateTable('users').set({ disabled_at: new Date().toISOString() }).where('email', '=', 'ana@acme.test').execute();
    const p = await ssoSignIn('ana');
    expect(new URL(p.url()).pathname).toBe('/login');
    await poll(() => p.getByTestId('sso-error').textContent()).toContain('Your account is disabled');
    await h.svc.db.updateTable('users').set({ disabled_at: null }).where('email', '=', 'ana@acme.test').execute();
    await p.context().close();
  });

  it("a callback without the browser's own flow, or with another state, signs nobody in", async () => {
    const ctx = await w.browser.newContext();
    const p = await ctx.newPage();
    await p.goto(`${base}/sso/callback?code=forged&state=forged`);
    expect(new URL(p.url()).pathname).toBe('/login');
    await poll(() => p.getByTestId('sso-error').textContent()).toContain('took too long or was started in another window');
    // A real flow started (its cookie set), answered with a state of someone else's.
    // The context's request client shares its cookie jar, so the flow cookie lands there.
    const started = await ctx.request.get(`${base}/sso/start`, { maxRedirects: 0 });
    expect(started.status()).toBe(302);
    const authorize = started.headers()['location'];
    expect(authorize).toContain('code_challenge_method=S256');
    const state = new URL(authorize).searchParams.get('state')!;
    expect(state.length).toBeGreaterThan(20);
    await p.goto(`${base}/sso/callback?code=forged&state=not-${state}&iss=${encodeURIComponent(idp.issuer)}`);
    expect(new URL(p.url()).pathname).toBe('/login');
    await poll(() => p.getByTestId('sso-error').textContent()).toContain('Single sign-on did not complete');
    expect(await lastRefusal()).toContain('unexpected "state" response parameter value');
    const session = await p.evaluate(async (): Promise<any> => (await fetch('/ui/api/session')).json());
    expect(session.data.signedIn).toBe(false);
    await ctx.close();
  });

  it('an ID token whose nonce is not the one this sign-in sent is refused', async () => {
    const ctx = await w.browser.newContext();
    const p = await ctx.newPage();
    const started = await ctx.request.get(`${base}/sso/start`, { maxRedirects: 0 });
    const authorize = started.headers()['location'];
    // The test holds the server's secret key: it re-seals the flow with another nonce, as an
    // ID token minted for some other sign-in would carry.
    const ws = await h.svc.db.selectFrom('workspaces').select('id').where('slug', '=', 'default').executeTakeFirstOrThrow();
    const cookie = (await ctx.cookies()).find((c) => c.name === 'dbq_sso')!;
    const flow = JSON.parse(h.svc.secretBox.open(cookie.value, `sso-flow:${ws.id}`));
    flow.nonce = 'a-nonce-of-another-sign-in';
    await ctx.addCookies([{ ...cookie, value: h.svc.secretBox.seal(JSON.stringify(flow), `sso-flow:${ws.id}`) }]);
    await p.goto(authorize);
    await atProvider(p, 'ana');
    expect(new URL(p.url()).pathname).toBe('/login');
    await poll(() => p.getByTestId('sso-error').textContent()).toContain('Single sign-on did not complete');
    expect(await lastRefusal()).toContain('unexpected ID Token "nonce" claim value');
    const session = await p.evaluate(async (): Promise<any> => (await fetch('/ui/api/session')).json());
    expect(session.data.signedIn).toBe(false);
    await ctx.close();
  });

  it('a provider answering for another issuer is refused', async () => {
    // Metadata that names this server as the issuer while the real provider signs the tokens
    // (and names itself in the answer's `iss`): what a stolen or misconfigured discovery gives.
    const proxy = http.createServer((req, res) => {
      void (async () => {
        if (req.url !== '/.well-known/openid-configuration') return void res.writeHead(404).end();
        const meta = (await (await fetch(`${idp.issuer}${req.url}`)).json()) as Record<string, unknown>;
        meta.issuer = proxyIssuer;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(meta));
      })();
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxyIssuer = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      await setSso(proxyIssuer);
      const ctx = await w.browser.newContext();
      const p = await ctx.newPage();
      await p.goto(`${base}/login`);
      await p.getByRole('link', { name: 'Sign in with SSO' }).click();
      await atProvider(p, 'ana');
      expect(new URL(p.url()).pathname).toBe('/login');
      await poll(() => p.getByTestId('sso-error').textContent()).toContain('Single sign-on did not complete');
      expect(await lastRefusal()).toContain('unexpected "iss" (issuer) response parameter value');
      await ctx.close();
    } finally {
      await setSso(idp.issuer);
      proxy.close();
    }
  });

  it('the admin turns password sign-in off on the settings page; passwords are then refused', async () => {
    const p = w.page;
    await signInAt(base, p, ADMIN);
    await p.goto(`${base}/settings/sso`);
    await poll(() => p.getByTestId('sso-redirect-uri').textContent()).toBe(`${base}/sso/callback`);
    await p.getByLabel('Password sign-in stays on').uncheck();
    await p.getByRole('button', { name: 'Save' }).click();
    await poll(() => p.getByRole('status').textContent()).toContain('Single sign-on saved');
    const configured = (await auditOf('sso.configured')).at(-1)!;
    expect(JSON.parse(configured.changes!)).toEqual({ passwordSignIn: { from: true, to: false } });
    expect(configured.changes).not.toContain(idp.clientSecret);

    // The sign-in page offers only SSO now.
    const ctx = await w.browser.newContext();
    const other = await ctx.newPage();
    await other.goto(`${base}/login`);
    await poll(() => other.getByTestId('password-sign-in-off').isVisible()).toBe(true);
    expect(await other.getByLabel('Password').count()).toBe(0);
    // And the endpoint refuses a correct password, before checking it.
    const refused = await other.evaluate(async (admin) => {
      const res = await fetch('/ui/api/login', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(admin),
      });
      return { status: res.status, body: (await res.json()) as any };
    }, ADMIN);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ success: false, code: 'password_sign_in_disabled' });
    expect(refused.body.error).toContain('Password sign-in is turned off');
    await ctx.close();

    // SSO still signs people in; a new one (dan) with the default role.
    const sso = await ssoSignIn('dan');
    await poll(() => sso.locator('.topbar .email').textContent()).toBe('dan@acme.test');
    await sso.context().close();
  });

  it('raised no script or CSP error on any page', () => {
    // The provider's development login pages ask for web fonts from the internet, which this
    // offline machine cannot resolve; that is theirs, not dbq's.
    expect(w.pageErrors.filter((e) => !e.includes('net::ERR_NAME_NOT_RESOLVED'))).toEqual([]);
  });
});
