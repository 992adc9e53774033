// The web app in a real browser (Debian Chromium via playwright-core) against a real dbq on
// a random port: sign-in, API keys end to end (created in the page, used with fetch against
// /api, gone after reload, revoked → 401), the admins-only users page, connections, and the
// console (query, 10,000-row result, chart, CSV, history, Ask). Screenshots go to a temp dir,
// or to docs/screenshots/ with DBQ_WEB_SCREENSHOTS=1.
import fs from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueSetupToken } from '../src/workspaces/setup-token.ts';
import { createWorkspace } from '../src/workspaces/workspaces.ts';
import {
  ADMIN,
  type BrowserHarness,
  type Credentials,
  poll,
  READER,
  setSql,
  shot,
  signInAt,
  startBrowserHarness,
} from './support/browser.ts';
import type { Harness } from './support/harness.ts';

let w: BrowserHarness;
let h: Harness, base: string, browser: Browser, admin: BrowserContext, page: Page;
// Script errors and console errors (a CSP violation is one) across the whole run.
let pageErrors: string[];

const signIn = (p: Page, who: Credentials, at = '/login') => signInAt(base, p, who, at);

async function editorText(p: Page): Promise<string> {
  return p.getByRole('textbox', { name: 'SQL' }).innerText();
}

beforeAll(async () => {
  w = await startBrowserHarness({ context: { viewport: { width: 1280, height: 900 }, acceptDownloads: true }, withReaderAndSample: true });
  ({ h, base, browser, admin, page, pageErrors } = w);
}, 120_000);

afterAll(async () => {
  await w?.close();
});

describe('sign-in', () => {
  it('refuses wrong credentials with a message and no session', async () => {
    await page.goto(`${base}/`);
    await page.waitForURL(`${base}/login?next=%2F`);
    await poll(() => page.getByRole('heading', { name: 'Sign in' }).isVisible()).toBe(true);
    await shot(page, 'login');
    await page.getByLabel('Email').fill(ADMIN.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await poll(() => page.getByRole('alert').textContent()).toBe('Invalid email or password');
    expect(new URL(page.url()).pathname).toBe('/login');
    expect((await admin.cookies()).some((c) => c.name === 'dbq_session')).toBe(false);
  });

  it('signs in and lands on the page it came from, with an HttpOnly Lax cookie', async () => {
    await page.getByLabel('Password').fill(ADMIN.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/`);
    await poll(() => page.getByText(ADMIN.email).isVisible()).toBe(true);
    const cookie = (await admin.cookies()).find((c) => c.name === 'dbq_session')!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
    // HttpOnly: the page's own script cannot read it.
    expect(await page.evaluate('document.cookie')).not.toContain('dbq_session');
  });
});

describe('API keys', () => {
  let secret = '';

  it('creates a key shown once, which works against the API', async () => {
    await page.goto(`${base}/settings/api-keys`);
    await page.getByRole('button', { name: 'Create API key' }).click();
    await page.getByLabel('Name').fill('browser-key');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await poll(() => page.getByText('This key will not be shown again').isVisible()).toBe(true);
    secret = (await page.getByTestId('new-key-secret').textContent()) ?? '';
    expect(secret).toMatch(/^dbq_[0-9A-Za-z]{38}$/);
    await poll(() => page.getByRole('button', { name: 'Copy' }).isVisible()).toBe(true);
    await shot(page, 'api-keys');

    const res = await fetch(`${base}/api/connections`, { headers: { authorization: `Bearer ${secret}` } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { connections: { name: string }[] } };
    expect(body.data.connections.map((c) => c.name)).toContain('sample');
  });

  it('does not show the key again after a reload', async () => {
    await page.reload();
    await poll(() => page.getByRole('cell', { name: 'browser-key', exact: true }).isVisible()).toBe(true);
    expect(await page.content()).not.toContain(secret);
    expect(await page.getByText('This key will not be shown again').count()).toBe(0);
  });

  it('revokes the key after a confirmation, and the API refuses it', async () => {
    const row = page.getByRole('row', { name: /browser-key/ });
    await row.getByRole('button', { name: 'Revoke' }).click();
    const dialog = page.getByRole('dialog');
    await poll(() => dialog.isVisible()).toBe(true);
    await dialog.getByRole('button', { name: 'Revoke' }).click();
    await poll(() => row.getByText('Revoked').isVisible()).toBe(true);
    const res = await fetch(`${base}/api/connections`, { headers: { authorization: `Bearer ${secret}` } });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: string }).error).toBe('Invalid or missing API key');
  });
});

describe('users', () => {
  it('lets an admin create a user with a role, and disable and re-enable them', async () => {
    await page.goto(`${base}/settings/users`);
    await page.getByRole('button', { name: 'Add user' }).click();
    const form = page.getByRole('form', { name: 'New user' });
    await form.getByLabel('Email').fill('analyst@acme.test');
    await form.getByLabel('Role').selectOption('read_only');
    await form.getByLabel('Initial password').fill('analyst password');
    await form.getByRole('button', { name: 'Create user' }).click();
    const row = page.getByRole('row', { name: /analyst@acme\.test/ });
    await poll(() => row.isVisible()).toBe(true);
    await row.getByRole('combobox').selectOption('admin');
    await poll(() => page.getByRole('status').textContent()).toContain('is now Admin');
    await row.getByRole('button', { name: 'Disable' }).click();
    await poll(() => row.getByText('Disabled').isVisible()).toBe(true);
    await row.getByRole('button', { name: 'Enable' }).click();
    await poll(() => row.getByText('Active').isVisible()).toBe(true);
    await shot(page, 'users');
  });

  it('refuses a read-only user with a 403 page', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const reader = await ctx.newPage();
      reader.setDefaultTimeout(10_000);
      await signIn(reader, READER);
      const res = await reader.goto(`${base}/settings/users`);
      expect(res?.status()).toBe(403);
      await poll(() => reader.getByRole('heading', { name: 'Admins only' }).isVisible()).toBe(true);
      // No Users link for readers, and the JSON behind the page refuses them too.
      expect(await reader.getByRole('link', { name: 'Users' }).count()).toBe(0);
      const status = await reader.evaluate(async () => (await fetch('/ui/api/users')).status);
      expect(status).toBe(403);
    } finally {
      await ctx.close();
    }
  });
});

describe('connections', () => {
  it('lists and tests connections; admins can add one with a write-only password', async () => {
    await page.goto(`${base}/settings/connections`);
    const sample = page.getByRole('row', { name: /sample/ });
    await sample.getByRole('button', { name: 'Test' }).click();
    await poll(() => sample.textContent()).toMatch(/✓ \d+ ms · .*3\./);

    await page.getByRole('button', { name: 'Add connection' }).click();
    await page.getByLabel('Name').fill('warehouse');
    await page.getByLabel('Host').fill('127.0.0.1');
    await page.getByLabel('Port').fill('5432');
    await page.getByLabel('Database', { exact: true }).fill('test');
    await page.getByLabel('User').fill('postgres');
    await page.getByLabel('Password').fill('s3cret-pw');
    await page.getByRole('button', { name: 'Save' }).click();
    const row = page.getByRole('row', { name: /warehouse/ });
    await poll(() => row.isVisible()).toBe(true);
    expect(await page.content()).not.toContain('s3cret-pw');
    // PostgreSQL on this machine trusts local connections, so the test succeeds.
    await row.getByRole('button', { name: 'Test' }).click();
    await poll(() => row.textContent()).toMatch(/✓ \d+ ms · PostgreSQL/);
    // Its login is a superuser: the page says so, with the one command that fixes it; the
    // sample (SQLite, read-only handle) is not flagged.
    const warning = page.getByRole('status').filter({ hasText: 'Reads use a login that can do more than read' });
    await poll(() => warning.textContent()).toContain('dbq connection set-reader --workspace default --connection warehouse --create');
    expect(await warning.textContent()).not.toContain('sample');
    await row.getByRole('button', { name: 'Edit' }).click();
    expect(await page.getByLabel('Password').inputValue()).toBe('');
    expect(await page.getByLabel('Password').getAttribute('placeholder')).toBe('Leave blank to keep');
    await shot(page, 'connections');
    await page.getByRole('button', { name: 'Cancel' }).click();
  });
});

describe('console', () => {
  const REVENUE = `SELECT c.country, SUM(o.total) AS revenue, COUNT(*) AS orders
FROM orders o JOIN customers c ON c.id = o.customer_id
GROUP BY c.country ORDER BY revenue DESC`;

  it('runs a query on the sample database and shows its rows', async () => {
    await page.goto(`${base}/`);
    await page.getByLabel('Connection').selectOption({ label: 'sample (sqlite)' });
    await setSql(page, REVENUE);
    await page.getByRole('button', { name: 'Run' }).click();
    const grid = page.getByRole('table');
    await poll(() => grid.getByRole('columnheader', { name: /revenue/ }).isVisible()).toBe(true);
    expect(await grid.getByRole('row').count()).toBeGreaterThan(2);
    await poll(() => page.locator('.result-meta').textContent()).toMatch(/\d+ rows?\d+ ms/);
    await shot(page, 'console');
  });

  it('charts the result as SVG bars', async () => {
    await page.getByRole('button', { name: 'Chart' }).click();
    const svg = page.locator('svg.chart-svg');
    await poll(() => svg.locator('rect.bar').count()).toBeGreaterThan(1);
    expect(await svg.getAttribute('aria-label')).toBe('Bar chart of revenue by country');
    await shot(page, 'console-chart');
    await page.getByLabel('Chart type').selectOption('line');
    await poll(() => svg.locator('polyline.line').count()).toBe(1);
    await page.getByRole('button', { name: 'Table' }).click();
  });

  it('exports the result as CSV', async () => {
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
    const text = fs.readFileSync((await download.path())!, 'utf8');
    expect(text.split('\r\n')[0]).toBe('country,revenue,orders');
    expect(download.suggestedFilename()).toMatch(/^sample-.*\.csv$/);
  });

  it('runs with Ctrl+Enter, shows errors as the API message, and truncation', async () => {
    await setSql(page, 'SELECT nope FROM orders');
    await page.keyboard.press('Control+Enter');
    await poll(() => page.getByRole('alert').textContent()).toMatch(/no such column: nope/);

    await page.getByLabel('Row limit').selectOption('100');
    await setSql(page, 'SELECT * FROM order_items');
    await page.keyboard.press('Control+Enter');
    await poll(() => page.locator('.result-meta').textContent()).toContain('Truncated at 100 rows');
  });

  it('keeps a 10,000-row result fast by rendering only the rows in view', async () => {
    await page.getByLabel('Row limit').selectOption('10000');
    await setSql(
      page,
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000) SELECT i, i * 2 AS twice, printf('row %d', i) AS label FROM n",
    );
    const started = Date.now();
    await page.keyboard.press('Control+Enter');
    await poll(() => page.locator('.result-meta').textContent()).toMatch(/^10,000 rows/);
    expect(Date.now() - started).toBeLessThan(10_000);
    const rendered = await page.locator('table.grid tbody tr:not(.spacer)').count();
    expect(rendered).toBeLessThan(120);
    await page.locator('.grid-scroll').evaluate((el) => {
      el.scrollTop = el.scrollHeight;
    });
    await poll(() => page.getByRole('cell', { name: 'row 10000' }).isVisible()).toBe(true);
    expect(await page.locator('table.grid tbody tr:not(.spacer)').count()).toBeLessThan(120);
  });

  it('lists the queries in the history panel and loads one back into the editor', async () => {
    const history = page.getByRole('complementary', { name: 'History' });
    await history.getByRole('button', { name: 'Refresh' }).click();
    const item = history.getByRole('button', { name: /SUM\(o\.total\)/ }).first();
    await poll(() => item.isVisible()).toBe(true);
    await item.click();
    expect(await editorText(page)).toContain('GROUP BY c.country');
    const entries = (await page.evaluate(async () => {
      const res = await fetch('/ui/api/history?limit=50');
      return ((await res.json()) as { data: { entries: unknown[] } }).data.entries;
    })) as { source: string; apiKey: unknown }[];
    expect(entries.length).toBeGreaterThan(3);
    expect(entries.every((e) => e.source === 'ui' && e.apiKey === null)).toBe(true);
  });

  it('fills the editor from the Ask box', async () => {
    await setSql(page, '');
    await page.getByLabel('Ask').fill('top 5 customers by revenue');
    await page.getByRole('button', { name: 'Generate SQL' }).click();
    const message = page.getByTestId('ask-message');
    await poll(() => message.isVisible(), 30_000).toBe(true);
    expect(await message.getAttribute('class')).not.toContain('alert-error');
    await poll(() => editorText(page)).toMatch(/SELECT/i);
  });

  it('completes table names from the schema', async () => {
    await setSql(page, 'SELECT * FROM custo');
    await page.keyboard.press('Control+Space');
    const option = page.getByRole('option', { name: /customers/ }).first();
    await poll(() => option.isVisible()).toBe(true);
    await page.keyboard.press('Escape');
  });
});

describe('workspaces and sign-out', () => {
  it('serves the path form of a workspace and signs out', async () => {
    await page.goto(`${base}/w/default/settings/api-keys`);
    // The root session (Path=/) also covers /w/default: the same workspace.
    await poll(() => page.getByRole('heading', { name: 'API keys' }).isVisible()).toBe(true);
    expect(await page.getByRole('link', { name: 'Console' }).getAttribute('href')).toBe('/w/default/');
    await page.goto(`${base}/w/other/`);
    await page.waitForURL(/\/w\/other\/login\?next=/);
    await page.goto(`${base}/`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${base}/login`);
    await page.goto(`${base}/settings/api-keys`);
    await page.waitForURL(/\/login\?next=%2Fsettings%2Fapi-keys$/);
  });

  it('creates the first admin of an empty workspace from the setup link, once', async () => {
    await createWorkspace(h.svc.db, { slug: 'fresh' });
    const token = (await issueSetupToken(h.svc.db, 'fresh'))!;
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const p = await ctx.newPage();
      p.setDefaultTimeout(10_000);
      await p.goto(`${base}/w/fresh/login`);
      await poll(() => p.getByText('This workspace has no users yet').isVisible()).toBe(true);
      await p.goto(`${base}/w/fresh/setup?token=${token}`);
      // The token leaves the address bar as soon as the page has read it.
      await p.waitForURL(`${base}/w/fresh/setup`);
      await p.getByLabel('Email').fill('boss@fresh.test');
      await p.getByLabel('Password', { exact: true }).fill('boss password');
      await p.getByLabel('Confirm password').fill('boss password');
      await p.getByRole('button', { name: 'Create admin' }).click();
      await p.waitForURL(`${base}/w/fresh/`);
      await poll(() => p.getByText('boss@fresh.test').isVisible()).toBe(true);
      expect((await ctx.cookies()).find((c) => c.name === 'dbq_session')?.path).toBe('/w/fresh');
      // Setup is over: /setup sends to /login, which sends a signed-in user home.
      const again = await p.goto(`${base}/w/fresh/setup?token=${token}`);
      expect(again!.request().redirectedFrom()?.url()).toBe(`${base}/w/fresh/login`);
      expect(new URL(again!.url()).pathname).toBe('/w/fresh/');
    } finally {
      await ctx.close();
    }
  });

  it('logged no script errors or CSP violations', () => {
    expect(pageErrors).toEqual([]);
  });
});
