// The HTML shell of the web app: Vite's built index.html (dist/web, made by `npm run
// build:web`, which `npm install`/`npm ci` run through the `prepare` script) with a few
// <meta> tags telling the bundle which page to show and under which workspace path. The
// bundle itself is served from /ui/assets/ by @fastify/static (see plugin.ts).
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from '../package-root.ts';

export const WEB_DIST_DIR = path.join(PACKAGE_ROOT, 'dist/web');
export const ASSETS_PREFIX = '/ui/assets/';

export type PageName =
  | 'login'
  | 'setup'
  | 'set-password'
  | 'console'
  | 'api-keys'
  | 'users'
  | 'connections'
  | 'account'
  | 'audit'
  | 'sso'
  | 'tools'
  | 'oauth-consent'
  | 'forbidden'
  | 'not-found';

export interface ShellInput {
  page: PageName;
  base: string;
  workspace: string;
  /** The HTTP status of the page (403 setup link used, 403 admins only, 404 …). */
  status: number;
}

// No inline script anywhere: the page data rides in <meta> tags, so script-src can be 'self'.
// CodeMirror and the chart set inline styles, hence style-src 'unsafe-inline'.
export const PAGE_SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
};

function escapeAttr(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>dbq</title></head>
<body style="font:15px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto">
<h1>dbq web app not built</h1>
<p>The web app's assets are missing from <code>dist/web</code>. Build them with
<code>npm run build:web</code> (<code>npm install</code> does this through the <code>prepare</code> script), then reload.</p>
<p>The HTTP API under <code>/api</code> works without them.</p></body></html>`;

export class WebShell {
  private template: { html: string; mtimeMs: number } | null = null;

  constructor(private readonly distDir: string = WEB_DIST_DIR) {}

  get built(): boolean {
    return existsSync(path.join(this.distDir, 'index.html'));
  }

  get assetsDir(): string {
    return path.join(this.distDir, 'assets');
  }

  /** The page HTML, or null when the bundle has not been built. */
  render(input: ShellInput): string | null {
    // Re-read when the file changes, so `npm run build:web` while the server runs takes effect.
    const file = path.join(this.distDir, 'index.html');
    let mtimeMs: number;
    try {
      mtimeMs = statSync(file).mtimeMs;
    } catch {
      return null;
    }
    if (this.template?.mtimeMs !== mtimeMs) this.template = { html: readFileSync(file, 'utf8'), mtimeMs };
    const meta = [
      `<meta name="dbq-page" content="${escapeAttr(input.page)}">`,
      `<meta name="dbq-base" content="${escapeAttr(input.base)}">`,
      `<meta name="dbq-workspace" content="${escapeAttr(input.workspace)}">`,
      `<meta name="dbq-status" content="${input.status}">`,
    ].join('');
    return this.template.html.replace(/<head>/i, `<head>${meta}`);
  }

  notBuilt(): string {
    return NOT_BUILT;
  }
}
