// The connection form's TLS fields, in Debian Chromium (test/support/browser.ts): with "Require
// TLS" ticked an admin gives a private CA and a client certificate and key (PEM, made here with
// openssl); the stored record carries them sealed (never on the page, never in the API's
// record); an edit shows blanks and keeps them when left blank; a bad PEM is refused with the
// API's sentence and nothing changes; unticking TLS removes them. The host is a closed port:
// saving audits the connection, which fails fast and is not needed here.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fieldsOf, getConnectionRow } from '../src/connections/connections.ts';
import { getWorkspace } from '../src/workspaces/workspaces.ts';
import { ADMIN, type BrowserHarness, poll, signInAt, startBrowserHarness } from './support/browser.ts';
import { issue, makeCa, readPem } from './support/certificates.ts';
import type { Harness } from './support/harness.ts';

let w: BrowserHarness;
let h: Harness, base: string, page: Page;
let pageErrors: string[];
let certs: string;
const pem: Record<string, string> = {};

/** A CA and a client certificate and key it signed. */
async function makeCertificates(): Promise<void> {
  certs = fs.mkdtempSync(path.join(os.tmpdir(), 'dbq-web-tls-'));
  await makeCa(certs, 'ca');
  await issue(certs, 'client', 'postgres', ['extendedKeyUsage=clientAuth']);
  Object.assign(pem, readPem(certs, ['ca.crt', 'client.crt', 'client.key']));
}

async function save(): Promise<void> {
  await page.getByRole('button', { name: 'Save' }).click();
  await poll(() => page.locator('form.conn-form').count(), 30_000).toBe(0);
}

async function stored(name: string) {
  const ws = await getWorkspace(h.svc.db, 'default');
  const f = fieldsOf(await getConnectionRow(h.svc.db, ws.id, name), h.svc.secretBox);
  return { ssl: f.ssl, tls: f.tls ?? null };
}

beforeAll(async () => {
  await makeCertificates();
  w = await startBrowserHarness({ context: { viewport: { width: 1280, height: 1100 } } });
  ({ h, base, page, pageErrors } = w);
  await signInAt(base, page, ADMIN);
}, 120_000);

afterAll(async () => {
  await w?.close();
  if (certs) fs.rmSync(certs, { recursive: true, force: true });
});

describe('TLS with a private CA in the connection form', () => {
  it('adds a connection with a CA and a client certificate, sealed and never shown', async () => {
    await page.goto(`${base}/settings/connections`);
    await page.getByRole('button', { name: 'Add connection' }).click();
    await page.getByLabel('Name', { exact: true }).fill('private-ca');
    await page.getByLabel('Host', { exact: true }).fill('db.internal');
    await page.getByLabel('Port', { exact: true }).fill('9');
    await page.getByLabel('Database', { exact: true }).fill('test');
    await page.getByLabel('User', { exact: true }).fill('postgres');
    await page.getByLabel('Password', { exact: true }).fill('db-secret-pw');
    // Hidden until TLS is asked for.
    expect(await page.getByLabel('CA certificate (PEM)').count()).toBe(0);
    await page.getByLabel('Require TLS (SSL)').check();
    await page.getByLabel('CA certificate (PEM)').fill(pem['ca.crt']);
    await page.getByLabel('Client certificate (PEM)').fill(pem['client.crt']);
    await page.getByLabel('Client key (PEM)').fill(pem['client.key']);
    await save();
    const row = page.getByRole('row', { name: /private-ca/ });
    await poll(() => row.isVisible(), 30_000).toBe(true);
    expect(await row.getByText('TLS', { exact: true }).isVisible()).toBe(true);

    expect(await stored('private-ca')).toEqual({
      ssl: true,
      tls: { ca: `${pem['ca.crt'].trim()}\n`, cert: `${pem['client.crt'].trim()}\n`, key: `${pem['client.key'].trim()}\n` },
    });
    const res = await h.call('GET', '/api/connections', h.adminKey);
    expect(JSON.stringify(res.body)).not.toContain('BEGIN');
    const html = await page.content();
    expect(html).not.toContain('BEGIN CERTIFICATE-----\n');
    expect(html).not.toContain('PRIVATE KEY-----\n');
  });

  it('an edit shows blanks and keeps the stored CA and certificate when left blank', async () => {
    const before = await stored('private-ca');
    const row = page.getByRole('row', { name: /private-ca/ });
    await row.getByRole('button', { name: 'Edit' }).click();
    expect(await page.getByLabel('Require TLS (SSL)').isChecked()).toBe(true);
    const ca = page.getByLabel('CA certificate (PEM)');
    expect(await ca.inputValue()).toBe('');
    expect(await ca.getAttribute('placeholder')).toBe('Leave blank to keep the stored one (if any)');
    await page.getByLabel('Database', { exact: true }).fill('test2');
    await save();
    await poll(async () => {
      const ws = await getWorkspace(h.svc.db, 'default');
      return fieldsOf(await getConnectionRow(h.svc.db, ws.id, 'private-ca'), h.svc.secretBox).database;
    }, 30_000).toBe('test2');
    expect(await stored('private-ca')).toEqual(before);
  });

  it('a CA that is not a PEM certificate is refused with the reason, and nothing changes', async () => {
    const before = await stored('private-ca');
    const row = page.getByRole('row', { name: /private-ca/ });
    await row.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('CA certificate (PEM)').fill('not a certificate');
    await page.getByRole('button', { name: 'Save' }).click();
    await poll(async () => (await page.locator('form.conn-form').innerText()).includes('sslCa'), 30_000).toBe(true);
    expect(await stored('private-ca')).toEqual(before);
    await page.getByRole('button', { name: 'Cancel' }).click();
  });

  it('unticking TLS removes the CA and the client certificate', async () => {
    const row = page.getByRole('row', { name: /private-ca/ });
    await row.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('Require TLS (SSL)').uncheck();
    await save();
    await poll(async () => (await stored('private-ca')).ssl, 30_000).toBe(false);
    expect((await stored('private-ca')).tls).toBeNull();
    await poll(() => row.getByText('TLS', { exact: true }).count()).toBe(0);
    expect(pageErrors).toEqual([]);
  });
});
