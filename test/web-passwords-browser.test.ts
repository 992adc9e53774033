// Passwords in the web app, in Debian Chromium (test/support/browser.ts): "change my password"
// on the Account page (current + new + confirm; other sessions end), an admin's "Reset
// password" on the Users page giving a one-time link, and that link's page setting the
// password once. The endpoints' refusals are checked through inject as well.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, type BrowserHarness, poll, signInAt, startBrowserHarness } from './support/browser.ts';
import type { Harness } from './support/harness.ts';

const READER = 'reader@acme.test';

let w: BrowserHarness;
let h: Harness, base: string, browser: Browser, page: Page;
let pageErrors: string[];

const signIn = (p: Page, email: string, password: string) => signInAt(base, p, { email, password });

beforeAll(async () => {
  w = await startBrowserHarness({ context: { viewport: { width: 1280, height: 900 } } });
  ({ h, base, browser, page, pageErrors } = w);
}, 120_000);

afterAll(async () => {
  await w?.close();
});

describe('change my password', () => {
  it('needs the current password, then changes it and signs out the other sessions', async () => {
    const other = await browser.newContext();
    const otherPage = await other.newPage();
    await signIn(otherPage, ADMIN.email, ADMIN.password);
    await signIn(page, ADMIN.email, ADMIN.password);

    await page.goto(`${base}/settings/account`);
    await page.getByRole('link', { name: 'Account' }).waitFor();
    await page.getByLabel('Current password').fill('wrong password');
    await page.getByLabel('New password', { exact: true }).fill('a better password');
    await page.getByLabel('Confirm new password').fill('a better password');
    await page.getByRole('button', { name: 'Change password' }).click();
    await poll(() => page.getByRole('alert').textContent()).toContain('current password is wrong');

    await page.getByLabel('Current password').fill(ADMIN.password);
    await page.getByRole('button', { name: 'Change password' }).click();
    await poll(() => page.getByRole('status').textContent()).toContain('Password changed');

    // This session lives on; the other browser's is gone.
    await page.goto(`${base}/settings/api-keys`);
    expect(new URL(page.url()).pathname).toBe('/settings/api-keys');
    await otherPage.goto(`${base}/settings/api-keys`);
    expect(new URL(otherPage.url()).pathname).toBe('/login');
    await other.close();
  });
});

describe('admin reset link', () => {
  let link = '';

  it('the users page gives a one-time link', async () => {
    await page.goto(`${base}/settings/users`);
    await page.getByRole('button', { name: `Reset password of ${READER}` }).click();
    await poll(() => page.getByTestId('password-link').isVisible()).toBe(true);
    link = (await page.getByTestId('password-link').textContent()) ?? '';
    expect(link).toMatch(new RegExp(`^${base}/set-password\\?token=[A-Za-z0-9_-]{43}$`));
  });

  it('the link sets the password once, and the user signs in with it', async () => {
    const ctx = await browser.newContext();
    const p = await ctx.newPage();
    await p.goto(link);
    await p.getByRole('heading', { name: 'Set your password' }).waitFor();
    // The token leaves the address bar.
    await poll(() => new URL(p.url()).search).toBe('');
    await p.getByLabel('New password').fill('reader secret 2');
    await p.getByLabel('Confirm password').fill('reader secret 2');
    await p.getByRole('button', { name: 'Set password' }).click();
    await poll(() => p.getByRole('heading', { name: 'Password set' }).isVisible()).toBe(true);
    await p.getByRole('link', { name: 'Sign in' }).click();
    await signIn(p, READER, 'reader secret 2');
    expect(new URL(p.url()).pathname).toBe('/');

    await p.goto(link);
    await poll(() => p.getByRole('heading', { name: 'Password link not valid' }).isVisible()).toBe(true);
    await ctx.close();
  });

  it('refuses readers, unknown users and other workspaces', async () => {
    const readerLogin = await h.app.inject({
      method: 'POST',
      url: '/ui/api/login',
      payload: { email: READER, password: 'reader secret 2' },
    });
    const cookie = /dbq_session=[^;]+/.exec(String(readerLogin.headers['set-cookie']))![0];
    const csrf = readerLogin.json().data.csrfToken;
    const users = await h.svc.db.selectFrom('users').select(['id', 'email']).execute();
    const adminId = users.find((u) => u.email === ADMIN.email)!.id;
    const asReader = await h.app.inject({
      method: 'POST',
      url: `/ui/api/users/${adminId}/password-link`,
      headers: { cookie, 'x-csrf-token': csrf, 'content-type': 'application/json' },
      payload: {},
    });
    expect(asReader.statusCode).toBe(403);
    const noCsrf = await h.app.inject({
      method: 'POST',
      url: '/ui/api/password',
      headers: { cookie, 'content-type': 'application/json' },
      payload: { currentPassword: 'reader secret 2', newPassword: 'whatever123' },
    });
    expect(noCsrf.statusCode).toBe(403);
    const tooShort = await h.app.inject({
      method: 'POST',
      url: '/ui/api/password',
      headers: { cookie, 'x-csrf-token': csrf, 'content-type': 'application/json' },
      payload: { currentPassword: 'reader secret 2', newPassword: 'short' },
    });
    expect(tooShort.statusCode).toBe(400);
    expect(pageErrors).toEqual([]);
  });
});
