// The Tools page in a real browser: an admin defines a curated tool in the page, a reader
// (signed in separately) finds it, fills the form generated from its parameters and runs it,
// the result lands in the console's table, and the run is in history as source `ui` with the
// tool's name and version. Screenshot: docs/screenshots/tools.png with DBQ_WEB_SCREENSHOTS=1.
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, type BrowserHarness, poll, READER, shot, signInAt, startBrowserHarness } from './support/browser.ts';

let w: BrowserHarness;
let reader: BrowserContext;

beforeAll(async () => {
  w = await startBrowserHarness({ context: { viewport: { width: 1280, height: 900 } }, withReaderAndSample: true });
  reader = await w.browser.newContext({ viewport: { width: 1280, height: 900 } });
}, 120_000);

afterAll(async () => {
  await reader?.close();
  await w?.close();
});

const DEFINITION = {
  name: 'products_under',
  description: 'Products cheaper than a price, cheapest first',
  connectionId: 'sample',
  sql: 'SELECT name, price FROM products WHERE price < :max_price AND name LIKE :name_like ORDER BY price, name',
  parameters: [
    { name: 'max_price', type: 'number', required: true, min: 0, description: 'Upper price bound' },
    { name: 'name_like', type: 'string', default: '%', maxLength: 50 },
  ],
  maxRows: 20,
};

describe('Tools page', () => {
  it('an admin creates a tool in the page', async () => {
    const page = w.page;
    await signInAt(w.base, page, ADMIN, '/login?next=%2Ftools');
    await page.waitForURL(`${w.base}/tools`);
    await page.getByRole('button', { name: 'New tool' }).click();
    // The editor is a form; a whole definition is pasted in its JSON view.
    await page.getByRole('button', { name: 'Edit as JSON' }).click();
    await page.getByLabel('Definition (JSON)').fill(JSON.stringify(DEFINITION, null, 2));
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await poll(() => page.getByText('products_under').first().isVisible()).toBe(true);
    const audit = await w.h.svc.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'tool.created')
      .where('target_name', '=', 'products_under')
      .execute();
    expect(audit).toMatchObject([{ source: 'ui', actor_email: ADMIN.email }]);
  });

  it('a reader runs it from the generated form and sees the rows in the result table', async () => {
    const page: Page = await reader.newPage();
    w.watch(page);
    await signInAt(w.base, page, READER, '/login?next=%2Ftools');
    await page.waitForURL(`${w.base}/tools`);
    await poll(() => page.getByText('Products cheaper than a price').isVisible()).toBe(true);
    // Readers run tools; they do not define them.
    expect(await page.getByRole('button', { name: 'New tool' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Run…' }).click();
    await page.getByLabel(/max_price/).fill('30');
    await page.getByRole('form', { name: 'Run products_under' }).getByRole('button', { name: 'Run' }).click();
    await poll(() => page.getByRole('status').first().textContent()).toMatch(/\d+ rows?.*version 1/);
    const status = await page.getByRole('status').first().textContent();
    expect(Number(/(\d+) row/.exec(status ?? '')?.[1])).toBeGreaterThan(0);
    await shot(page, 'tools');
    const history = await w.h.svc.db.selectFrom('query_history').selectAll().where('tool_name', '=', 'products_under').execute();
    expect(history).toMatchObject([{ source: 'ui', tool_version: 1, status: 'succeeded' }]);

    // A bad value is refused naming the parameter, and nothing runs.
    await page.getByLabel(/max_price/).fill('-1');
    await page.getByRole('form', { name: 'Run products_under' }).getByRole('button', { name: 'Run' }).click();
    await poll(() => page.getByRole('alert').first().textContent()).toMatch(/params\.max_price/);
    expect((await w.h.svc.db.selectFrom('query_history').selectAll().where('tool_name', '=', 'products_under').execute()).length).toBe(1);
    expect(w.pageErrors).toEqual([]);
  });
});
