// Real-browser support for the web app tests: Debian's Chromium (/usr/bin/chromium, installed
// by .ci/run when missing) driven by playwright-core — never a browser downloaded by a test
// tool. The web bundle is (re)built first when dist/web is missing or older than web/.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { ensureSample } from '../../src/cli/serve.ts';
import { hashPassword } from '../../src/workspaces/passwords.ts';
import { createHarness, type Harness } from './harness.ts';

export const CHROMIUM_PATH = '/usr/bin/chromium';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WEB_DIR = path.join(ROOT, 'web');
const BUILT_INDEX = path.join(ROOT, 'dist', 'web', 'index.html');

// Flags for a sandboxed, offline machine: root needs --no-sandbox, and Chromium's own
// background traffic (updates, sync, QUIC probes) would only hit a closed network.
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-quic',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

/** playwright-core gives every launch a fresh, empty profile directory of its own. */
export async function launchChromium(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM_PATH)) {
    throw new Error(`${CHROMIUM_PATH} is missing: install it with \`apt-get install -y chromium\` (.ci/run does this)`);
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: FLAGS });
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(full) : fs.statSync(full).mtimeMs);
  }
  return newest;
}

/** Builds the bundle when it is missing or stale (`prepare` normally did it at install). */
export async function ensureWebBuild(): Promise<void> {
  const built = fs.existsSync(BUILT_INDEX) ? fs.statSync(BUILT_INDEX).mtimeMs : 0;
  if (built >= newestMtime(WEB_DIR)) return;
  const { build } = await import('vite');
  await build({ configFile: path.join(WEB_DIR, 'vite.config.ts'), logLevel: 'warn' });
}

/** Workspace `default`'s admin as the harness creates it, and its reader with a known password. */
export const ADMIN = { email: 'admin@acme.test', password: 'correct horse' };
export const READER = { email: 'reader@acme.test', password: 'reader password' };

export interface Credentials {
  email: string;
  password: string;
}

// Screenshots go to a temp dir, or to docs/screenshots/ with DBQ_WEB_SCREENSHOTS=1.
let shotsDir: string | undefined;
function screenshotDir(): string {
  shotsDir ??= process.env.DBQ_WEB_SCREENSHOTS
    ? fileURLToPath(new URL('../../docs/screenshots', import.meta.url))
    : fs.mkdtempSync(path.join(os.tmpdir(), 'dbq-shots-'));
  return shotsDir;
}

export async function shot(p: Page, name: string): Promise<void> {
  const dir = screenshotDir();
  fs.mkdirSync(dir, { recursive: true });
  await p.screenshot({ path: path.join(dir, `${name}.png`) });
}

// Pages render after their data arrives; a loaded CI machine may take a few seconds.
export const poll = <T>(fn: () => T | Promise<T>, timeout = 10_000) => expect.poll(fn, { timeout, interval: 100 });

/** Signs in on the page at `at` (the login page by default) and waits to leave it. */
export async function signInAt(base: string, p: Page, who: Credentials, at = '/login'): Promise<void> {
  await p.goto(`${base}${at}`);
  await p.getByLabel('Email').fill(who.email);
  await p.getByLabel('Password').fill(who.password);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.waitForURL((u) => !u.pathname.endsWith('/login'));
}

/** Replaces the console editor's text as a paste would (no key-by-key completion popups). */
export async function setSql(p: Page, sql: string): Promise<void> {
  const editor = p.getByRole('textbox', { name: 'SQL' });
  await editor.click();
  await p.keyboard.press('ControlOrMeta+a');
  await p.keyboard.press('Delete');
  await p.keyboard.insertText(sql);
}

export interface BrowserHarness {
  h: Harness;
  base: string;
  browser: Browser;
  /** The admin's context and its first page (watched). */
  admin: BrowserContext;
  page: Page;
  /** Script errors and console errors (a CSP violation is one) of every watched page. */
  pageErrors: string[];
  /** 10 s default timeout, and errors collected into pageErrors. */
  watch(p: Page): void;
  close(): Promise<void>;
}

/** A real dbq on a random port, Chromium, and an admin context with one watched page. */
export async function startBrowserHarness(opts: {
  context: BrowserContextOptions;
  /** Give READER its password and add the sample connection. */
  withReaderAndSample?: boolean;
}): Promise<BrowserHarness> {
  await ensureWebBuild();
  const h = await createHarness();
  if (opts.withReaderAndSample) {
    await h.svc.db
      .updateTable('users')
      .set({ password_hash: await hashPassword(READER.password) })
      .where('email', '=', READER.email)
      .execute();
    await ensureSample(h.svc);
  }
  let browser: Browser | undefined;
  let base: string, admin: BrowserContext, page: Page;
  try {
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
    browser = await launchChromium();
    admin = await browser.newContext(opts.context);
    page = await admin.newPage();
  } catch (err) {
    await browser?.close();
    await h.close();
    throw err;
  }
  const pageErrors: string[] = [];
  const watch = (p: Page): void => {
    p.setDefaultTimeout(10_000);
    p.on('pageerror', (err) => pageErrors.push(err.message));
    p.on('console', (msg) => {
      // The deliberate failures (wrong password, refused query) answer 4xx, which Chromium logs.
      if (msg.type() === 'error' && !/status of 4\d\d/.test(msg.text())) pageErrors.push(msg.text());
    });
  };
  watch(page);
  return {
    h,
    base,
    browser: browser!,
    admin,
    page,
    pageErrors,
    watch,
    async close() {
      await browser!.close();
      await h.close();
    },
  };
}
