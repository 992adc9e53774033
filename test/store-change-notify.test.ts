// Key and connection look-ups are cached in each process on the PostgreSQL store too,
// and the cache keeps authentication's promise: a key revoked, a user demoted or disabled, a
// connection edited or deleted — with the CLI, i.e. by another process — is honoured by every
// serving process within a second; with the LISTEN connection killed as well (it reconnects by
// itself, and a counter read every 500 ms covers the gap). A change made through a process
// applies to that process's very next request.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliActor } from '../src/audit/audit.ts';
import { loadConfig } from '../src/config.ts';
import { createConnection } from '../src/connections/connections.ts';
import { InvalidApiKeyError } from '../src/errors.ts';
import { createLogger } from '../src/logger.ts';
import { closeServices, createServices } from '../src/services.ts';
import { PgChangeFeed, LISTEN_APPLICATION_NAME } from '../src/store/pg-changes.ts';
import { openStore, type Store } from '../src/store/store.ts';
import { authenticateKey, createApiKey } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { createWorkspace, getWorkspace } from '../src/workspaces/workspaces.ts';
import { freshPostgresDatabase, PG_URL, tempDir } from './support/databases.ts';
import { freePort, http, removeDir, runCli, sharedEnv, startDbq, type DbqProcess } from './support/processes.ts';
import { sleep, until } from './support/wait.ts';

let store: { url: string; drop(): Promise<void> };
let env: Record<string, string>;
const dirs: string[] = [];
let a: DbqProcess;
let b: DbqProcess;
let admin: pg.Client;
const keys: Record<string, { id: string; secret: string }> = {};
const SLUGS = ['calm', 'killed'] as const;

beforeAll(async () => {
  store = await freshPostgresDatabase();
  const provisionDir = tempDir();
  dirs.push(provisionDir);
  env = sharedEnv({ storeUrl: store.url, dataDir: provisionDir });
  const svc = await createServices(loadConfig(env), { logger: createLogger('silent') });
  try {
    for (const slug of SLUGS) {
      await createWorkspace(svc.db, { slug, plan: 'enterprise' });
      const ws = await getWorkspace(svc.db, slug);
      for (const who of ['admin', 'revoked', 'demoted', 'disabled']) {
        await createUser(svc.db, { workspace: slug, email: `${who}@${slug}.test`, role: 'admin' }, cliActor());
        const { apiKey, secret } = await createApiKey(svc.db, { workspace: slug, email: `${who}@${slug}.test`, name: who });
        keys[`${slug}:${who}`] = { id: apiKey.id, secret };
      }
      const deps = { db: svc.db, secretBox: svc.secretBox, sqliteDir: svc.config.sqliteDir };
      await createConnection(deps, ws.id, { name: 'edited', url: PG_URL }, cliActor());
      await createConnection(deps, ws.id, { name: 'deleted', url: PG_URL }, cliActor());
    }
  } finally {
    await closeServices(svc);
  }
  const dirA = tempDir();
  const dirB = tempDir();
  dirs.push(dirA, dirB);
  [a, b] = await Promise.all([startDbq({ ...env, DBQ_DATA_DIR: dirA }), startDbq({ ...env, DBQ_DATA_DIR: dirB })]);
  admin = new pg.Client({ connectionString: store.url });
  await admin.connect();
}, 90_000);

afterAll(async () => {
  await admin?.end();
  await Promise.all([a?.stop(), b?.stop()]);
  await store?.drop();
  for (const dir of dirs) removeDir(dir);
});

const query = (p: DbqProcess, slug: string, who: string, connectionId: string, sql: string) =>
  http('POST', `${p.url}/w/${slug}/api/query`, keys[`${slug}:${who}`].secret, { connectionId, sql });
// Admin-only and harmless: an admin gets 400 (the empty body), anyone else 403.
const adminProbe = (p: DbqProcess, slug: string, who: string) =>
  http('POST', `${p.url}/w/${slug}/api/connections`, keys[`${slug}:${who}`].secret, {});

/** Polls both processes until `check` holds for each; returns how long that took (ms). */
async function honouredBy(procs: DbqProcess[], check: (p: DbqProcess) => Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (const p of procs) {
    while (!(await check(p))) {
      if (Date.now() - started > 3000) throw new Error('not honoured within 3 s');
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  return Date.now() - started;
}

/** Polls until `check` holds; returns how long that took (ms). */
const waitFor = (check: () => Promise<boolean>): Promise<number> => until('the condition', check, 3000);

async function listenerPids(): Promise<number[]> {
  const { rows } = await admin.query<{ pid: number }>(
    'select pid from pg_stat_activity where application_name = $1 and datname = current_database()',
    [LISTEN_APPLICATION_NAME],
  );
  return rows.map((r) => r.pid);
}

/** Every change the cache must honour, made with the CLI, warm caches in both processes first. */
async function changesHonoured(slug: string, beforeEach?: () => Promise<void>): Promise<Record<string, number>> {
  const procs = [a, b];
  const took: Record<string, number> = {};
  // Warm: every look-up below is in both processes' caches (twice: the second is a hit).
  for (let i = 0; i < 2; i++) {
    for (const p of procs) {
      expect((await query(p, slug, 'revoked', 'edited', 'SELECT 1')).status).toBe(200);
      expect((await adminProbe(p, slug, 'demoted')).status).toBe(400);
      expect((await query(p, slug, 'disabled', 'deleted', 'SELECT 1')).status).toBe(200);
      expect((await query(p, slug, 'admin', 'edited', 'CREATE TEMP TABLE IF NOT EXISTS cache_probe (x int)')).status).toBe(200);
    }
  }

  await beforeEach?.();
  await runCli(env, 'key', 'revoke', '--workspace', slug, keys[`${slug}:revoked`].id);
  took.revoke = await honouredBy(procs, async (p) => (await query(p, slug, 'revoked', 'edited', 'SELECT 1')).status === 401);

  await beforeEach?.();
  await runCli(env, 'user', 'set-role', '--workspace', slug, '--email', `demoted@${slug}.test`, '--role', 'read_only');
  took.demote = await honouredBy(procs, async (p) => (await adminProbe(p, slug, 'demoted')).status === 403);

  await beforeEach?.();
  await runCli(env, 'user', 'disable', '--workspace', slug, '--email', `disabled@${slug}.test`);
  took.disable = await honouredBy(procs, async (p) => (await query(p, slug, 'disabled', 'deleted', 'SELECT 1')).status === 401);

  await beforeEach?.();
  await runCli(env, 'connection', 'update', '--workspace', slug, '--connection', 'edited', '--read-only');
  took.edit = await honouredBy(
    procs,
    async (p) => (await query(p, slug, 'admin', 'edited', 'CREATE TEMP TABLE IF NOT EXISTS cache_probe (x int)')).status === 403,
  );

  await beforeEach?.();
  await runCli(env, 'connection', 'remove', '--workspace', slug, '--connection', 'deleted');
  took.delete = await honouredBy(procs, async (p) => (await query(p, slug, 'admin', 'deleted', 'SELECT 1')).status === 404);
  return took;
}

describe('look-ups cached per process on the PostgreSQL store', () => {
  it('both processes listen for store changes on a connection of their own', async () => {
    // They start listening with their first look-up.
    await Promise.all([a, b].map((p) => query(p, 'calm', 'admin', 'edited', 'SELECT 1')));
    await waitFor(async () => (await listenerPids()).length === 2);
  });

  it('honour a revocation, a demotion, a disabled user, an edited and a deleted connection (CLI) in both within 1 s', async () => {
    const took = await changesHonoured('calm');
    for (const [change, ms] of Object.entries(took)) expect(ms, change).toBeLessThan(1000);
  }, 120_000);

  it('the same with the LISTEN connections killed again and again throughout; they come back by themselves', async () => {
    const killer = new pg.Client({ connectionString: store.url });
    await killer.connect();
    const kill = async () => {
      await killer.query(
        'select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1 and datname = current_database()',
        [LISTEN_APPLICATION_NAME],
      );
    };
    // Every 100 ms, so the processes spend the test reconnecting, on the counter fallback, or
    // briefly listening — and before every change, so none is made while they listen.
    let killing = true;
    const loop = (async () => {
      while (killing) {
        await kill();
        await sleep(100);
      }
    })();
    let took: Record<string, number>;
    try {
      took = await changesHonoured('killed', kill);
    } finally {
      killing = false;
      await loop;
      await killer.end();
    }
    for (const [change, ms] of Object.entries(took)) expect(ms, change).toBeLessThan(1000);
    // The processes logged the outage (and, between kills, their return).
    for (const p of [a, b]) expect(p.logs.some((l) => String(l.msg).startsWith('store change notifications down'))).toBe(true);
    await waitFor(async () => (await listenerPids()).length === 2);
    // Neither process fell over.
    for (const p of [a, b]) expect(p.child.exitCode).toBeNull();
  }, 120_000);
});

describe('the change feed in one process', () => {
  let s: Store;
  beforeAll(async () => {
    s = await openStore({ dataDir: tempDir(), storeUrl: store.url });
    await createWorkspace(s.db, { slug: 'own', plan: 'enterprise' });
    await createUser(s.db, { workspace: 'own', email: 'own@own.test', role: 'admin' }, cliActor());
  });
  afterAll(async () => {
    await s.close();
  });

  it('caches a look-up while nothing changes, and applies its own write at the next look-up', async () => {
    const { apiKey, secret } = await createApiKey(s.db, { workspace: 'own', email: 'own@own.test', name: 'own' });
    s.epoch();
    await waitFor(async () => s.changes!.isListening);
    let loads = 0;
    const load = async () => ++loads;
    await s.memo('probe', load);
    await s.memo('probe', load);
    expect(loads).toBe(1);
    await authenticateKey(s.db, secret, s.memo);
    await authenticateKey(s.db, secret, s.memo);
    // No waiting for the notification: the very next look-up sees the revocation.
    await s.db.updateTable('api_keys').set({ revoked_at: new Date().toISOString() }).where('id', '=', apiKey.id).execute();
    await expect(authenticateKey(s.db, secret, s.memo)).rejects.toBeInstanceOf(InvalidApiKeyError);
  });

  it('a last_used_at write alone notifies nobody', async () => {
    // Let the previous test's own notification arrive (and a heartbeat read the counter) first:
    // quiet has no event of its own.
    await sleep(800);
    const before = s.epoch();
    await admin.query("update api_keys set last_used_at = '2026-01-01T00:00:00.000Z'");
    // An absence has no event to wait for: a notification would have arrived by now.
    await sleep(200);
    expect(s.epoch()).toBe(before);
    await admin.query("update workspaces set name = name where slug = 'own'");
    await waitFor(async () => s.epoch() !== before);
  });

  it('without a LISTEN connection, follows the counter row: a change is seen within 1 s', async () => {
    const pool = new pg.Pool({ connectionString: store.url, max: 1 });
    // Nothing listens on this port: the listener never connects, the fallback runs throughout.
    const feed = new PgChangeFeed({
      url: `postgres://postgres@127.0.0.1:${await freePort()}/x`,
      readCounter: async () => Number((await pool.query('select counter from dbq_store_changes')).rows[0].counter),
    });
    try {
      await feed.start();
      await waitFor(async () => feed.current() !== null);
      expect(feed.isListening).toBe(false);
      const before = feed.current();
      // An absence: no change is seen while nothing changes (over more than one counter read).
      await sleep(600);
      expect(feed.current()).toBe(before);
      await admin.query("update users set role = role where email = 'own@own.test'");
      const took = await waitFor(async () => feed.current() !== before);
      expect(took).toBeLessThan(1000);
    } finally {
      await feed.close();
      await pool.end();
    }
  });
});
