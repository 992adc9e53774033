// The tool editor's "Try it" runs the definition being edited without saving it, in a real
// browser: a read answers its rows in the editor and stores no tool; a writing draft asks
// first, "Cancel" leaves the database and history as they were, "Run it" runs it once. Readers
// cannot try drafts (the console API refuses them, nothing runs).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, type BrowserHarness, poll, signInAt, startBrowserHarness } from './support/browser.ts';

let w: BrowserHarness;

beforeAll(async () => {
  w = await startBrowserHarness({ context: { viewport: { width: 1280, height: 900 } }, withReaderAndSample: true });
}, 120_000);

afterAll(async () => {
  await w?.close();
});

const READ_DRAFT = {
  name: 'cheap_products',
  description: 'Products cheaper than a price',
  connectionId: 'sample',
  sql: 'SELECT name, price FROM products WHERE price < :max_price ORDER BY price',
  parameters: [{ name: 'max_price', type: 'number', required: true, min: 0 }],
  maxRows: 20,
};

const WRITE_DRAFT = {
  name: 'drop_product',
  description: 'Deletes one product by name',
  connectionId: 'sample',
  sql: 'DELETE FROM products WHERE name = :name',
  parameters: [{ name: 'name', type: 'string', required: true }],
  maxRows: 1,
};

const productCount = async () => {
  const res = await w.h.call('POST', '/api/query', w.h.adminKey, { connectionId: 'sample', sql: 'SELECT count(*) AS n FROM products' });
  return (res.body as { data: { rows: unknown[][] } }).data.rows[0][0];
};
// The console's own runs (the product counts above go through the REST API, source `api`).
const historyCount = async () => (await w.h.svc.db.selectFrom('query_history').select('id').where('source', '=', 'ui').execute()).length;
const toolCount = async () => (await w.h.svc.db.selectFrom('curated_tools').select('id').execute()).length;

async function openDraft(definition: object): Promise<void> {
  const page = w.page;
  await page.goto(`${w.base}/tools`);
  await page.getByRole('button', { name: 'New tool' }).click();
  await page.getByRole('button', { name: 'Edit as JSON' }).click();
  await page.getByLabel('Definition (JSON)').fill(JSON.stringify(definition, null, 2));
  await page.getByRole('button', { name: 'Try it', exact: true }).click();
}

describe('Try it on an unsaved tool', () => {
  it('runs a read draft with the values given and saves nothing', async () => {
    await signInAt(w.base, w.page, ADMIN, '/login?next=%2Ftools');
    await w.page.waitForURL(`${w.base}/tools`);
    await openDraft(READ_DRAFT);
    const form = w.page.getByRole('form', { name: 'Try the unsaved tool' });
    await form.getByLabel(/max_price/).fill('30');
    await form.getByRole('button', { name: 'Run' }).click();
    await poll(() => form.getByRole('status').textContent()).toMatch(/\d+ rows?/);
    expect(await form.getByRole('table').count()).toBe(1);
    expect(await toolCount()).toBe(0);
    const entries = await w.h.svc.db.selectFrom('query_history').selectAll().where('source', '=', 'ui').execute();
    expect(entries).toMatchObject([{ status: 'succeeded', tool_name: null, statement_type: 'SELECT' }]);

    // A value the parameter refuses is said in words, and nothing runs.
    const before = await historyCount();
    await form.getByLabel(/max_price/).fill('-5');
    await form.getByRole('button', { name: 'Run' }).click();
    await poll(() => form.getByRole('alert').textContent()).toMatch(/max_price/);
    expect(await historyCount()).toBe(before);
  });

  it('asks before running a draft that writes; Cancel changes nothing, Run it runs it once', async () => {
    const page = w.page;
    await openDraft(WRITE_DRAFT);
    const products = await productCount();
    const history = await historyCount();
    const form = page.getByRole('form', { name: 'Try the unsaved tool' });
    await form.getByLabel(/name/).fill('no such product');
    await form.getByRole('button', { name: 'Run' }).click();
    const dialog = page.getByRole('dialog', { name: 'Run a statement that changes data?' });
    await poll(() => dialog.isVisible()).toBe(true);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await poll(() => form.getByRole('alert').textContent()).toMatch(/Not run: nothing was changed/);
    expect(await productCount()).toBe(products);
    expect(await historyCount()).toBe(history);

    await form.getByRole('button', { name: 'Run' }).click();
    await poll(() => dialog.isVisible()).toBe(true);
    await dialog.getByRole('button', { name: 'Run it' }).click();
    await poll(() => form.getByRole('status').textContent()).toMatch(/0 affected/);
    expect(await productCount()).toBe(products);
    const runs = await w.h.svc.db.selectFrom('query_history').selectAll().where('statement_type', '=', 'DELETE').execute();
    expect(runs).toMatchObject([{ status: 'succeeded', affected_rows: 0, source: 'ui' }]);
    expect(await toolCount()).toBe(0);
    expect(w.pageErrors).toEqual([]);
  });

  it('a reader may not try drafts: refused, nothing runs', async () => {
    const history = await historyCount();
    const ctx = await w.browser.newContext();
    try {
      const page = await ctx.newPage();
      await signInAt(w.base, page, { email: 'reader@acme.test', password: 'reader password' }, '/login?next=%2Ftools');
      await page.waitForURL(`${w.base}/tools`);
      const answer = await page.evaluate(async (draft) => {
        const me = (await (await fetch('ui/api/session')).json()) as { data: { csrfToken: string } };
        const res = await fetch('ui/api/tools/try', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-csrf-token': me.data.csrfToken },
          body: JSON.stringify({ tool: draft, params: { max_price: 30 } }),
        });
        return { status: res.status, body: (await res.json()) as { success: boolean } };
      }, READ_DRAFT);
      expect(answer.status).toBe(403);
      expect(answer.body.success).toBe(false);
    } finally {
      await ctx.close();
    }
    expect(await historyCount()).toBe(history);
  });
});
