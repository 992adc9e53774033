// Builds a real dbq (store, services, Fastify app) in a temp data dir for one test file.
// Nothing is mocked: the store is a real SQLite file (or a fresh PostgreSQL database), and
// connections point at the machine's real PostgreSQL, MariaDB and SQLite.
import { cliActor } from '../../src/audit/audit.ts';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { freshPostgresDatabase, tempDir } from './databases.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { buildApp } from '../../src/server/app.ts';
import { frontDoors } from '../../src/server/front-doors.ts';
import { createLogger } from '../../src/logger.ts';
import { closeServices, createServices, type Services } from '../../src/services.ts';
import { createApiKey } from '../../src/workspaces/api-keys.ts';
import { createUser } from '../../src/workspaces/users.ts';
import { createWorkspace, ensureDefaultWorkspace, setWorkspacePlan } from '../../src/workspaces/workspaces.ts';

export { PG_URL, MYSQL_URL, tempDir, freshPostgresDatabase } from './databases.ts';

export interface Harness {
  svc: Services;
  app: FastifyInstance;
  config: Config;
  dataDir: string;
  /** Keys of workspace `default`. */
  adminKey: string;
  readerKey: string;
  /** A second workspace `other` with its own admin, for isolation tests. */
  otherKey: string;
  close(): Promise<void>;
  /** inject() with the Bearer header and JSON body. */
  call(
    method: string,
    url: string,
    key: string | null,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: any; headers: Record<string, unknown> }>;
}

/** DBQ_SQLITE_DIR/<slug>/, created if need be: the only place a workspace's `sqlite:<file>`
 * connections resolve in, so a test's SQLite files go there. */
export function workspaceSqliteDir(h: { config: Config }, slug: string): string {
  const dir = path.join(h.config.sqliteDir, slug);
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

/** Harness.call for any app: inject() with the Bearer header and a JSON body; the answer's body
 * parsed when it is JSON (a second server on the same store uses it too). */
export function injectCall(app: FastifyInstance): Harness['call'] {
  return async (method, url, key, body, headers = {}) => {
    const res = await app.inject({
      method: method as any,
      url,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body !== undefined && typeof body !== 'string' ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      payload: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    let parsed: unknown = res.body;
    try {
      parsed = JSON.parse(res.body);
    } catch {
      // non-JSON bodies (metrics, docs) stay text
    }
    return { status: res.statusCode, body: parsed, headers: res.headers as Record<string, unknown> };
  };
}

export async function createHarness(env: Record<string, string> = {}, opts: { logs?: string[] } = {}): Promise<Harness> {
  const dataDir = tempDir();
  const config = loadConfig({ DBQ_DATA_DIR: dataDir, DBQ_LOG_LEVEL: opts.logs ? 'info' : 'silent', ...env });
  fs.mkdirSync(config.sqliteDir, { recursive: true });
  const destination = opts.logs ? { write: (line: string) => void opts.logs!.push(line) } : undefined;
  const svc = await createServices(config, { logger: createLogger(config.logLevel, destination as any) });
  await ensureDefaultWorkspace(svc.db);
  // Suites that replay dozens of statements must not trip the free plan's 60 requests per
  // minute; the limits themselves are proven in test/rate-limit*.test.ts.
  await setWorkspacePlan(svc.db, 'default', 'enterprise', cliActor());
  await createWorkspace(svc.db, { slug: 'other', plan: 'professional' });
  await createUser(svc.db, { workspace: 'default', email: 'admin@acme.test', role: 'admin', password: 'correct horse' }, cliActor());
  await createUser(svc.db, { workspace: 'default', email: 'reader@acme.test', role: 'read_only' }, cliActor());
  await createUser(svc.db, { workspace: 'other', email: 'admin@other.test', role: 'admin' }, cliActor());
  const adminKey = (await createApiKey(svc.db, { workspace: 'default', email: 'admin@acme.test', name: 'admin-key' })).secret;
  const readerKey = (await createApiKey(svc.db, { workspace: 'default', email: 'reader@acme.test', name: 'reader-key' })).secret;
  const otherKey = (await createApiKey(svc.db, { workspace: 'other', email: 'admin@other.test', name: 'other-key' })).secret;
  const app = await buildApp(svc, frontDoors());
  return {
    svc,
    app,
    config,
    dataDir,
    adminKey,
    readerKey,
    otherKey,
    async close() {
      await app.close();
      await closeServices(svc);
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
    call: injectCall(app),
  };
}

/** A harness on a fresh PostgreSQL store (a database of its own); close() drops it too. */
export async function createPgStoreHarness(env: Record<string, string> = {}): Promise<Harness> {
  const fresh = await freshPostgresDatabase();
  const h = await createHarness({ DBQ_STORE_URL: fresh.url, ...env });
  return {
    ...h,
    async close() {
      await h.close();
      await fresh.drop();
    },
  };
}
