// What a newcomer still stumbled on, in a real browser (Debian Chromium via playwright-core):
// the console on a 390-px phone (nothing wider than the screen, a short navigation, a bounded
// history, legible chart labels), a failed Ask that goes away on the next run, the empty
// schema panel, whole result headers and "No rows", whole-number chart ticks, the tool
// editor's form, the key form's pickers, tool runs named in history, the audit page's size,
// the words a reader sees, and an old setup link. Every page touched is shot at 1280×800 and
// 390×844 (docs/screenshots/ with DBQ_WEB_SCREENSHOTS=1).
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, type BrowserHarness, poll, READER, setSql, shot, signInAt, startBrowserHarness } from './support/browser.ts';

let w: BrowserHarness;
let base: string, page: Page;
let reader: BrowserContext, readerPage: Page;

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

/** Shoots the page at both sizes and holds the phone layout to the screen's width. */
async function bothSizes(p: Page, name: string, settle?: () => Promise<void>): Promise<void> {
  await p.setViewportSize(DESKTOP);
  await settle?.();
  await shot(p, `${name}-1280`);
  await p.setViewportSize(PHONE);
  await settle?.();
  await poll(() => p.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(PHONE.width);
  await shot(p, `${name}-390`);
  await p.setViewportSize(DESKTOP);
}

const scrollWidth = (p: Page) => p.evaluate('document.documentElement.scrollWidth') as Promise<number>;

async function openConsole(p: Page): Promise<void> {
  await p.goto(`${base}/`);
  await p.getByLabel('Connection').selectOption({ label: 'sample (sqlite)' });
}

async function run(p: Page, sql: string): Promise<void> {
  await setSql(p, sql);
  await p.getByRole('button', { name: 'Run', exact: true }).click();
}

beforeAll(async () => {
  w = await startBrowserHarness({ context: { viewport: DESKTOP }, withReaderAndSample: true });
  ({ base, page } = w);
  await signInAt(base, page, ADMIN);
  reader = await w.browser.newContext({ viewport: DESKTOP });
  readerPage = await reader.newPage();
  w.watch(readerPage);
  await signInAt(base, readerPage, READER);
}, 120_000);

afterAll(async () => {
  await reader?.close();
  await w?.close();
});

describe('console at 390 px', () => {
  it('fits the screen: Generate SQL inside its card, a short navigation, a bounded history', async () => {
    await page.setViewportSize(PHONE);
    await openConsole(page);
    // More history entries than the panel shows at once.
    for (let i = 0; i < 8; i++) await run(page, `SELECT ${i} AS n`);
    await poll(() => page.locator('.history-list li').count()).toBeGreaterThanOrEqual(8);
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width);
    const ask = (await page.locator('form.ask').boundingBox())!;
    const button = (await page.getByRole('button', { name: 'Generate SQL' }).boundingBox())!;
    expect(button.x + button.width).toBeLessThanOrEqual(ask.x + ask.width);
    const header = (await page.locator('header.topbar').boundingBox())!;
    expect(header.height).toBeLessThanOrEqual(100);
    const history = (await page.locator('aside.history').boundingBox())!;
    expect(history.height).toBeLessThanOrEqual(400);
    await bothSizes(page, 'console');
  });

  it('draws chart labels at a legible size on a phone, with whole-number ticks for counts', async () => {
    await page.setViewportSize(PHONE);
    await run(
      page,
      'SELECT c.country, COUNT(*) AS orders FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.country ORDER BY orders DESC LIMIT 3',
    );
    await poll(() => page.getByRole('columnheader', { name: /orders/ }).isVisible()).toBe(true);
    await page.getByRole('button', { name: 'Chart' }).click();
    const svg = page.locator('svg.chart-svg');
    await poll(() => svg.isVisible()).toBe(true);
    const tick = (await svg.locator('g.tick text').first().boundingBox())!;
    expect(tick.height).toBeGreaterThanOrEqual(9);
    const ticks = await svg.locator('g.tick text').allTextContents();
    expect(ticks.length).toBeGreaterThan(1);
    for (const t of ticks) expect(t).toMatch(/^\d+$/);
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width);
    await shot(page, 'console-chart-390');
    await page.setViewportSize(DESKTOP);
    await shot(page, 'console-chart-1280');
    await page.getByRole('button', { name: 'Table' }).click();
  });
});

describe('console results and messages', () => {
  it('drops a failed Ask once a later run succeeds', async () => {
    await page.route('**/ui/api/ai/generate', (route) =>
      route.fulfill({
        status: 422,
        contentType: 'application/json',
        body: JSON.stringify({ success: false, error: 'Could not generate SQL: the model is unavailable', code: 'generation_failed' }),
      }),
    );
    try {
      await openConsole(page);
      await page.getByLabel('Ask').fill('top customers');
      await page.getByRole('button', { name: 'Generate SQL' }).click();
      const message = page.getByTestId('ask-message');
      await poll(() => message.textContent()).toContain('model is unavailable');
      await run(page, 'SELECT 1 AS one');
      await poll(() => page.getByRole('columnheader', { name: /one/ }).isVisible()).toBe(true);
      expect(await message.count()).toBe(0);
    } finally {
      await page.unroute('**/ui/api/ai/generate');
    }
  });

  it('shows whole column names while the table has room, and "No rows" for an empty result', async () => {
    await run(page, 'SELECT c.country, SUM(o.total) AS revenue FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.country');
    const header = page.locator('table.grid th .col-name').filter({ hasText: 'revenue' });
    await poll(() => header.isVisible()).toBe(true);
    const cut = await header.evaluate((el) => el.scrollWidth > el.clientWidth);
    expect(cut).toBe(false);
    const grid = (await page.locator('table.grid').boundingBox())!;
    const scroller = (await page.locator('.grid-scroll').boundingBox())!;
    // The table fills its box (less the border) instead of leaving free width beside cut names.
    expect(grid.width).toBeGreaterThanOrEqual(scroller.width - 4);

    await run(page, 'SELECT id, country FROM customers WHERE 1 = 0');
    await poll(() => page.getByTestId('no-rows').textContent()).toContain('No rows');
    expect(await page.getByTestId('no-rows').textContent()).toContain('id, country');
    expect(await page.locator('table.grid').count()).toBe(0);
    await bothSizes(page, 'console-no-rows');
  });
});

describe('tools, keys and history', () => {
  it('defines a tool in the editor form, says what is wrong in words, and tries it after saving', async () => {
    await page.goto(`${base}/settings/tools`);
    // The other pages live under /settings; this guess lands on the Tools page.
    await page.waitForURL(`${base}/tools`);
    await page.getByRole('button', { name: 'New tool' }).click();
    const form = page.getByRole('form', { name: 'New tool' });
    await form.getByLabel('Name', { exact: true }).fill('orders_from');
    await form.getByLabel('Description', { exact: true }).fill('Orders of one country, biggest first');
    await form.getByRole('textbox', { name: 'SQL' }).click();
    await page.keyboard.insertText(
      'SELECT o.id, o.total, o.status FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.country = :country AND o.status = :status ORDER BY o.total DESC',
    );
    // The placeholders are marked in the editor.
    await poll(() => form.locator('.cm-param').allTextContents()).toEqual([':country', ':status']);
    // No connection chosen yet (the sample is the only one, so it is preselected): clear it.
    await form.getByLabel('Connection').selectOption('');
    await form.getByRole('button', { name: 'Save', exact: true }).click();
    await poll(() => form.getByRole('alert').textContent()).toBe('Connection: choose the database this tool queries.');
    await form.getByLabel('Connection').selectOption({ label: 'sample (sqlite)' });
    await form.getByRole('button', { name: 'Save', exact: true }).click();
    await poll(() => form.getByRole('alert').textContent()).toContain('SQL: :country has no parameter');
    await form.getByRole('button', { name: "Add the SQL's placeholders" }).click();
    const status = form.getByRole('group', { name: 'Parameter status' });
    await status.getByLabel('Type').selectOption('enum');
    const values = status.getByRole('group', { name: 'Values of status' });
    await values.getByLabel('Values of status 1').fill('paid');
    await values.getByRole('button', { name: 'Add value' }).click();
    await values.getByLabel('Values of status 2').fill('shipped');
    await status.getByLabel('Default').fill('paid');
    const country = form.getByRole('group', { name: 'Parameter country' });
    await country.getByLabel('Required').check();
    await country.getByLabel('Longest (characters)').fill('2');
    await bothSizes(page, 'tools-editor');
    await form.getByRole('button', { name: 'Save and try it' }).click();
    const run = page.getByRole('form', { name: 'Run orders_from' });
    await poll(() => run.isVisible()).toBe(true);
    const saved = await w.h.call('GET', '/api/tools/orders_from', w.h.adminKey);
    expect(saved.body.data.tool ?? saved.body.data).toMatchObject({
      parameters: [
        { name: 'country', type: 'string', required: true, maxLength: 2 },
        { name: 'status', type: 'enum', values: ['paid', 'shipped'], default: 'paid' },
      ],
    });
    await run.getByLabel(/country/).fill('US');
    await run.getByRole('button', { name: 'Run' }).click();
    await poll(() => page.getByRole('status').first().textContent()).toMatch(/version 1/);
  });

  it('words a server refusal by the form field it is about', async () => {
    await page.getByRole('button', { name: 'Edit' }).first().click();
    const form = page.getByRole('form', { name: /^Edit / });
    await form
      .getByRole('group', { name: /^Parameter / })
      .first()
      .getByLabel('Pattern (regular expression)')
      .fill('(');
    await form.getByRole('button', { name: 'Save', exact: true }).click();
    const alert = form.getByRole('alert');
    await poll(() => alert.textContent()).toMatch(/^Parameter 1 \(.*\): /);
    expect(await alert.textContent()).not.toContain('parameters[');
    await form.getByRole('button', { name: 'Cancel' }).click();
  });

  it('names the tool and its version for a tool run in the console history', async () => {
    await openConsole(page);
    const entry = page.locator('.history-item').filter({ hasText: 'orders_from' }).first();
    await poll(() => entry.locator('.history-tool').textContent()).toBe('Tool orders_from v1');
  });

  it("picks a key's tools from the workspace's tools, each with its connection", async () => {
    await page.goto(`${base}/settings/api-keys`);
    await page.getByRole('button', { name: 'Create API key' }).click();
    await page.getByLabel('Name', { exact: true }).fill('tool-agent');
    const tools = page.getByRole('group', { name: 'Tools' });
    await poll(() => tools.getByLabel(/orders_from/).isVisible()).toBe(true);
    expect(await tools.textContent()).toContain('on sample');
    await tools.getByLabel(/orders_from/).check();
    await bothSizes(page, 'api-keys-form');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await poll(() => page.getByText('This key will not be shown again').isVisible()).toBe(true);
    const keys = await w.h.call('GET', '/api/keys', w.h.adminKey);
    const key = (keys.body.data.apiKeys as { name: string; scope: unknown }[]).find((k) => k.name === 'tool-agent');
    expect(key?.scope).toMatchObject({ tools: ['orders_from'] });
  });
});

describe('what a reader sees', () => {
  it('says their role refused a write, not a key', async () => {
    await openConsole(readerPage);
    await run(readerPage, 'DELETE FROM orders WHERE id = 1');
    const alert = readerPage.locator('.results').getByRole('alert');
    await poll(() => alert.textContent()).toContain('your role (read-only) may run read statements only');
    expect(await alert.textContent()).not.toContain('key');
  });

  it("is shown what they may do on the connections page, not the admin's fixes", async () => {
    await w.h.svc.db.updateTable('connections').set({ read_only: 0 }).execute();
    await readerPage.goto(`${base}/settings/connections`);
    await poll(() => readerPage.getByTestId('reader-can').isVisible()).toBe(true);
    const text = await readerPage.locator('main').textContent();
    expect(text).not.toContain('read/write');
    expect(text).not.toContain('set-reader');
    expect(text).toContain('you: read');
    await bothSizes(readerPage, 'connections-reader');
  });

  it('on an empty workspace, the schema panel says there are no connections and whom to ask', async () => {
    await w.h.svc.db
      .deleteFrom('connection_grants')
      .execute()
      .catch(() => undefined);
    const ctx = await w.browser.newContext({ viewport: DESKTOP });
    try {
      const p = await ctx.newPage();
      w.watch(p);
      // A fresh workspace's admin, and a workspace with nothing in it.
      await w.h.svc.db.deleteFrom('connections').execute();
      await signInAt(base, p, ADMIN);
      await p.goto(`${base}/`);
      const panel = p.getByRole('complementary', { name: 'Schema' });
      await poll(() => panel.textContent()).toContain('No connections yet');
      await expect(panel.getByRole('link', { name: 'Add one' }).getAttribute('href')).resolves.toBe('/settings/connections');
      expect(await panel.textContent()).not.toContain('Loading');
      await bothSizes(p, 'console-no-connections');
      await readerPage.goto(`${base}/`);
      const readerPanel = readerPage.getByRole('complementary', { name: 'Schema' });
      await poll(() => readerPanel.textContent()).toContain('Ask an admin of workspace default');
    } finally {
      await ctx.close();
    }
  });
});

describe('pages around the console', () => {
  it('the audit page fits a phone and filters by action', async () => {
    await page.goto(`${base}/settings/audit`);
    await poll(() => page.locator('table.audit tbody tr').count()).toBeGreaterThan(0);
    await page.getByLabel('Action').selectOption('tool.created');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await poll(() => page.locator('table.audit tbody tr').count()).toBe(1);
    await bothSizes(page, 'audit');
  });

  it('an old setup link says it was used instead of landing on sign-in silently', async () => {
    const ctx = await w.browser.newContext({ viewport: DESKTOP });
    try {
      const p = await ctx.newPage();
      w.watch(p);
      await p.goto(`${base}/setup?token=an-old-one`);
      await p.waitForURL(`${base}/login?setup=used`);
      await poll(() => p.getByTestId('setup-used').textContent()).toContain('That setup link was already used or has expired');
      await bothSizes(p, 'login-setup-used');
    } finally {
      await ctx.close();
    }
  });

  it('logged no script errors', () => {
    expect(w.pageErrors).toEqual([]);
  });
});
