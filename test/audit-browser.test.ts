// The audit log page in a real browser (Debian Chromium via playwright-core): an admin finds
// it in the navigation, sees the entries newest first with actor, target, changes and origin,
// filters them, and pages through them 25 at a time ("Older", "Newer") without repeats or gaps, the
// page no taller than a screenful and a bit; a reader has no such entry and
// gets the 403 page. Screenshot: docs/screenshots/audit.png with DBQ_WEB_SCREENSHOTS=1.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actorOf, inTransaction, recordAudit, type AuditEvent } from '../src/audit/audit.ts';
import { getWorkspace } from '../src/workspaces/workspaces.ts';
import { setUserRole } from '../src/workspaces/users.ts';
import { ADMIN, type BrowserHarness, poll, READER, shot, signInAt, startBrowserHarness } from './support/browser.ts';

/** An entry alone, in its own transaction (recordAudit takes the transaction of a change). */
const appendAudit = (db: Parameters<typeof inTransaction>[0], e: AuditEvent) => inTransaction(db, (trx) => recordAudit(trx, e));

let w: BrowserHarness;
let base: string;
let page: Page;

const rows = (p: Page) => p.locator('table.audit tbody tr');

beforeAll(async () => {
  w = await startBrowserHarness({ context: { viewport: { width: 1280, height: 900 } }, withReaderAndSample: true });
  ({ base, page } = w);
  const { h } = w;
  const ws = await getWorkspace(h.svc.db, 'default');
  const admin = await h.svc.db.selectFrom('users').selectAll().where('email', '=', ADMIN.email).executeTakeFirstOrThrow();
  const principal = { user: { id: admin.id, email: admin.email }, apiKey: null };
  // Older history, enough for a second page.
  for (let i = 0; i < 55; i++) {
    await appendAudit(h.svc.db, {
      workspaceId: ws.id,
      actor: actorOf(principal, '192.0.2.10', 'ui'),
      action: 'session.signed_in',
      target: { type: 'user', id: admin.id, name: admin.email },
    });
  }
  // Then changes through the real doors.
  await h.call('POST', '/api/connections', h.adminKey, {
    name: 'warehouse',
    url: 'postgres://analyst:never-shown@127.0.0.1:5432/test',
    readOnly: true,
  });
  await h.call('PATCH', '/api/connections/warehouse', h.adminKey, { maxConnections: 4 });
  await setUserRole(h.svc.db, 'default', READER.email, 'admin', actorOf(principal, '192.0.2.10', 'ui'));
  await setUserRole(h.svc.db, 'default', READER.email, 'read_only', actorOf(principal, '192.0.2.10', 'ui'));
  await h.call('POST', '/ui/api/login', null, { email: 'mallory@evil.test', password: 'guess' });
}, 120_000);

afterAll(async () => {
  await w?.close();
});

describe('audit log page', () => {
  it('is in the admin navigation and lists entries newest first with actor, target, changes and origin', async () => {
    await signInAt(base, page, ADMIN);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).click();
    await page.waitForURL(`${base}/settings/audit`);
    await poll(() => rows(page).count()).toBe(25);
    const first = rows(page).first();
    await expect(first.getAttribute('data-action')).resolves.toBe('session.signed_in'); // this sign-in
    const failed = page.locator('tr[data-action="session.sign_in_failed"]');
    await poll(() => failed.innerText()).toContain('mallory@evil.test');
    const updated = page.locator('tr[data-action="connection.updated"]');
    await poll(() => updated.innerText()).toContain('maxConnections');
    expect(await updated.innerText()).toContain('10 → 4');
    expect(await updated.innerText()).toContain('API');
    expect(await page.content()).not.toContain('never-shown');
    await shot(page, 'audit');
  });

  it('filters by action and actor', async () => {
    await page.getByLabel('Action').selectOption('user.role_changed');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await poll(() => rows(page).count()).toBe(2);
    expect(await rows(page).first().innerText()).toContain('"admin" → "read_only"');
    await page.getByLabel('Action').selectOption('');
    await page.getByLabel('Actor').fill('mallory@evil.test');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await poll(() => rows(page).count()).toBe(1);
    await page.getByRole('button', { name: 'Clear' }).click();
    await poll(() => rows(page).count()).toBe(25);
  });

  it('pages through every entry, Older then Newer, without a repeat or a gap', async () => {
    const idsShown = () => rows(page).evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-id') ?? ''));
    const pager = page.getByRole('navigation', { name: 'Audit pages' });
    const older = pager.getByRole('button', { name: 'Older' });
    const first = await idsShown();
    expect(first).toHaveLength(25);
    // One screen, about: the filters, 25 entries and the pager (it was ~3,100 px with 50 and "Load more").
    expect(await (page.evaluate('document.documentElement.scrollHeight') as Promise<number>)).toBeLessThan(2_200);
    expect(await pager.getByRole('button', { name: 'Newer' }).isDisabled()).toBe(true);
    const seen = [...first];
    for (let n = 2; !(await older.isDisabled()); n++) {
      const before = (await idsShown())[0];
      await older.click();
      await poll(async () => (await idsShown())[0]).not.toBe(before);
      await poll(() => pager.textContent()).toContain(`Page ${n}`);
      seen.push(...(await idsShown()));
    }
    const workspace = await w.h.svc.db.selectFrom('workspaces').select('id').where('slug', '=', 'default').executeTakeFirstOrThrow();
    const all = await w.h.svc.db
      .selectFrom('audit_log')
      .select('id')
      .where('workspace_id', '=', workspace.id)
      .orderBy('id', 'desc')
      .execute();
    // Entries recorded after the first page was read (this test's own sign-in) are not on it.
    expect(seen).toEqual(all.map((r) => r.id).filter((id) => id <= first[0]));
    await pager.getByRole('button', { name: 'Newer' }).click();
    await poll(() => pager.textContent()).toContain(`Page ${Math.ceil(all.length / 25) - 1}`);
    expect(w.pageErrors).toEqual([]);
  });

  it('is neither shown to nor served to a reader', async () => {
    const context = await w.browser.newContext();
    const p = await context.newPage();
    w.watch(p);
    await signInAt(base, p, READER);
    // The navigation is drawn once the page knows who is signed in.
    await poll(() => p.locator('header .me .email').textContent(), 20_000).toBe(READER.email);
    expect(await p.getByRole('link', { name: 'Audit log' }).count()).toBe(0);
    const res = await p.goto(`${base}/settings/audit`);
    expect(res?.status()).toBe(403);
    await context.close();
  });
});
