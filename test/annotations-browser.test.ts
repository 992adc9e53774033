// The business-context editor beside the console's schema browser, in a real browser, on a
// PostgreSQL, a MariaDB and a SQLite connection: an admin writes a table and a column
// description, synonyms and an example, saves (a new version, audited with source ui, equal to
// what the API returns); a write example is refused naming it and nothing is stored; a reader
// sees the descriptions (the database's own comment where no annotation replaces it) and the
// example, and has no Edit button.
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workspaceSqliteDir } from './support/harness.ts';
import { ADMIN, type BrowserHarness, poll, READER, shot, signInAt, startBrowserHarness } from './support/browser.ts';

const SUFFIX = `${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
const DB = `dbq_annot_web_${SUFFIX}`;
const TABLE = 'CREATE TABLE orders (id INTEGER PRIMARY KEY, total DECIMAL(10,2), status VARCHAR(20))';

let w: BrowserHarness;
let reader: BrowserContext;
let readerPage: Page;
const ids: Record<string, string> = {};

beforeAll(async () => {
  w = await startBrowserHarness({ context: { viewport: { width: 1400, height: 1000 } }, withReaderAndSample: true });
  reader = await w.browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${DB}`);
  await admin.end();
  const p = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:5432/${DB}` });
  await p.connect();
  await p.query(TABLE);
  await p.query(`COMMENT ON COLUMN orders.status IS 'placed, shipped or cancelled'`);
  await p.end();
  const my = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root' });
  await my.query(`CREATE DATABASE ${DB}`);
  await my.query(`USE ${DB}`);
  await my.query(`${TABLE.slice(0, -1)} COMMENT 'placed, shipped or cancelled')`);
  await my.end();
  const lite = new Database(path.join(workspaceSqliteDir(w.h, 'default'), 'annot-web.db'));
  lite.exec(TABLE);
  lite.close();
  for (const [name, url] of [
    ['web-pg', `postgres://postgres@127.0.0.1:5432/${DB}`],
    ['web-my', `mysql://root@127.0.0.1:3306/${DB}`],
    ['web-lite', 'sqlite:annot-web.db'],
  ]) {
    const res = await w.h.call('POST', '/api/connections', w.h.adminKey, { name, url });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    ids[name] = res.body.data.connection.id;
  }
  await signInAt(w.base, w.page, ADMIN);
  readerPage = await reader.newPage();
  w.watch(readerPage);
  await signInAt(w.base, readerPage, READER);
}, 120_000);

afterAll(async () => {
  await reader?.close();
  await w?.close();
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  await admin.end();
  const my = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root' });
  await my.query(`DROP DATABASE IF EXISTS ${DB}`);
  await my.end();
});

async function pick(page: Page, connection: string): Promise<void> {
  await page.getByLabel('Connection').selectOption(ids[connection]);
  await poll(() => page.getByRole('heading', { name: 'Business context' }).isVisible()).toBe(true);
}

describe.each([
  ['web-pg', true],
  ['web-my', true],
  ['web-lite', false],
] as const)('%s', (connection, comments) => {
  it('an admin edits descriptions, synonyms and an example; the API returns the same', async () => {
    const page = w.page;
    await pick(page, connection);
    const panel = page.getByRole('region', { name: 'Business context' });
    await panel.getByRole('button', { name: 'Edit' }).click();
    await panel.locator('summary', { hasText: 'orders' }).click();
    await panel.getByLabel('Description of orders', { exact: true }).fill('One row per checkout');
    await panel.getByLabel('Synonyms of orders (comma-separated)').fill('purchases, sales');
    await panel.getByLabel('Description of orders.total').fill('Amount charged, in euros');
    if (connection === 'web-pg') await shot(page, 'annotations-editor');

    // A write example is refused naming it, and nothing is stored.
    await panel.getByRole('button', { name: 'Add example' }).click();
    await panel.getByLabel('Question').fill('Cancel them all');
    await panel.getByLabel('SQL').fill("UPDATE orders SET status = 'cancelled'");
    await panel.getByRole('button', { name: 'Save' }).click();
    await poll(() => panel.getByRole('alert').textContent()).toMatch(/examples\[0\] \("Cancel them all"\): only read statements/);
    expect((await w.h.call('GET', `/api/connections/${ids[connection]}/annotations`, w.h.readerKey)).body.data.version).toBe(0);

    await panel.getByLabel('Question').fill('Orders that shipped');
    await panel.getByLabel('SQL').fill("SELECT id FROM orders WHERE status = 'shipped'");
    await panel.getByRole('button', { name: 'Save' }).click();
    await poll(() => panel.getByRole('status').textContent()).toBe('Saved as version 1.');

    const api = (await w.h.call('GET', `/api/connections/${ids[connection]}/annotations`, w.h.readerKey)).body.data;
    expect(api).toMatchObject({
      version: 1,
      tables: {
        orders: {
          description: 'One row per checkout',
          synonyms: ['purchases', 'sales'],
          columns: { total: { description: 'Amount charged, in euros' } },
        },
      },
      examples: [{ question: 'Orders that shipped', sql: "SELECT id FROM orders WHERE status = 'shipped'" }],
    });
    const audit = await w.h.svc.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'connection.annotations_changed')
      .where('target_id', '=', ids[connection])
      .execute();
    expect(audit).toMatchObject([{ source: 'ui', actor_email: ADMIN.email }]);
  });

  it('a reader sees the descriptions and the example, and cannot edit', async () => {
    await readerPage.goto(w.base + '/');
    await pick(readerPage, connection);
    const panel = readerPage.getByRole('region', { name: 'Business context' });
    await poll(() => panel.locator('[data-table="orders"] dd').first().textContent()).toBe('One row per checkout');
    expect(await panel.locator('[data-table="orders"] dt').textContent()).toBe('orders (purchases, sales)');
    expect(await panel.locator('[data-column="total"]').textContent()).toBe('total Amount charged, in euros');
    if (comments) expect(await panel.locator('[data-column="status"]').textContent()).toBe('status placed, shipped or cancelled');
    else expect(await panel.locator('[data-column="status"]').count()).toBe(0);
    expect(await panel.getByText('Orders that shipped').isVisible()).toBe(true);
    expect(await panel.getByRole('button', { name: 'Edit' }).count()).toBe(0);
    if (connection === 'web-pg') await shot(readerPage, 'annotations');
  });
});

it('no page errors', () => {
  expect(w.pageErrors).toEqual([]);
});
