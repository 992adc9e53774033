// "A newcomer's first hour" in a real browser (Debian Chromium via playwright-core): refusals
// that say why, the schema browser, banners that no longer contradict each other, removing a
// revoked key, the editor's completion popup and label, charts with several series, and the
// connections table at phone width. Screenshots as in web-browser.test.ts.
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
let pageErrors: string[];

const watch = (p: Page) => w.watch(p);
const signIn = (p: Page, who: Credentials) => signInAt(base, p, who);

async function openConsole(p: Page): Promise<void> {
  await p.goto(`${base}/`);
  await p.getByLabel('Connection').selectOption({ label: 'sample (sqlite)' });
}

beforeAll(async () => {
  w = await startBrowserHarness({ context: { viewport: { width: 1280, height: 800 }, acceptDownloads: true }, withReaderAndSample: true });
  ({ h, base, browser, admin, page, pageErrors } = w);
  await signIn(page, ADMIN);
}, 120_000);

afterAll(async () => {
  await w?.close();
});

describe('console', () => {
  it('shows why a statement was refused, not only "Insufficient permissions"', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const reader = await ctx.newPage();
      watch(reader);
      await signIn(reader, READER);
      await openConsole(reader);
      await setSql(reader, 'DELETE FROM orders WHERE id = 1');
      await reader.getByRole('button', { name: 'Run' }).click();
      const alert = reader.getByRole('alert');
      await poll(() => alert.textContent()).toContain('Insufficient permissions');
      const text = (await alert.textContent()) ?? '';
      expect(text).toContain('read statements only');
      expect(text).toContain('statement: DELETE');
      await shot(reader, 'console-refusal-reason');
    } finally {
      await ctx.close();
    }
  });

  it('browses the schema beside the editor and inserts names at the cursor', async () => {
    await openConsole(page);
    const browserPanel = page.getByRole('complementary', { name: 'Schema' });
    const customers = browserPanel.getByRole('button', { name: 'customers', exact: true });
    await poll(() => customers.isVisible()).toBe(true);
    await browserPanel.getByRole('button', { name: 'Show columns of customers' }).click();
    const column = browserPanel.getByRole('button', { name: 'country', exact: true });
    await poll(() => column.isVisible()).toBe(true);
    // Each column shows its declared type.
    expect(await browserPanel.locator('.schema-columns li').filter({ hasText: 'country' }).locator('.schema-type').textContent()).not.toBe(
      '',
    );
    await setSql(page, 'SELECT  FROM ');
    await page.keyboard.press('End');
    await customers.click();
    await page.keyboard.press('Home');
    for (let i = 0; i < 'SELECT '.length; i++) await page.keyboard.press('ArrowRight');
    await column.click();
    await poll(() => page.getByRole('textbox', { name: 'SQL' }).innerText()).toBe('SELECT country FROM customers');
    await shot(page, 'console-schema-browser');
  });

  it('closes the completion popup on Run, draws no icon boxes, and keeps the SQL label off the text', async () => {
    await setSql(page, 'SELECT * FROM custo');
    await page.keyboard.press('Control+Space');
    const option = page.getByRole('option', { name: /customers/ }).first();
    await poll(() => option.isVisible()).toBe(true);
    expect(await page.locator('.cm-tooltip-autocomplete .cm-completionIcon').count()).toBe(0);
    await page.keyboard.press('Control+Enter');
    await poll(() => page.locator('.cm-tooltip-autocomplete').count()).toBe(0);

    await setSql(page, `SELECT ${Array.from({ length: 30 }, (_, i) => `column_${i}`).join(', ')} FROM customers`);
    // Browser-side code as a string: the test project has no DOM types.
    const overlap = await page.evaluate(`(() => {
      const label = document.querySelector('.editor-label').getBoundingClientRect();
      const range = document.createRange();
      range.selectNodeContents(document.querySelector('.cm-line'));
      const first = range.getClientRects()[0];
      return first.right > label.left && first.top < label.bottom;
    })()`);
    expect(overlap).toBe(false);
  });

  it('clears the previous query error when Generate SQL replaces the editor text', async () => {
    await setSql(page, 'SELECT nope FROM orders');
    await page.keyboard.press('Control+Enter');
    const error = page.locator('.results').getByRole('alert');
    await poll(() => error.textContent()).toMatch(/no such column: nope/);
    await page.getByLabel('Ask').fill('top 5 customers by revenue');
    await page.getByRole('button', { name: 'Generate SQL' }).click();
    await poll(() => page.getByTestId('ask-message').isVisible(), 30_000).toBe(true);
    expect(await error.count()).toBe(0);
  });

  it('charts several numeric columns as series, axis labels inside an 800-px-high window', async () => {
    await setSql(
      page,
      `SELECT c.country, SUM(o.total) AS revenue, COUNT(*) * 100 AS orders_x100
FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.country ORDER BY revenue DESC`,
    );
    await page.keyboard.press('Control+Enter');
    await poll(() => page.getByRole('columnheader', { name: /orders_x100/ }).isVisible()).toBe(true);
    await page.getByRole('button', { name: 'Chart' }).click();
    await page.getByRole('checkbox', { name: 'orders_x100' }).check();
    const svg = page.locator('svg.chart-svg');
    await poll(() => svg.getAttribute('aria-label')).toBe('Bar chart of revenue, orders_x100 by country');
    const perSeries = await svg.locator('g.series').evaluateAll((gs) => gs.map((g) => g.querySelectorAll('rect.bar').length));
    expect(perSeries.length).toBe(2);
    expect(perSeries[0]).toBeGreaterThan(1);
    expect(perSeries[1]).toBe(perSeries[0]);
    await svg.scrollIntoViewIfNeeded();
    const box = (await svg.boundingBox())!;
    expect(box.height).toBeLessThanOrEqual(800);
    // The x-axis title, the lowest text, is inside the window once the chart is scrolled to.
    const title = (await svg.locator('text.axis-title').first().boundingBox())!;
    expect(title.y + title.height).toBeLessThanOrEqual(800);
    await shot(page, 'console-chart-series');
    await page.getByLabel('Chart type').selectOption('line');
    await poll(() => svg.locator('polyline.line').count()).toBe(2);
    await page.getByRole('button', { name: 'Table' }).click();
  });
});

describe('banners', () => {
  it('drops the green API key card when the next create is refused', async () => {
    await page.goto(`${base}/settings/api-keys`);
    await page.getByRole('button', { name: 'Create API key' }).click();
    await page.getByLabel('Name').fill('first-key');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await poll(() => page.getByText('This key will not be shown again').isVisible()).toBe(true);
    await page.getByRole('button', { name: 'Create API key' }).click();
    await page.getByLabel('Name').fill('   ');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await poll(() => page.getByRole('alert').isVisible()).toBe(true);
    expect(await page.getByText('This key will not be shown again').count()).toBe(0);
  });

  it('drops a green connection test result when saving is refused', async () => {
    await page.goto(`${base}/settings/connections`);
    await page.getByRole('button', { name: 'Add connection' }).click();
    await page.getByLabel('Name').fill('sample');
    await page.getByLabel('Engine').selectOption('sqlite');
    await page.getByLabel('Database file').fill('sample.db');
    await page.getByRole('button', { name: 'Test settings' }).click();
    const form = page.locator('form.conn-form');
    await poll(() => form.textContent()).toMatch(/✓/);
    await page.getByRole('button', { name: 'Save' }).click();
    await poll(() => form.getByRole('alert').isVisible()).toBe(true);
    expect(await form.textContent()).not.toMatch(/✓/);
    await page.getByRole('button', { name: 'Cancel' }).click();
  });

  it('drops "passwords differ" once a password is edited, and states the 8-character minimum', async () => {
    await createWorkspace(h.svc.db, { slug: 'newbie' });
    const token = (await issueSetupToken(h.svc.db, 'newbie'))!;
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const p = await ctx.newPage();
      watch(p);
      await p.goto(`${base}/w/newbie/setup?token=${token}`);
      await p.waitForURL(`${base}/w/newbie/setup`);
      await poll(() => p.getByText('At least 8 characters.').isVisible()).toBe(true);
      await p.getByLabel('Email').fill('boss@newbie.test');
      await p.getByLabel('Password', { exact: true }).fill('long enough 1');
      await p.getByLabel('Confirm password').fill('long enough 2');
      await p.getByRole('button', { name: 'Create admin' }).click();
      await poll(() => p.getByRole('alert').textContent()).toBe('The two passwords differ');
      await p.getByLabel('Password', { exact: true }).fill('short');
      expect(await p.getByText('The two passwords differ').count()).toBe(0);
      await shot(p, 'setup-password-hint');
    } finally {
      await ctx.close();
    }
  });
});

describe('revoked API keys', () => {
  it('keeps the actions column for revoked keys and removes them from the list', async () => {
    await page.goto(`${base}/settings/api-keys`);
    await page.getByRole('button', { name: 'Create API key' }).click();
    await page.getByLabel('Name').fill('old-key');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    const row = page.getByRole('row', { name: /old-key/ });
    await poll(() => row.isVisible()).toBe(true);
    const id = await page.evaluate(async () => {
      const res = await fetch('/ui/api/keys');
      return ((await res.json()) as { data: { apiKeys: { id: string; name: string }[] } }).data.apiKeys.find((k) => k.name === 'old-key')!
        .id;
    });
    // An active key cannot be removed: revocation comes first.
    const csrf = await page.evaluate(
      async () => ((await (await fetch('/ui/api/session')).json()) as { data: { csrfToken: string } }).data.csrfToken,
    );
    const refused = await page.evaluate(
      async ([keyId, token]) => (await fetch(`/ui/api/keys/${keyId}`, { method: 'DELETE', headers: { 'x-csrf-token': token! } })).status,
      [id, csrf],
    );
    expect(refused).toBe(409);

    await row.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await poll(() => row.getByText('Revoked').isVisible()).toBe(true);
    // Every row still has its actions cell, so the columns line up.
    const cells = await page.locator('table.data tbody tr').evaluateAll((rows) => rows.map((r) => r.querySelectorAll('td').length));
    expect(new Set(cells).size).toBe(1);
    await shot(page, 'api-keys-revoked-remove');
    await row.getByRole('button', { name: 'Remove' }).click();
    const dialog = page.getByRole('dialog', { name: 'Remove revoked key?' });
    await poll(() => dialog.isVisible()).toBe(true);
    await dialog.getByRole('button', { name: 'Remove' }).click();
    await poll(() => row.count()).toBe(0);
    const gone = await h.svc.db.selectFrom('api_keys').select('id').where('id', '=', id).executeTakeFirst();
    expect(gone).toBeUndefined();
  });
});

describe('phone width', () => {
  it('scrolls the connections table sideways at 390 px instead of cutting columns off', async () => {
    const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    try {
      await ctx.addCookies(await admin.cookies());
      const p = await ctx.newPage();
      watch(p);
      await p.goto(`${base}/settings/connections`);
      const test = p.getByRole('row', { name: /sample/ }).getByRole('button', { name: 'Test' });
      await poll(() => test.count()).toBe(1);
      // The page itself does not get wider than the screen; the table scrolls in its box.
      expect(await p.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
      await shot(p, 'connections-phone');
      await test.scrollIntoViewIfNeeded();
      const box = (await test.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(390);
      await shot(p, 'connections-phone-scrolled');
      await test.click();
      await poll(() => p.getByRole('row', { name: /sample/ }).textContent()).toMatch(/✓ \d+ ms/);
    } finally {
      await ctx.close();
    }
  });

  it('logged no script errors or CSP violations', () => {
    expect(pageErrors).toEqual([]);
  });
});
