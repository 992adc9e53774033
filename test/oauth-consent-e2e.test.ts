// OAuth end to end, as an agent meets dbq: the MCP SDK v2 client's own OAuth flow (discovery
// from the 401, dynamic registration, PKCE, resource indicator) against a real dbq, with the
// consent clicked in real Chromium (Debian's, through playwright-core) by a user who first has
// to sign in. The tokens then call tools over the 2026-07-28 revision (SDK v2, stateless) and
// over a 2025-11-25 session (SDK v1 with the access token as Bearer); "Read-only" ticked on the
// page → a DELETE is refused and the table is unchanged. A read_only user finds Read-only
// forced, on a phone, and denies; the keys page lists the granted app and revokes it, after
// which the token is refused. Screenshots (oauth-consent, oauth-consent-phone, connected-apps)
// go to a temp dir, or to docs/screenshots/ with DBQ_WEB_SCREENSHOTS=1.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
  UnauthorizedError,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, type BrowserHarness, type Credentials, poll, READER, shot, startBrowserHarness } from './support/browser.ts';

const MODERN_REVISION = '2026-07-28';
const CLIENT_NAME = 'Acme Agent';

/** The native app's loopback redirect target (RFC 8252): records each callback's query. */
async function startCallbackServer(): Promise<{ url: string; next(): Promise<URLSearchParams>; close(): Promise<void> }> {
  const waiting: ((q: URLSearchParams) => void)[] = [];
  const arrived: URLSearchParams[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    // The browser also asks this origin for /favicon.ico: not an answer.
    if (url.pathname !== '/callback') return void res.writeHead(404).end();
    const q = url.searchParams;
    const w = waiting.shift();
    if (w) w(q);
    else arrived.push(q);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<p>Acme Agent: you may close this window.</p>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/callback`,
    next: () => {
      const q = arrived.shift();
      return q ? Promise.resolve(q) : new Promise((resolve) => waiting.push(resolve));
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** What an MCP host keeps for one server: registration, PKCE verifier, tokens — in memory. */
class MemoryOAuthProvider implements OAuthClientProvider {
  info: StoredOAuthClientInformation | undefined;
  saved: StoredOAuthTokens | undefined;
  verifier = '';
  discovery: OAuthDiscoveryState | undefined;
  authorizationUrl: URL | null = null;
  readonly expectedState = `state-${Math.random().toString(36).slice(2)}`;

  constructor(private readonly callback: string) {}

  get redirectUrl(): string {
    return this.callback;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: CLIENT_NAME,
      redirect_uris: [this.callback],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: 'dbq:read dbq:write offline_access',
    };
  }
  state(): string {
    return this.expectedState;
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: StoredOAuthClientInformation): void {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: StoredOAuthTokens): void {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }
  codeVerifier(): string {
    return this.verifier;
  }
  // Kept like the verifier, so the callback leg is checked against the server it started with.
  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
}

function modernClient(): ModernClient {
  return new ModernClient({ name: 'acme-agent', version: '1' }, { versionNegotiation: { mode: { pin: MODERN_REVISION } } });
}

function isError(result: unknown): boolean {
  return Boolean((result as CallToolResult).isError);
}
function text(result: unknown): string {
  return (result as CallToolResult).content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

let w: BrowserHarness;
let callback: Awaited<ReturnType<typeof startCallbackServer>>;
let mcpUrl: URL;
let customersBefore: number;

async function countCustomers(): Promise<number> {
  const res = await w.h.call('POST', '/api/query', w.h.adminKey, { connectionId: 'sample', sql: 'SELECT count(*) AS n FROM customers' });
  expect(res.status).toBe(200);
  return Number(res.body.data.rows[0][0]);
}

/** The SDK's first connect: 401 → discovery → registration → the authorization URL to open. */
async function startFlow(): Promise<{ provider: MemoryOAuthProvider; transport: ModernTransport }> {
  const provider = new MemoryOAuthProvider(callback.url);
  const transport = new ModernTransport(mcpUrl, { authProvider: provider });
  const error = await modernClient()
    .connect(transport)
    .then(
      () => null,
      (err: unknown) => err,
    );
  // Anything but "go and authorize" (discovery or registration refused) fails with its own message.
  if (!(error instanceof UnauthorizedError)) throw error;
  expect(provider.authorizationUrl, 'the SDK asked to open the authorization URL').not.toBeNull();
  const asked = provider.authorizationUrl!.searchParams;
  expect(asked.get('code_challenge_method')).toBe('S256');
  expect(asked.get('resource')).toBe(mcpUrl.href);
  return { provider, transport };
}

/** Opens the authorization URL signed out: sign-in comes first, then the consent page. */
async function reachConsent(p: Page, authorizationUrl: URL, who: Credentials): Promise<void> {
  await p.goto(authorizationUrl.href);
  await p.waitForURL((u) => u.pathname.endsWith('/login'));
  expect(new URL(p.url()).searchParams.get('next')).toMatch(/^\/oauth\/consent\//);
  await p.getByLabel('Email').fill(who.email);
  await p.getByLabel('Password').fill(who.password);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.waitForURL((u) => u.pathname.includes('/oauth/consent/'));
  await poll(() => p.getByRole('heading', { name: new RegExp(`Allow ${CLIENT_NAME}`) }).isVisible()).toBe(true);
}

async function noHorizontalOverflow(p: Page): Promise<void> {
  const scroll = (await p.evaluate('document.documentElement.scrollWidth')) as number;
  const client = (await p.evaluate('document.documentElement.clientWidth')) as number;
  expect(scroll, 'the page is no wider than the window').toBeLessThanOrEqual(client);
}

beforeAll(async () => {
  w = await startBrowserHarness({ context: { viewport: { width: 1280, height: 800 } }, withReaderAndSample: true });
  callback = await startCallbackServer();
  mcpUrl = new URL(`${w.base}/mcp`);
  customersBefore = await countCustomers();
  // Curated tools, so the consent page offers its Tools choice.
  for (const [name, sql] of [
    ['customers_by_country', 'SELECT first_name, last_name FROM customers WHERE country = :country'],
    ['newest_customers', 'SELECT first_name, last_name, created_at FROM customers ORDER BY created_at DESC LIMIT 5'],
  ]) {
    const parameters = sql.includes(':country') ? [{ name: 'country', type: 'string', required: true }] : [];
    const res = await w.h.call('POST', '/api/tools', w.h.adminKey, {
      name,
      description: `${name} (test)`,
      connectionId: 'sample',
      sql,
      parameters,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
}, 120_000);

afterAll(async () => {
  await callback?.close();
  await w?.close();
});

describe('an MCP client authorized through the consent page with Read-only ticked', () => {
  let provider: MemoryOAuthProvider;
  let page: Page;
  let context: BrowserContext;

  it('signs in, names the client and its redirect host, and returns a code to the client', async () => {
    const flow = await startFlow();
    provider = flow.provider;
    context = await w.browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    w.watch(page);
    await reachConsent(page, provider.authorizationUrl!, ADMIN);

    await expect(page.getByTestId('redirect-host').textContent()).resolves.toBe(new URL(callback.url).host);
    const readOnly = page.getByRole('checkbox', { name: /Read-only/ });
    await expect(readOnly.isDisabled()).resolves.toBe(false);
    await expect(page.getByLabel('Expires in (days)').inputValue()).resolves.toBe('30');
    await readOnly.check();
    const tools = page.getByRole('group', { name: 'Tools', exact: true });
    await tools.getByLabel('Only these:').check();
    await page.getByRole('group', { name: 'Tools to allow' }).getByLabel('customers_by_country').check();
    await noHorizontalOverflow(page);
    await shot(page, 'oauth-consent');

    await page.getByRole('button', { name: 'Allow' }).click();
    const answer = await callback.next();
    expect(answer.get('error')).toBeNull();
    expect(answer.get('state')).toBe(provider.expectedState);
    expect(answer.get('iss'), 'RFC 9207: the issuer rides with the code').toBe(w.base);
    await flow.transport.finishAuth(answer);
    expect(provider.saved?.access_token).toBeTruthy();
    expect(provider.saved?.scope ?? '').not.toContain('dbq:write');
    expect(w.pageErrors).toEqual([]);
  });

  it('calls tools over the 2026-07-28 revision, and a DELETE is refused with nothing changed', async () => {
    const client = modernClient();
    await client.connect(new ModernTransport(mcpUrl, { authProvider: provider }));
    try {
      const tools = await client.listTools();
      const names = tools.tools.map((t) => t.name);
      expect(names).toContain('execute_query');
      expect(names, 'the one tool ticked on the consent page').toContain('customers_by_country');
      expect(names).not.toContain('newest_customers');
      const read = await client.callTool({
        name: 'execute_query',
        arguments: { connectionId: 'sample', sql: 'SELECT count(*) AS n FROM customers' },
      });
      expect(isError(read), text(read)).toBe(false);
      const del = await client.callTool({ name: 'execute_query', arguments: { connectionId: 'sample', sql: 'DELETE FROM customers' } });
      expect(isError(del)).toBe(true);
      expect(text(del)).toMatch(/read/i);
    } finally {
      await client.close();
    }
    await expect(countCustomers()).resolves.toBe(customersBefore);
  });

  it('serves a 2025-11-25 session to the v1 SDK with the same access token, read-only too', async () => {
    const transport = new StreamableHTTPClientTransport(mcpUrl, {
      requestInit: { headers: { authorization: `Bearer ${provider.saved!.access_token}` } },
    });
    const client = new Client({ name: 'acme-agent-v1', version: '1' });
    await client.connect(transport);
    try {
      expect(transport.sessionId, 'a 2025-era session').toBeTruthy();
      expect(transport.protocolVersion).toBe('2025-11-25');
      const read = await client.callTool({
        name: 'execute_query',
        arguments: { connectionId: 'sample', sql: 'SELECT first_name FROM customers LIMIT 1' },
      });
      expect(isError(read), text(read)).toBe(false);
      const del = await client.callTool({ name: 'execute_query', arguments: { connectionId: 'sample', sql: 'DELETE FROM customers' } });
      expect(isError(del)).toBe(true);
    } finally {
      await client.close();
    }
    await expect(countCustomers()).resolves.toBe(customersBefore);
  });

  it('lists the app under Connected apps on the keys page, and Revoke ends its access', async () => {
    await page.goto(`${w.base}/settings/api-keys`);
    const row = page.getByRole('table', { name: 'Connected apps' }).getByRole('row').filter({ hasText: CLIENT_NAME });
    await poll(() => row.textContent()).toContain('Read-only');
    await expect(row.textContent()).resolves.toContain(new URL(callback.url).host);
    await shot(page, 'connected-apps');
    // On a phone the list scrolls inside its box; the page itself does not widen.
    await page.setViewportSize({ width: 390, height: 844 });
    await noHorizontalOverflow(page);
    await page.setViewportSize({ width: 1280, height: 800 });

    await row.getByRole('button', { name: `Revoke ${CLIENT_NAME}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await poll(() => page.getByText('No connected apps.').isVisible()).toBe(true);

    const after = await fetch(mcpUrl, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${provider.saved!.access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toMatch(/resource_metadata=/);
    expect(w.pageErrors).toEqual([]);
    await context.close();
  });
});

describe('a read_only user on a phone', () => {
  it('finds Read-only forced, the lifetime capped, the page fitting 390 px, and Deny returns access_denied with no grant made and the request closed', async () => {
    const limit = await w.h.call('PATCH', '/api/workspace', w.h.adminKey, { maxKeyDays: 20 });
    expect(limit.status).toBe(200);
    const { provider } = await startFlow();
    const context = await w.browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const page = await context.newPage();
    w.watch(page);
    await reachConsent(page, provider.authorizationUrl!, READER);

    const readOnly = page.getByRole('checkbox', { name: /Read-only/ });
    await expect(readOnly.isChecked()).resolves.toBe(true);
    await expect(readOnly.isDisabled()).resolves.toBe(true);
    // The workspace's longest key lifetime (set before this flow began) caps the default, and
    // a longer one cannot be sent.
    const days = page.getByLabel('Expires in (days)');
    await expect(days.inputValue()).resolves.toBe('20');
    await expect(page.getByText('At most 20 days in this workspace.').isVisible()).resolves.toBe(true);
    await days.fill('21');
    await poll(() => page.getByRole('button', { name: 'Allow' }).isDisabled()).toBe(true);
    await expect(page.getByText('A whole number of days from 1 to 20.').isVisible()).resolves.toBe(true);
    await days.fill('7');
    await days.blur();
    await noHorizontalOverflow(page);
    await shot(page, 'oauth-consent-phone');

    const consentUrl = page.url();
    await page.getByRole('button', { name: 'Deny' }).click();
    const answer = await callback.next();
    expect(answer.get('error')).toBe('access_denied');
    expect(answer.get('code')).toBeNull();
    // The browser's own navigation to the callback must have landed first, or the next goto is
    // interrupted by it (the callback server answers before the page's load event).
    await page.waitForURL(/\/callback\?error=access_denied/);
    // The back button (or a second tab) on an answered request: told so, nothing to click.
    await page.goto(consentUrl);
    await poll(() => page.getByRole('heading', { name: 'This request is no longer open' }).isVisible()).toBe(true);
    await expect(page.getByRole('button', { name: 'Allow' }).count()).resolves.toBe(0);
    const grants = await w.h.call('GET', '/api/oauth/grants', w.h.readerKey);
    expect(grants.status).toBe(200);
    expect(grants.body.data.grants).toEqual([]);
    expect(w.pageErrors).toEqual([]);
    await context.close();
  });
});
