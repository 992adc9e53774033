// After sign-in the web app follows `?next=`. The old check (starts with the workspace path,
// not `//`, no backslash or CR/LF) let `/login?next=%2F%09%2Fevil.example%2F` through: browsers
// drop tabs and newlines from a URL before resolving it, so `/<TAB>/evil.example/` became
// `//evil.example/` and the signed-in user was sent off-site. Now `next` is resolved the way a
// browser resolves it (WHATWG URL) against the workspace's origin and kept only when it stays
// on that origin and inside the workspace's path. The server (`GET /login` of a signed-in user)
// and the page (after the sign-in form) each apply the rule; both are held to one table here.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { safeNext } from '../src/console/routes/pages.ts';
import { hashPassword } from '../src/workspaces/passwords.ts';
import { safeNextTarget } from '../web/src/next-target.ts';
import { ensureWebBuild, launchChromium } from './support/browser.ts';
import { createHarness, type Harness } from './support/harness.ts';

const ORIGIN = 'http://localhost';

/** Values of `next` (decoded) that must never leave the workspace's home page. */
const ATTACKS: [string, string][] = [
  ['a tab between the slashes', '/\t/evil.example/'],
  ['a newline between the slashes', '/\n/evil.example/'],
  ['CR LF between the slashes', '/\r\n/evil.example/'],
  ['a backslash after the slash', '/\\evil.example'],
  ['a backslash then a slash', '/\\/evil.example'],
  ['two backslashes', '\\\\evil.example'],
  ['a protocol-relative URL', '//evil.example'],
  ['three slashes', '///evil.example/'],
  ['a dot segment that leaves a double slash', '/.//evil.example/'],
  ['a dot-dot segment that leaves a double slash', '/..//evil.example/'],
  ['an absolute https URL', 'https://evil.example/'],
  ['an absolute URL of the same host but another scheme', 'https://localhost/settings/users'],
  ['javascript:', 'javascript:alert(document.cookie)'],
  ['javascript: after a leading space', ' javascript:alert(1)'],
  ['encoded slashes (not a path)', '%2F%2Fevil.example'],
  ['a leading tab', '\t//evil.example'],
  ['a leading space', ' //evil.example'],
  ['data:', 'data:text/html,<script>alert(1)</script>'],
];

/** Same-origin paths whose odd characters a browser keeps encoded: safe to follow. */
const ODD_BUT_LOCAL: [string, string][] = [
  ['an encoded backslash', '/%5Cevil.example'],
  ['encoded slashes in a path', '/%2F%2Fevil.example'],
];

function expectLocal(location: string, base: string) {
  const url = new URL(location, ORIGIN);
  expect(url.origin).toBe(ORIGIN);
  expect(location.startsWith('//')).toBe(false);
  expect(location.startsWith(`${base}/`) || location === base).toBe(true);
}

describe.each([
  ['the server rule (GET /login)', (next: string | null, base: string) => safeNext(next, base, ORIGIN)],
  ['the page rule (web/src)', (next: string | null, base: string) => safeNextTarget(next, ORIGIN, base)],
])('%s', (_label, rule) => {
  for (const base of ['', '/w/other']) {
    const home = `${base}/`;
    it.each(ATTACKS)(`${base || 'root'}: %s goes home`, (_what, next) => {
      expect(rule(next, base)).toBe(home);
    });
    it.each(ODD_BUT_LOCAL)(`${base || 'root'}: %s stays on the origin, inside the workspace`, (_what, next) => {
      const target = rule(`${base}${next}`, base);
      expectLocal(target, base);
      expect(target).toBe(`${base}${next}`);
    });
    it(`${base || 'root'}: a page of the workspace is kept, with its query and fragment`, () => {
      expect(rule(`${base}/settings/users`, base)).toBe(`${base}/settings/users`);
      expect(rule(`${base}/?tab=history#top`, base)).toBe(`${base}/?tab=history#top`);
      expect(rule(null, base)).toBe(home);
      expect(rule('', base)).toBe(home);
    });
  }

  it('path form: a path outside /w/{slug}, or one that dot-segments out of it, goes home', () => {
    for (const next of ['/settings/users', '/w/otherx/', '/w/other/../../evil', '/w/other/%2e%2e/default/', '/w/default/settings/users']) {
      expect(rule(next, '/w/other')).toBe('/w/other/');
    }
  });
});

describe('GET /login of a signed-in user', () => {
  let h: Harness;
  let hosted: Harness;
  const cookies: Record<string, string> = {};

  const signIn = async (app: Harness['app'], url: string, email: string, host?: string) => {
    const res = await app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json', ...(host ? { host } : {}) },
      payload: JSON.stringify({ email, password: 'correct horse' }),
    });
    expect(res.statusCode, res.body).toBe(200);
    return /dbq_session=[^;]+/.exec(String(res.headers['set-cookie']))![0];
  };

  beforeAll(async () => {
    h = await createHarness();
    hosted = await createHarness({ DBQ_BASE_DOMAIN: 'dbq.test' });
    for (const x of [h, hosted]) {
      await x.svc.db
        .updateTable('users')
        .set({ password_hash: await hashPassword('correct horse') })
        .where('email', '=', 'admin@other.test')
        .execute();
    }
    cookies.root = await signIn(h.app, '/ui/api/login', 'admin@acme.test');
    cookies.path = await signIn(h.app, '/w/other/ui/api/login', 'admin@other.test');
    cookies.host = await signIn(hosted.app, '/ui/api/login', 'admin@other.test', 'other.dbq.test');
  });
  afterAll(async () => {
    await h?.close();
    await hosted?.close();
  });

  const location = async (app: Harness['app'], url: string, cookie: string, host?: string) => {
    const res = await app.inject({ method: 'GET', url, headers: { cookie, ...(host ? { host } : {}) } });
    expect(res.statusCode).toBe(302);
    return String(res.headers.location);
  };

  it('sends the reported attack (/login?next=%2F%09%2Fevil.example%2F) home', async () => {
    expect(await location(h.app, '/login?next=%2F%09%2Fevil.example%2F', cookies.root)).toBe('/');
  });

  for (const [form, base, cookie, app, host] of [
    ['root', '', 'root', () => h.app, undefined],
    ['path form', '/w/other', 'path', () => h.app, undefined],
    ['host form', '', 'host', () => hosted.app, 'other.dbq.test'],
  ] as const) {
    it(`${form}: every attack goes home; a page of the workspace is kept`, async () => {
      for (const [what, next] of ATTACKS) {
        const got = await location(app(), `${base}/login?next=${encodeURIComponent(next)}`, cookies[cookie], host);
        expect(got, what).toBe(`${base}/`);
      }
      for (const [, next] of ODD_BUT_LOCAL) {
        const got = await location(app(), `${base}/login?next=${encodeURIComponent(base + next)}`, cookies[cookie], host);
        expectLocal(got, base);
      }
      expect(await location(app(), `${base}/login?next=${encodeURIComponent(`${base}/settings/users`)}`, cookies[cookie], host)).toBe(
        `${base}/settings/users`,
      );
    });
  }

  it("host form: another workspace's host is another origin", async () => {
    for (const next of ['//default.dbq.test/', 'http://default.dbq.test/', '/\t/default.dbq.test/']) {
      expect(await location(hosted.app, `/login?next=${encodeURIComponent(next)}`, cookies.host, 'other.dbq.test')).toBe('/');
    }
  });
});

describe('the sign-in page in a real browser (Chromium)', () => {
  let h: Harness;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    await ensureWebBuild();
    h = await createHarness();
    await h.svc.db
      .updateTable('users')
      .set({ password_hash: await hashPassword('correct horse') })
      .where('email', '=', 'admin@other.test')
      .execute();
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  /** Signs in on `/login?next=…` and returns where the page then went. */
  async function landing(prefix: string, email: string, next: string): Promise<URL> {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(10_000);
      // Whatever leaves this origin is answered here, so an escape is seen, not a DNS wait.
      await context.route(
        (url) => url.origin !== base,
        (route) => route.fulfill({ status: 200, contentType: 'text/html', body: 'escaped' }),
      );
      await page.goto(`${base}${prefix}/login?next=${encodeURIComponent(next)}`);
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill('correct horse');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((u) => !u.pathname.endsWith('/login'));
      return new URL(page.url());
    } finally {
      await context.close();
    }
  }

  it('lands on the workspace home for the reported attack and its variants, on the page for a good next', async () => {
    for (const next of ['/\t/evil.example/', '/\\evil.example', '/.//evil.example/', 'https://evil.example/', 'javascript:alert(1)']) {
      const url = await landing('', 'admin@acme.test', next);
      expect(url.origin, next).toBe(base);
      expect(url.pathname, next).toBe('/');
    }
    const good = await landing('', 'admin@acme.test', '/settings/api-keys');
    expect(`${good.origin}${good.pathname}`).toBe(`${base}/settings/api-keys`);
  }, 60_000);

  it('path form: stays under /w/{slug}/', async () => {
    for (const next of ['/\t/evil.example/', '/settings/api-keys', '/w/other/../../settings/api-keys']) {
      const url = await landing('/w/other', 'admin@other.test', next);
      expect(url.origin, next).toBe(base);
      expect(url.pathname, next).toBe('/w/other/');
    }
  }, 60_000);
});
