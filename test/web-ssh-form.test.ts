// The connection form's "SSH tunnel" section, in Debian Chromium (test/support/browser.ts): an
// admin adds a connection through a bastion (host, port, user, private key, pinned host key),
// the stored record carries it (the key in the secret box, never on the page), an edit shows
// the stored settings but no secret and keeps the key when left blank, switching to a password
// replaces the key, and unticking the section removes the bastion. The bastion is a closed
// port on this machine: saving audits the connection, which fails fast and is not needed here.
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fieldsOf, getConnectionRow } from '../src/connections/connections.ts';
import { getWorkspace } from '../src/workspaces/workspaces.ts';
import { ADMIN, type BrowserHarness, poll, signInAt, startBrowserHarness } from './support/browser.ts';
import type { Harness } from './support/harness.ts';

let w: BrowserHarness;
let h: Harness, base: string, page: Page;
let pageErrors: string[];

const { privateKey } = generateKeyPairSync('ed25519', {
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});
const fingerprint = () => `SHA256:${createHash('sha256').update(randomBytes(32)).digest('base64').replace(/=+$/, '')}`;
const HOST_KEY = fingerprint();
const NEW_HOST_KEY = fingerprint();

/** Save, and wait for the form to close: the answer (and the audit of the saved record) is in. */
async function save(): Promise<void> {
  await page.getByRole('button', { name: 'Save' }).click();
  await poll(() => page.locator('form.conn-form').count(), 30_000).toBe(0);
}

async function stored(name: string) {
  const ws = await getWorkspace(h.svc.db, 'default');
  return fieldsOf(await getConnectionRow(h.svc.db, ws.id, name), h.svc.secretBox).ssh;
}

async function apiRecord(name: string) {
  const res = await h.call('GET', '/api/connections', h.adminKey);
  return (res.body.data.connections as { name: string; ssh: unknown }[]).find((c) => c.name === name);
}

beforeAll(async () => {
  w = await startBrowserHarness({ context: { viewport: { width: 1280, height: 1000 } } });
  ({ h, base, page, pageErrors } = w);
  await signInAt(base, page, ADMIN);
}, 120_000);

afterAll(async () => {
  await w?.close();
});

describe('SSH tunnel in the connection form', () => {
  it('adds a connection through a bastion with a private key and a pinned host key', async () => {
    await page.goto(`${base}/settings/connections`);
    await page.getByRole('button', { name: 'Add connection' }).click();
    await page.getByLabel('Name', { exact: true }).fill('bastioned');
    await page.getByLabel('Host', { exact: true }).fill('db.internal');
    await page.getByLabel('Port', { exact: true }).fill('5432');
    await page.getByLabel('Database', { exact: true }).fill('test');
    await page.getByLabel('User', { exact: true }).fill('postgres');
    await page.getByLabel('Password', { exact: true }).fill('db-secret-pw');
    // Collapsed until asked for.
    expect(await page.getByLabel('Connect through an SSH bastion').isVisible()).toBe(false);
    await page.getByText('SSH tunnel').click();
    await page.getByLabel('Connect through an SSH bastion').check();
    await page.getByLabel('SSH host', { exact: true }).fill('127.0.0.1');
    await page.getByLabel('SSH port', { exact: true }).fill('9');
    await page.getByLabel('SSH user', { exact: true }).fill('tunnel');
    await page.getByLabel('SSH private key').fill(privateKey);
    await page.getByLabel('SSH host key').fill(HOST_KEY);
    await save();
    const row = page.getByRole('row', { name: /bastioned/ });
    await poll(() => row.isVisible(), 30_000).toBe(true);
    expect(await row.getByText('SSH', { exact: true }).isVisible()).toBe(true);

    expect(await stored('bastioned')).toEqual({
      host: '127.0.0.1',
      port: 9,
      user: 'tunnel',
      privateKey: `${privateKey.trim()}\n`,
      password: null,
      hostKey: HOST_KEY,
    });
    expect((await apiRecord('bastioned'))?.ssh).toEqual({ host: '127.0.0.1', port: 9, user: 'tunnel', hostKey: HOST_KEY });
    const html = await page.content();
    expect(html).not.toContain('PRIVATE KEY');
    expect(html).not.toContain('db-secret-pw');
  });

  it('shows the stored bastion on edit without its key, and keeps the key when left blank', async () => {
    const row = page.getByRole('row', { name: /bastioned/ });
    await row.getByRole('button', { name: 'Edit' }).click();
    expect(await page.getByLabel('Connect through an SSH bastion').isChecked()).toBe(true);
    expect(await page.getByLabel('SSH host', { exact: true }).inputValue()).toBe('127.0.0.1');
    expect(await page.getByLabel('SSH port', { exact: true }).inputValue()).toBe('9');
    expect(await page.getByLabel('SSH user', { exact: true }).inputValue()).toBe('tunnel');
    expect(await page.getByLabel('SSH host key').inputValue()).toBe(HOST_KEY);
    const key = page.getByLabel('SSH private key');
    expect(await key.inputValue()).toBe('');
    expect(await key.getAttribute('placeholder')).toBe('Leave blank to keep the stored key');

    await page.getByLabel('SSH host key').fill(NEW_HOST_KEY);
    await save();
    await poll(async () => (await stored('bastioned'))?.hostKey, 30_000).toBe(NEW_HOST_KEY);
    expect((await stored('bastioned'))?.privateKey).toBe(`${privateKey.trim()}\n`);
  });

  it('replaces the key with a password, then removes the bastion when unticked', async () => {
    const row = page.getByRole('row', { name: /bastioned/ });
    await row.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('Use a password').check();
    await page.getByLabel('SSH password', { exact: true }).fill('tunnel-secret-pw');
    await save();
    await poll(async () => (await stored('bastioned'))?.password, 30_000).toBe('tunnel-secret-pw');
    expect((await stored('bastioned'))?.privateKey).toBeNull();
    expect(await page.content()).not.toContain('tunnel-secret-pw');

    await row.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('Connect through an SSH bastion').uncheck();
    await save();
    await poll(async () => (await apiRecord('bastioned'))?.ssh, 30_000).toBeNull();
    expect(await stored('bastioned')).toBeNull();
    await poll(() => row.getByText('SSH', { exact: true }).count()).toBe(0);
    // The database settings were never touched by the SSH edits.
    const ws = await getWorkspace(h.svc.db, 'default');
    const fields = fieldsOf(await getConnectionRow(h.svc.db, ws.id, 'bastioned'), h.svc.secretBox);
    expect(fields).toMatchObject({ host: 'db.internal', port: 5432, user: 'postgres', password: 'db-secret-pw', database: 'test' });
    expect(pageErrors).toEqual([]);
  });
});
