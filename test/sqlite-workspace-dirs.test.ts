// SQLite files belong to one workspace: `sqlite:<file>` resolves inside
// DBQ_SQLITE_DIR/<workspace slug>/ only. Before, every workspace shared DBQ_SQLITE_DIR, so an
// admin of workspace `other` could add {"url":"sqlite:shop.db"} and read and write `default`'s
// file, and the create/test answers told which file names existed.
import { cliActor } from '../src/audit/audit.ts';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSample } from '../src/cli/serve.ts';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { closeServices, createServices } from '../src/services.ts';
import { openStore } from '../src/store/store.ts';
import { createApiKey } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { createWorkspace, ensureDefaultWorkspace } from '../src/workspaces/workspaces.ts';
import { createHarness, tempDir, workspaceSqliteDir, type Harness } from './support/harness.ts';

let h: Harness;
let mine: string;

function makeDb(file: string, secret: string): void {
  const db = new Database(file);
  db.exec(`CREATE TABLE t (secret text); INSERT INTO t VALUES ('${secret}')`);
  db.close();
}

/** What a create or test answer says, without what necessarily differs (ids, names, times). */
function comparable(body: any): unknown {
  return JSON.parse(
    JSON.stringify(body, (key, value) =>
      ['id', 'name', 'database', 'createdAt', 'updatedAt', 'latencyMs'].includes(key) ? undefined : value,
    ),
  );
}

beforeAll(async () => {
  h = await createHarness();
  mine = workspaceSqliteDir(h, 'default');
  makeDb(path.join(mine, 'shop.db'), 'default-secret');
});
afterAll(async () => {
  await h?.close();
});

describe('SQLite files per workspace', () => {
  it("resolves sqlite:<file> inside the caller's workspace directory", async () => {
    expect((await h.call('POST', '/api/connections', h.adminKey, { name: 'shop', url: 'sqlite:shop.db' })).status).toBe(201);
    const res = await h.call('POST', '/api/query', h.adminKey, { connectionId: 'shop', sql: 'SELECT secret FROM t' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.rows).toEqual([['default-secret']]);
  });

  it("never opens another workspace's file: by name, ../slug/, absolute path, symlink", async () => {
    const theirs = path.join(mine, 'shop.db');
    fs.symlinkSync(theirs, path.join(workspaceSqliteDir(h, 'other'), 'link.db'));
    fs.symlinkSync(mine, path.join(workspaceSqliteDir(h, 'other'), 'linkdir'));
    const attempts: Array<[string, number]> = [
      ['shop.db', 201], // resolves to other's own (missing) shop.db
      ['default/shop.db', 400], // other/default/ does not exist
      ['../default/shop.db', 400],
      ['./../default/shop.db', 400],
      [theirs, 400],
      ['link.db', 400],
      ['linkdir/shop.db', 400],
    ];
    for (const [database, status] of attempts) {
      const name = `try-${attempts.findIndex(([d]) => d === database)}`;
      const created = await h.call('POST', '/w/other/api/connections', h.otherKey, { name, engine: 'sqlite', database });
      expect(created.status, `${database}: ${JSON.stringify(created.body)}`).toBe(status);
      const adHoc = await h.call('POST', '/w/other/api/connections/test', h.otherKey, { engine: 'sqlite', database });
      if (status === 400) {
        expect(adHoc.status, database).toBe(400);
        continue;
      }
      expect(adHoc.body.data.ok, database).toBe(false);
      for (const sql of ['SELECT secret FROM t', "INSERT INTO t VALUES ('from-other')"]) {
        const res = await h.call('POST', '/w/other/api/query', h.otherKey, { connectionId: name, sql });
        expect(res.status, `${database}: ${sql}`).toBe(502);
        expect(JSON.stringify(res.body)).not.toContain('default-secret');
      }
      const tested = await h.call('POST', '/w/other/api/connections/test', h.otherKey, { connectionId: name });
      expect(tested.body.data.ok, database).toBe(false);
    }
    const db = new Database(theirs, { readonly: true });
    expect(db.prepare('SELECT secret FROM t').all()).toEqual([{ secret: 'default-secret' }]);
    db.close();
  });

  it('answers the same for a file in another workspace and a file that exists nowhere', async () => {
    const pairs: Array<[string, string]> = [
      ['shop.db', 'nowhere.db'],
      ['../default/shop.db', '../default/nowhere.db'],
      [path.join(mine, 'shop.db'), path.join(mine, 'nowhere.db')],
      ['../default', '../nowhere'],
    ];
    for (const [i, [exists, missing]] of pairs.entries()) {
      const a = await h.call('POST', '/w/other/api/connections', h.otherKey, { name: `same-a${i}`, engine: 'sqlite', database: exists });
      const b = await h.call('POST', '/w/other/api/connections', h.otherKey, { name: `same-b${i}`, engine: 'sqlite', database: missing });
      expect([a.status, comparable(a.body)], exists).toEqual([b.status, comparable(b.body)]);
      const ta = await h.call('POST', '/w/other/api/connections/test', h.otherKey, { engine: 'sqlite', database: exists });
      const tb = await h.call('POST', '/w/other/api/connections/test', h.otherKey, { engine: 'sqlite', database: missing });
      expect([ta.status, comparable(ta.body)], exists).toEqual([tb.status, comparable(tb.body)]);
      for (const body of [a.body, ta.body]) {
        expect(JSON.stringify(body)).not.toContain(h.config.sqliteDir);
        expect(JSON.stringify(body)).not.toContain('default');
      }
      if (a.status === 201) {
        const sa = await h.call('POST', '/w/other/api/connections/test', h.otherKey, { connectionId: `same-a${i}` });
        const sb = await h.call('POST', '/w/other/api/connections/test', h.otherKey, { connectionId: `same-b${i}` });
        expect(comparable(sa.body), exists).toEqual(comparable(sb.body));
        expect(sa.body.data.ok).toBe(false);
      }
    }
  });

  it('puts the built-in sample in the default workspace', async () => {
    await ensureSample(h.svc);
    expect(fs.existsSync(path.join(h.config.sqliteDir, 'default', 'sample.db'))).toBe(true);
    expect(fs.existsSync(path.join(h.config.sqliteDir, 'sample.db'))).toBe(false);
    const res = await h.call('POST', '/api/query', h.adminKey, { connectionId: 'sample', sql: 'SELECT count(*) AS n FROM products' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.rows[0][0]).toBeGreaterThan(0);
    expect((await h.call('POST', '/api/connections/test', h.readerKey, { connectionId: 'sample' })).body.data.ok).toBe(true);
    // The same name from another workspace is that workspace's own (missing) file.
    const other = await h.call('POST', '/w/other/api/connections/test', h.otherKey, { engine: 'sqlite', database: 'sample.db' });
    expect(other.body.data.ok).toBe(false);
  });

  it('shows and creates each workspace directory from the CLI', async () => {
    const run = promisify(execFile);
    const dbq = async (...args: string[]) =>
      JSON.parse(
        (await run('./bin/dbq', [...args, '--json'], { env: { ...process.env, DBQ_DATA_DIR: h.dataDir }, timeout: 30_000 })).stdout,
      );
    const created = await dbq('workspace', 'create', 'dirs-ws');
    expect(created.workspace.sqliteDir).toBe(path.join(h.config.sqliteDir, 'dirs-ws'));
    expect(fs.statSync(created.workspace.sqliteDir).isDirectory()).toBe(true);
    const listed = await dbq('workspace', 'list');
    const dirs = Object.fromEntries(listed.workspaces.map((w: any) => [w.slug, w.sqliteDir]));
    expect(dirs).toMatchObject({
      default: path.join(h.config.sqliteDir, 'default'),
      other: path.join(h.config.sqliteDir, 'other'),
      'dirs-ws': path.join(h.config.sqliteDir, 'dirs-ws'),
    });
  });
});

describe('upgrading: connections made when DBQ_SQLITE_DIR was shared', () => {
  let old: Harness;
  let acmeKey: string;
  let root: string;

  beforeAll(async () => {
    // The layout of a store from before per-workspace directories: files directly in
    // DBQ_SQLITE_DIR, records naming them relative to it (or by an absolute path inside it).
    const dataDir = tempDir('dbq-upgrade-');
    root = loadConfig({ DBQ_DATA_DIR: dataDir }).sqliteDir;
    fs.mkdirSync(root, { recursive: true });
    makeDb(path.join(root, 'legacy.db'), 'acme-legacy');
    makeDb(path.join(root, 'shared.db'), 'shared-first');
    makeDb(path.join(root, 'abs.db'), 'acme-abs');
    fs.mkdirSync(path.join(root, 'nested'));
    makeDb(path.join(root, 'nested', 'deep.db'), 'acme-deep');
    makeDb(path.join(root, 'sample.db'), 'old-sample');
    const store = await openStore({ dataDir, storeUrl: null });
    const def = await ensureDefaultWorkspace(store.db);
    const acme = await createWorkspace(store.db, { slug: 'acme', plan: 'enterprise' });
    const insert = async (workspaceId: string, name: string, database: string, createdAt: string) => {
      const at = new Date(createdAt).toISOString();
      await store.db
        .insertInto('connections')
        .values({
          id: `conn_legacy_${name}_${workspaceId}`,
          workspace_id: workspaceId,
          name,
          engine: 'sqlite',
          grants_everyone: 1,
          host: null,
          port: null,
          database,
          username: null,
          ssl: 0,
          read_only: 0,
          max_connections: 10,
          secret: null,
          read_username: null,
          read_access: null,
          created_at: at,
          updated_at: at,
        })
        .execute();
    };
    await insert(acme.id, 'legacy', 'legacy.db', '2024-01-01');
    await insert(acme.id, 'shared', 'shared.db', '2024-01-02'); // the first to name it owns it
    await insert(def.id, 'shared', './shared.db', '2024-01-03');
    await insert(acme.id, 'abs', path.join(root, 'abs.db'), '2024-01-04');
    await insert(acme.id, 'deep', 'nested/deep.db', '2024-01-05');
    await insert(def.id, 'sample', 'sample.db', '2024-01-06');
    await store.close();

    old = await createHarness({ DBQ_DATA_DIR: dataDir });
    await createUser(old.svc.db, { workspace: 'acme', email: 'a@acme.test', role: 'admin' }, cliActor());
    acmeKey = (await createApiKey(old.svc.db, { workspace: 'acme', email: 'a@acme.test', name: 'k' })).secret;
  });
  afterAll(async () => {
    await old?.close();
  });

  const read = async (key: string, slug: string, connectionId: string) =>
    old.call('POST', `/w/${slug}/api/query`, key, { connectionId, sql: 'SELECT secret FROM t' });

  it("moves each file into its workspace's directory at start, and the records keep working", async () => {
    for (const [name, secret] of [
      ['legacy', 'acme-legacy'],
      ['shared', 'shared-first'],
      ['abs', 'acme-abs'],
      ['deep', 'acme-deep'],
    ]) {
      const res = await read(acmeKey, 'acme', name);
      expect(res.status, `${name}: ${JSON.stringify(res.body)}`).toBe(200);
      expect(res.body.data.rows).toEqual([[secret]]);
    }
    expect(fs.existsSync(path.join(root, 'acme', 'legacy.db'))).toBe(true);
    expect(fs.existsSync(path.join(root, 'acme', 'nested', 'deep.db'))).toBe(true);
    expect(fs.existsSync(path.join(root, 'legacy.db'))).toBe(false);
    // An absolute path inside the old directory is now relative to the workspace's.
    const abs = (await old.call('GET', '/w/acme/api/connections', acmeKey)).body.data.connections.find((c: any) => c.name === 'abs');
    expect(abs.database).toBe('abs.db');
  });

  it('gives a file two workspaces named to the first record only, and copies it nowhere', async () => {
    const res = await read(old.adminKey, 'default', 'shared');
    expect(res.status).toBe(502);
    expect(JSON.stringify(res.body)).not.toContain('shared-first');
    expect(fs.existsSync(path.join(root, 'default', 'shared.db'))).toBe(false);
  });

  it("moves an old sample into default's directory", async () => {
    const res = await read(old.adminKey, 'default', 'sample');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.rows).toEqual([['old-sample']]);
    expect(fs.existsSync(path.join(root, 'default', 'sample.db'))).toBe(true);
  });

  it('migrates once: a file dropped in the old place later is not picked up', async () => {
    makeDb(path.join(root, 'late.db'), 'late');
    expect((await old.call('POST', '/w/acme/api/connections', acmeKey, { name: 'late', url: 'sqlite:late.db' })).status).toBe(201);
    const svc = await createServices(old.config, { logger: createLogger('silent') });
    await closeServices(svc);
    expect(fs.existsSync(path.join(root, 'late.db'))).toBe(true);
    expect(fs.existsSync(path.join(root, 'acme', 'late.db'))).toBe(false);
    expect((await read(acmeKey, 'acme', 'late')).status).toBe(502);
  });
});
