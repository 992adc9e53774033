// History entries are group-committed (one INSERT per event-loop turn) on the
// PostgreSQL store as on SQLite, and a response goes out only once its entry is committed. So
// a process told to stop (SIGTERM) in the middle of a load loses no entry: every request that
// was answered 200 has its entry in the store after the process has exited.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliActor } from '../src/audit/audit.ts';
import { loadConfig } from '../src/config.ts';
import { createConnection } from '../src/connections/connections.ts';
import { createLogger } from '../src/logger.ts';
import { closeServices, createServices } from '../src/services.ts';
import { createApiKey } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { createWorkspace, getWorkspace } from '../src/workspaces/workspaces.ts';
import { freshPostgresDatabase, PG_URL, tempDir } from './support/databases.ts';
import { removeDir, sharedEnv, startDbq, type DbqProcess } from './support/processes.ts';

let store: { url: string; drop(): Promise<void> };
let env: Record<string, string>;
let secret: string;
const dirs: string[] = [];
let proc: DbqProcess | undefined;

beforeAll(async () => {
  store = await freshPostgresDatabase();
  const dir = tempDir();
  dirs.push(dir);
  env = sharedEnv({ storeUrl: store.url, dataDir: dir });
  const svc = await createServices(loadConfig(env), { logger: createLogger('silent') });
  try {
    await createWorkspace(svc.db, { slug: 'load', plan: 'enterprise' });
    await createUser(svc.db, { workspace: 'load', email: 'a@load.test', role: 'admin' }, cliActor());
    const ws = await getWorkspace(svc.db, 'load');
    await createConnection(
      { db: svc.db, secretBox: svc.secretBox, sqliteDir: svc.config.sqliteDir },
      ws.id,
      { name: 'pg', url: PG_URL },
      cliActor(),
    );
    secret = (await createApiKey(svc.db, { workspace: 'load', email: 'a@load.test', name: 'load' })).secret;
  } finally {
    await closeServices(svc);
  }
}, 60_000);

afterAll(async () => {
  await proc?.stop();
  await store?.drop();
  for (const dir of dirs) removeDir(dir);
});

describe('history on the PostgreSQL store across SIGTERM', () => {
  it('every request answered 200 before and during shutdown has its history entry', async () => {
    proc = await startDbq(env);
    const p = proc;
    const answered: string[] = [];
    let firstOther: string | undefined;
    let next = 0;
    let stop = false;
    const exited = new Promise<number | null>((resolve) => p.child.once('exit', (code) => resolve(code)));
    const client = async () => {
      while (!stop) {
        const sql = `SELECT ${next++} AS n`;
        try {
          const res = await fetch(`${p.url}/w/load/api/query`, {
            method: 'POST',
            headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
            body: JSON.stringify({ connectionId: 'pg', sql }),
          });
          await res.arrayBuffer();
          if (res.status === 200) answered.push(sql);
          else firstOther ??= `${res.status}`;
        } catch {
          // Refused or reset once the server stops accepting: not answered.
          await new Promise((r) => setTimeout(r, 5));
        }
      }
    };
    const clients = Array.from({ length: 24 }, client);
    // Load for a while (past the first, slower, requests), then SIGTERM in the middle of it; the
    // clients keep going until the process has exited.
    const loading = Date.now();
    while (answered.length < 200 && Date.now() - loading < 20_000) await new Promise((r) => setTimeout(r, 50));
    expect(answered.length, `first non-200: ${firstOther}`).toBeGreaterThanOrEqual(200);
    const before = answered.length;
    p.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    stop = true;
    await Promise.all(clients);
    expect(answered.length).toBeGreaterThan(before);

    const c = new pg.Client({ connectionString: store.url });
    await c.connect();
    try {
      const { rows } = await c.query<{ sql: string }>("select sql from query_history where sql like 'SELECT % AS n'");
      const stored = new Set(rows.map((r) => r.sql));
      const lost = answered.filter((sql) => !stored.has(sql));
      expect(lost).toEqual([]);
      // Nothing written twice either; entries of requests cut off mid-answer may exceed the 200s.
      expect(stored.size).toBe(rows.length);
      expect(rows.length).toBeGreaterThanOrEqual(answered.length);
    } finally {
      await c.end();
    }
  }, 60_000);
});
