// Real-browser support for the web app tests: Debian's Chromium (/usr/bin/chromium, installed
// by .ci/run when missing) driven by playwright-core — never a browser downloaded by a test
// tool. The web bundle is (re)built first when dist/web is missing or older than web/.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';

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
