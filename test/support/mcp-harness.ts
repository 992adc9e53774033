// A listening dbq for MCP tests: the SDK's client transports need a real socket, so the app is
// built around the harness's services with the MCP plugin given a short keep-alive and a
// session registry the tests can watch, then bound to 127.0.0.1 on a free port. It has a
// SQLite connection `lite` (a file under the harness's sqlite dir) and a PostgreSQL
// connection `pg` (the machine's real server).
import { cliActor } from '../../src/audit/audit.ts';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport, type ClientOptions } from '@modelcontextprotocol/client';
import type { FastifyInstance } from 'fastify';
import { createConnection } from '../../src/connections/connections.ts';
import { buildApp } from '../../src/server/app.ts';
import { mcpPlugin, type McpOptions } from '../../src/mcp/plugin.ts';
import { McpSessions } from '../../src/mcp/sessions.ts';
import { createApiKey } from '../../src/workspaces/api-keys.ts';
import { createUser } from '../../src/workspaces/users.ts';
import { getWorkspace } from '../../src/workspaces/workspaces.ts';
import { createHarness, PG_URL, workspaceSqliteDir, type Harness } from './harness.ts';
import { until } from './wait.ts';

export type McpTransportName = 'sse' | 'streamable';
/** The stateless revision served by SDK v2 (src/mcp/modern-handlers.ts). */
export const MODERN_REVISION = '2026-07-28';
export const TRANSPORTS: McpTransportName[] = ['sse', 'streamable'];

export interface McpHarness {
  h: Harness;
  app: FastifyInstance;
  /** http://127.0.0.1:PORT */
  origin: string;
  sessions: McpSessions;
  /** Connects an SDK client. `workspace` picks `/w/{slug}`; `keyIn: 'query'` puts the key in
   * the /sse URL only (SSE), as clients configured with a bare URL do. */
  connect(transport: McpTransportName, key: string, opts?: { workspace?: string; keyIn?: 'header' | 'query' }): Promise<Client>;
  /** Connects an SDK v2 client pinned to the 2026-07-28 revision (no session, no initialize). */
  connectModern(key: string, opts?: { workspace?: string; client?: ClientOptions; fetch?: typeof fetch }): Promise<ModernClient>;
  /** A fresh key of a new user of `default`, for tests that revoke or disable it. */
  freshKey(role: 'admin' | 'read_only'): Promise<{ secret: string; keyId: string; email: string }>;
  close(): Promise<void>;
}

export async function createMcpHarness(opts: McpOptions = {}): Promise<McpHarness> {
  const h = await createHarness();
  const sessions = opts.sessions ?? new McpSessions();
  const app = await buildApp(h.svc, { plugins: [mcpPlugin({ keepAliveMs: 200, ...opts, sessions })] });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  const origin = `http://127.0.0.1:${address.port}`;

  const file = path.join(workspaceSqliteDir(h, 'default'), 'mcp.db');
  const lite = new Database(file);
  lite.exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL);
    CREATE TABLE orders (id INTEGER PRIMARY KEY, item_id INTEGER NOT NULL REFERENCES items(id), qty INTEGER);
    INSERT INTO items (name, price) VALUES ('apple', 1.5), ('pear', 2), ('plum', 0.75);`);
  lite.close();
  const ws = await getWorkspace(h.svc.db, 'default');
  const deps = { db: h.svc.db, secretBox: h.svc.secretBox, sqliteDir: h.config.sqliteDir };
  await createConnection(deps, ws.id, { name: 'lite', url: 'sqlite:mcp.db' }, cliActor());
  await createConnection(deps, ws.id, { name: 'pg', url: PG_URL }, cliActor());

  const clients: { close(): Promise<void> }[] = [];
  let users = 0;
  return {
    h,
    app,
    origin,
    sessions,
    async connect(transport, key, { workspace, keyIn = 'header' } = {}) {
      const base = `${origin}${workspace ? `/w/${workspace}` : ''}`;
      const headers = keyIn === 'header' ? { authorization: `Bearer ${key}` } : undefined;
      const client = new Client({ name: 'dbq-test', version: '1' });
      if (transport === 'sse') {
        const url = new URL(`${base}/sse${keyIn === 'query' ? `?api_key=${encodeURIComponent(key)}` : ''}`);
        await client.connect(new SSEClientTransport(url, { requestInit: { headers } }));
      } else {
        await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } }));
      }
      clients.push(client);
      return client;
    },
    async connectModern(key, { workspace, client: clientOptions, fetch: viaFetch } = {}) {
      const url = new URL(`${origin}${workspace ? `/w/${workspace}` : ''}/mcp`);
      const client = new ModernClient(
        { name: 'dbq-test-modern', version: '1' },
        { versionNegotiation: { mode: { pin: MODERN_REVISION } }, ...clientOptions },
      );
      await client.connect(new ModernTransport(url, { requestInit: { headers: { authorization: `Bearer ${key}` } }, fetch: viaFetch }));
      clients.push(client);
      return client;
    },
    async freshKey(role) {
      const email = `mcp-${++users}-${role}@acme.test`;
      await createUser(h.svc.db, { workspace: 'default', email, role }, cliActor());
      const { apiKey, secret } = await createApiKey(h.svc.db, { workspace: 'default', email, name: `mcp-${users}` });
      return { secret, keyId: apiKey.id, email };
    },
    async close() {
      await Promise.allSettled(clients.map((c) => c.close()));
      await app.close();
      await h.close();
    },
  };
}

/** structuredContent of a successful call; fails the test with the error text otherwise. */
export function dataOf(result: unknown): any {
  const r = result as CallToolResult;
  if (r.isError) throw new Error(`tool call failed: ${textOf(r)}`);
  return r.structuredContent;
}

export function textOf(result: unknown): string {
  const r = result as CallToolResult;
  return r.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('\n');
}

/** Polls until `check` holds (session bookkeeping happens on close events). */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 3000): Promise<void> {
  await until('the condition', check, timeoutMs);
}
