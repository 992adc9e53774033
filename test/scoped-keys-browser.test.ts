// Scoped keys and connection grants in a real browser (Debian Chromium via playwright-core):
// an admin sets the workspace's longest key lifetime, creates a read-only, one-connection,
// 30-day key in the page and sees its scope and expiry in the list (a key close to its end
// flagged "Expires soon"); the key does what the page said over /api; the connections page's
// Access control takes a connection away from the reader, who then cannot see it. Screenshots
// (api-keys, connection-access) go to a temp dir, or to docs/screenshots/ with DBQ_WEB_SCREENSHOTS=1.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../src/workspaces/api-keys.ts';
import { type BrowserHarness, poll, READER, shot, signInAt, startBrowserHarness, ADMIN } from './support/browser.ts';

let w: BrowserHarness;
let page: Page;

beforeAll(async () => {
  w = await startBrowserHarness({ context: { viewport: { width: 1280, height: 900 } }, withReaderAndSample: true });
  page = w.page;
  await createApiKey(w.h.svc.db, {
    workspace: 'default',
    email: ADMIN.email,
    name: 'nightly-report',
    scope: { toolsOnly: true },
    expiresInDays: 10,
  });
  await signInAt(w.base, page, ADMIN);
}, 120_000);

afterAll(async () => {
  await w?.close();
});

describe('the API keys page', () => {
  it('sets the longest lifetime, creates a read-only one-connection 30-day key, and lists scope and expiry', async () => {
    await page.goto(`${w.base}/settings/api-keys`);
    await page.getByLabel('Longest key lifetime (days)').fill('90');
    await page.getByRole('button', { name: 'Save' }).click();
    await poll(async () => (await w.h.call('GET', '/api/workspace', w.h.adminKey)).body.data.workspace.maxKeyDays).toBe(90);

    await page.getByRole('button', { name: 'Create API key' }).click();
    await page.getByLabel('Name').fill('agent');
    await page.getByLabel('Expires in (days)').fill('30');
    await page.getByLabel(/Read-only \(reads only/).check();
    await page.getByRole('group', { name: 'Connections' }).getByLabel('sample').check();
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await poll(() => page.getByText('This key will not be shown again').isVisible()).toBe(true);
    const secret = (await page.getByTestId('new-key-secret').textContent()) ?? '';
    const row = page.getByRole('row').filter({ hasText: 'agent' });
    await poll(() => row.textContent()).toContain('Read-only · sample');
    await poll(() => page.getByRole('row').filter({ hasText: 'nightly-report' }).textContent()).toContain('Expires soon');
    await shot(page, 'api-keys');

    const self = await w.h.call('GET', '/api/keys/self', secret);
    expect(self.body.data.apiKey.scope.readOnly).toBe(true);
    expect(self.body.data.effective.connections).toHaveLength(1);
    expect(Date.parse(self.body.data.apiKey.expiresAt) - Date.now()).toBeGreaterThan(29.9 * 86_400_000);
    const write = await w.h.call('POST', '/api/query', secret, { connectionId: 'sample', sql: 'DELETE FROM customers' });
    expect(write.status).toBe(403);
    expect(w.pageErrors).toEqual([]);
  });
});

describe('the connections page Access control', () => {
  it('takes a connection away from the reader, who no longer sees it', async () => {
    await page.goto(`${w.base}/settings/connections`);
    await page.getByRole('button', { name: 'Access to sample' }).click();
    await page.getByLabel('Admins and these users:').check();
    await poll(() => page.getByRole('group', { name: 'Users' }).getByLabel(READER.email).isVisible()).toBe(true);
    await shot(page, 'connection-access');
    await page.getByRole('button', { name: 'Save access' }).click();
    await poll(async () => (await w.h.call('GET', '/api/connections', w.h.readerKey)).body.data.connections.length).toBe(0);

    const readerContext = await w.browser.newContext({ viewport: { width: 1280, height: 900 } });
    const readerPage = await readerContext.newPage();
    w.watch(readerPage);
    await signInAt(w.base, readerPage, READER);
    await readerPage.goto(`${w.base}/settings/connections`);
    await poll(() => readerPage.getByText('No connections yet.').isVisible()).toBe(true);
    await readerContext.close();
    expect(w.pageErrors).toEqual([]);
  });
});
