// dbq secret rotate as operators run it, against real stores: every sealed value re-sealed
// under a new key, the key file replaced, a server started before the rotation still opening
// the secrets after it (it follows the key files), and no secret lost when the rotation is
// stopped — killed while it waits for the store, or failing right after its commit — with a
// second run finishing the same rotation. With DBQ_SECRET_KEY (PostgreSQL store): the new key
// from standard input, a second run with it changing nothing, dbq serving with the new key.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSecretBox, parseSecretKey } from '../src/secrets/secret-box.ts';
import { rotateSecretKey } from '../src/secrets/rotate.ts';
import { openStore } from '../src/store/store.ts';
import { freshPostgresDatabase, tempDir } from './support/databases.ts';
import { runDbq, type CliOutcome } from './support/cli.ts';
import { http, startDbq } from './support/processes.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const PG = (password: string) => `postgres://postgres:${password}@127.0.0.1:5432/test`;

/** bin/dbq with `input` on standard input. */
function runWithStdin(env: Record<string, string>, args: string[], input: string): Promise<CliOutcome> {
  return new Promise((resolve) => {
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DBQ_')));
    const child = spawn('./bin/dbq', args, { cwd: ROOT, env: { ...base, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
    child.stdin.end(input);
  });
}

const keyOf = (dataDir: string, file = 'secret.key') => parseSecretKey(fs.readFileSync(path.join(dataDir, file), 'utf8'))!;

/** Every sealed connection secret of a SQLite store, as {id, sealed}. */
function sealedValues(dataDir: string): Array<{ id: string; secret: string }> {
  const db = new SqliteDatabase(path.join(dataDir, 'dbq.sqlite'), { readonly: true });
  try {
    return db.prepare('select id, secret from connections where secret is not null order by id').all() as Array<{
      id: string;
      secret: string;
    }>;
  } finally {
    db.close();
  }
}

/** Which of `keys` opens every sealed value (index), asserting they all open with the same one. */
function sealedUnder(dataDir: string, keys: Buffer[]): number {
  const values = sealedValues(dataDir);
  expect(values.length).toBeGreaterThan(0);
  const which = values.map((v) =>
    keys.findIndex((k) => {
      try {
        createSecretBox(k).open(v.secret, v.id);
        return true;
      } catch {
        return false;
      }
    }),
  );
  expect(new Set(which).size, `values under keys ${which.join(',')}`).toBe(1);
  return which[0]!;
}

async function sqliteStoreWithSecrets(): Promise<{ dataDir: string; adminKey: string }> {
  const dataDir = tempDir('dbq-rotate-');
  for (const [name, pw] of [
    ['pg', 'first-pw'],
    ['pg2', 'second-pw'],
  ]) {
    const res = await runDbq(dataDir, ['--init', 'connection', 'add', '--workspace', 'default', '--name', name, '--url', PG(pw)]);
    expect(res.code, res.stderr).toBe(0);
  }
  await runDbq(dataDir, ['user', 'create', '--workspace', 'default', '--email', 'ops@acme.test', '--role', 'admin']);
  const key = await runDbq(dataDir, ['key', 'create', '--workspace', 'default', '--user', 'ops@acme.test', '--name', 'ops', '--json']);
  expect(key.code, key.stderr).toBe(0);
  // An SSO client secret: sealed too, bound to the workspace rather than a row id.
  const sso = await runWithStdin(
    { DBQ_DATA_DIR: dataDir },
    [
      'workspace',
      'set-sso',
      '--workspace',
      'default',
      '--issuer',
      'https://idp.example.test',
      '--client-id',
      'cid',
      '--client-secret-stdin',
      '--allowed-domain',
      'acme.test',
    ],
    'sso-client-secret\n',
  );
  expect(sso.code, sso.stderr).toBe(0);
  return { dataDir, adminKey: JSON.parse(key.stdout).secret };
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe('dbq secret rotate with the data dir key file', { timeout: 120_000 }, () => {
  let dataDir: string;
  let adminKey: string;

  beforeAll(async () => {
    ({ dataDir, adminKey } = await sqliteStoreWithSecrets());
    dirs.push(dataDir);
  });

  it('re-seals every secret under a new key and replaces secret.key; a server started before keeps opening them', async () => {
    const old = keyOf(dataDir);
    const before = sealedValues(dataDir);
    const server = await startDbq({ DBQ_DATA_DIR: dataDir, DBQ_LOG_LEVEL: 'warn' });
    try {
      const q0 = await http('POST', `${server.url}/api/query`, adminKey, { connectionId: 'pg', sql: 'SELECT 1 AS one' });
      expect(q0.status, JSON.stringify(q0.body)).toBe(200);
      const res = await runDbq(dataDir, ['secret', 'rotate']);
      expect(res.code, res.stderr).toBe(0);
      expect(res.stdout).toContain('Rotated the secret key: 3 sealed value(s) now under the new key.');
      expect(res.stdout).toContain('connections.secret: 2 re-sealed');
      expect(res.stdout).toContain('workspace_sso.client_secret: 1 re-sealed');
      const next = keyOf(dataDir);
      expect(next.equals(old)).toBe(false);
      expect(fs.existsSync(path.join(dataDir, 'secret.key.new'))).toBe(false);
      expect(fs.statSync(path.join(dataDir, 'secret.key')).mode & 0o777).toBe(0o600);
      expect(sealedUnder(dataDir, [next, old])).toBe(0);
      expect(sealedValues(dataDir).map((v) => v.secret)).not.toEqual(before.map((v) => v.secret));
      const db = new SqliteDatabase(path.join(dataDir, 'dbq.sqlite'), { readonly: true });
      const sso = db.prepare('select workspace_id, client_secret from workspace_sso').get() as {
        workspace_id: string;
        client_secret: string;
      };
      db.close();
      expect(createSecretBox(next).open(sso.client_secret, `sso:${sso.workspace_id}`)).toBe('sso-client-secret');
      // The running server: a new pool for pg2 opens its re-sealed password with the new key.
      const q1 = await http('POST', `${server.url}/api/query`, adminKey, { connectionId: 'pg2', sql: 'SELECT 2 AS two' });
      expect(q1.status, JSON.stringify(q1.body)).toBe(200);
      // A connection it saves now is sealed under the new key too.
      const added = await http('POST', `${server.url}/api/connections`, adminKey, { name: 'pg3', url: PG('third-pw') });
      expect(added.status, JSON.stringify(added.body)).toBe(201);
      expect(sealedUnder(dataDir, [next, old])).toBe(0);
    } finally {
      await server.stop();
    }
  });

  it('killed while it waits for the store: nothing re-sealed, servers keep working, a second run finishes with the same new key', async () => {
    const old = keyOf(dataDir);
    // Another writer holds the store, so the rotation stops inside its transaction.
    const holder = new SqliteDatabase(path.join(dataDir, 'dbq.sqlite'));
    holder.exec('begin immediate');
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DBQ_')));
    const child = spawn('./bin/dbq', ['secret', 'rotate'], { cwd: ROOT, env: { ...base, DBQ_DATA_DIR: dataDir }, stdio: 'ignore' });
    const nextFile = path.join(dataDir, 'secret.key.new');
    const deadline = Date.now() + 20_000;
    while (!fs.existsSync(nextFile) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(fs.existsSync(nextFile)).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    holder.exec('rollback');
    holder.close();

    const pending = keyOf(dataDir, 'secret.key.new');
    expect(keyOf(dataDir).equals(old)).toBe(true);
    expect(sealedUnder(dataDir, [old, pending])).toBe(0);
    const server = await startDbq({ DBQ_DATA_DIR: dataDir, DBQ_LOG_LEVEL: 'warn' });
    try {
      const q = await http('POST', `${server.url}/api/query`, adminKey, { connectionId: 'pg', sql: 'SELECT 1 AS one' });
      expect(q.status, JSON.stringify(q.body)).toBe(200);
    } finally {
      await server.stop();
    }
    const again = await runDbq(dataDir, ['secret', 'rotate']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('Finished an interrupted rotation: 4 sealed value(s)');
    expect(keyOf(dataDir).equals(pending)).toBe(true);
    expect(sealedUnder(dataDir, [pending, old])).toBe(0);
    expect(fs.existsSync(nextFile)).toBe(false);
  });

  it('stopped after its commit, before the key file moved: a server opens with both keys, a second run finishes', async () => {
    const old = keyOf(dataDir);
    const store = await openStore({ dataDir, storeUrl: null });
    try {
      await expect(
        rotateSecretKey(store, {
          dataDir,
          configuredKey: null,
          newKey: null,
          afterReseal: () => {
            throw new Error('power cut');
          },
        }),
      ).rejects.toThrow('power cut');
    } finally {
      await store.close();
    }
    const pending = keyOf(dataDir, 'secret.key.new');
    expect(keyOf(dataDir).equals(old)).toBe(true);
    expect(sealedUnder(dataDir, [old, pending])).toBe(1);
    const server = await startDbq({ DBQ_DATA_DIR: dataDir, DBQ_LOG_LEVEL: 'warn' });
    try {
      const q = await http('POST', `${server.url}/api/query`, adminKey, { connectionId: 'pg3', sql: 'SELECT 3 AS three' });
      expect(q.status, JSON.stringify(q.body)).toBe(200);
    } finally {
      await server.stop();
    }
    const again = await runDbq(dataDir, ['secret', 'rotate', '--json']);
    expect(again.code, again.stderr).toBe(0);
    const out = JSON.parse(again.stdout);
    expect(out.resumed).toBe(true);
    expect(out.columns).toContainEqual({ table: 'connections', column: 'secret', resealed: 0, alreadyNew: 3 });
    expect(keyOf(dataDir).equals(pending)).toBe(true);
  });

  it('a value no key opens stops the rotation with nothing changed', async () => {
    const key = keyOf(dataDir);
    const stranger = createSecretBox(randomBytes(32));
    const db = new SqliteDatabase(path.join(dataDir, 'dbq.sqlite'));
    const row = db.prepare("select id, secret from connections where name = 'pg2'").get() as { id: string; secret: string };
    db.prepare('update connections set secret = ? where id = ?').run(stranger.seal('{"password":"x"}', row.id), row.id);
    db.close();
    const before = sealedValues(dataDir);
    const res = await runDbq(dataDir, ['secret', 'rotate']);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(`connections.secret of ${row.id} opens with neither the current key nor the new one: nothing was changed`);
    expect(sealedValues(dataDir)).toEqual(before);
    expect(keyOf(dataDir).equals(key)).toBe(true);
    const fix = new SqliteDatabase(path.join(dataDir, 'dbq.sqlite'));
    fix.prepare('update connections set secret = ? where id = ?').run(row.secret, row.id);
    fix.close();
    // The interrupted rotation's new key is still beside the old one; a run finishes it.
    expect((await runDbq(dataDir, ['secret', 'rotate'])).code).toBe(0);
  });

  it('--help says what is re-sealed, what happens to the key file and the DBQ_SECRET_KEY way', async () => {
    const res = await runDbq(dataDir, ['secret', 'rotate', '--help']);
    expect(res.stdout).toContain('re-seal every secret in the store');
    expect(res.stdout).toContain('secret.key.new');
    expect(res.stdout).toContain('--new-key-stdin');
    expect(res.stdout).toContain('Interrupted: run it again');
  });
});

describe('dbq secret rotate with DBQ_SECRET_KEY on a PostgreSQL store', { timeout: 120_000 }, () => {
  let env: Record<string, string>;
  let drop: () => Promise<void>;
  let adminKey: string;
  const oldKey = randomBytes(32).toString('hex');
  const newKey = randomBytes(32).toString('hex');

  beforeAll(async () => {
    const db = await freshPostgresDatabase();
    drop = db.drop;
    const dataDir = tempDir('dbq-rotate-pg-');
    dirs.push(dataDir);
    env = { DBQ_DATA_DIR: dataDir, DBQ_STORE_URL: db.url, DBQ_SECRET_KEY: oldKey };
    const add = await runDbq(dataDir, ['connection', 'add', '--workspace', 'default', '--name', 'pg', '--url', PG('env-pw')], { env });
    expect(add.code, add.stderr).toBe(0);
    await runDbq(dataDir, ['user', 'create', '--workspace', 'default', '--email', 'ops@acme.test', '--role', 'admin'], { env });
    const key = await runDbq(dataDir, ['key', 'create', '--workspace', 'default', '--user', 'ops@acme.test', '--name', 'ops', '--json'], {
      env,
    });
    expect(key.code, key.stderr).toBe(0);
    adminKey = JSON.parse(key.stdout).secret;
  });
  afterAll(async () => drop());

  const sealedInPg = async (): Promise<{ id: string; secret: string }> => {
    const c = new pg.Client({ connectionString: env.DBQ_STORE_URL });
    await c.connect();
    try {
      return (await c.query("select id, secret from connections where name = 'pg'")).rows[0];
    } finally {
      await c.end();
    }
  };

  it('asks for the new key on standard input rather than inventing one', async () => {
    const res = await runDbq(env.DBQ_DATA_DIR!, ['secret', 'rotate'], { env });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('DBQ_SECRET_KEY is set, so the new key comes from you');
    const bad = await runWithStdin(env, ['secret', 'rotate', '--new-key-stdin'], 'not-a-key\n');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('the new key must be 32 bytes');
    const same = await runWithStdin(env, ['secret', 'rotate', '--new-key-stdin'], `${oldKey}\n`);
    expect(same.code).toBe(1);
    expect(same.stderr).toContain('The new key is the key in use');
  });

  it('re-seals under the stdin key; a second run changes nothing; dbq serves with the new key', async () => {
    const res = await runWithStdin(env, ['secret', 'rotate', '--new-key-stdin'], `${newKey}\n`);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain('Now set DBQ_SECRET_KEY to the new key on every dbq process');
    const row = await sealedInPg();
    expect(JSON.parse(createSecretBox(Buffer.from(newKey, 'hex')).open(row.secret, row.id)).password).toBe('env-pw');
    expect(() => createSecretBox(Buffer.from(oldKey, 'hex')).open(row.secret, row.id)).toThrow();

    const again = await runWithStdin(env, ['secret', 'rotate', '--new-key-stdin', '--json'], `${newKey}\n`);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).columns).toContainEqual({ table: 'connections', column: 'secret', resealed: 0, alreadyNew: 1 });
    expect((await sealedInPg()).secret).toBe(row.secret);

    const server = await startDbq({ ...env, DBQ_SECRET_KEY: newKey, DBQ_LOG_LEVEL: 'warn' });
    try {
      const q = await http('POST', `${server.url}/api/query`, adminKey, { connectionId: 'pg', sql: 'SELECT 1 AS one' });
      expect(q.status, JSON.stringify(q.body)).toBe(200);
    } finally {
      await server.stop();
    }
  });
});
