// dbq backup and dbq restore as operators run them: ./bin/dbq in a child process against the
// data dir of a store that is being written to all along, the copy opened and checked, then put
// back into an empty data dir and served by a real `dbq serve`.
import fs from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace } from '../src/workspaces/workspaces.ts';
import { createHarness, tempDir, type Harness } from './support/harness.ts';
import { runDbq } from './support/cli.ts';
import { http, startDbq } from './support/processes.ts';

let h: Harness;
let work: string;

beforeAll(async () => {
  h = await createHarness();
  work = tempDir('dbq-backup-');
  const conn = await runDbq(h.dataDir, [
    'connection',
    'add',
    '--workspace',
    'default',
    '--name',
    'pg',
    '--url',
    'postgres://postgres:sealed-pw@127.0.0.1:5999/test',
  ]);
  expect(conn.code, conn.stderr).toBe(0);
});
afterAll(async () => {
  await h.close();
  fs.rmSync(work, { recursive: true, force: true });
});

const slugs = (file: string): Set<string> => {
  const db = new SqliteDatabase(file, { readonly: true });
  try {
    return new Set((db.prepare('select slug from workspaces').all() as { slug: string }[]).map((r) => r.slug));
  } finally {
    db.close();
  }
};

describe('dbq backup', () => {
  let backup: string;

  it('copies the store while writes go on: intact, 0600, with every commit made before it began', async () => {
    const committed: string[] = [];
    let stop = false;
    const load = (async () => {
      for (let i = 0; !stop; i++) {
        await createWorkspace(h.svc.db, { slug: `load-${i}` });
        committed.push(`load-${i}`);
        // Let the child's output be read between commits.
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    while (committed.length < 50) await new Promise((resolve) => setTimeout(resolve, 5));
    // Those commits are still in the -wal file, not yet in dbq.sqlite: the copy must have them.
    expect(fs.statSync(path.join(h.dataDir, 'dbq.sqlite-wal')).size).toBeGreaterThan(0);
    const before = [...committed];
    backup = path.join(work, 'store.backup');
    const res = await runDbq(h.dataDir, ['backup', '--to', backup]);
    const during = committed.length - before.length;
    stop = true;
    await load;
    expect(res.code, res.stderr).toBe(0);
    expect(during).toBeGreaterThan(0);
    expect(res.stdout).toContain(`to ${backup}`);
    expect(res.stdout).toMatch(/Reminder: the backup holds no secret key; keep .*secret\.key with it/);

    expect(fs.statSync(backup).mode & 0o777).toBe(0o600);
    expect(fs.existsSync(`${backup}-wal`)).toBe(false);
    const copy = new SqliteDatabase(backup, { readonly: true });
    try {
      expect(copy.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(copy.pragma('journal_mode', { simple: true })).toBe('delete');
    } finally {
      copy.close();
    }
    const inCopy = slugs(backup);
    for (const slug of ['default', 'other', ...before]) expect(inCopy.has(slug), slug).toBe(true);
    // No temporary file is left beside it.
    expect(fs.readdirSync(work)).toEqual(['store.backup']);
  });

  it('never overwrites a file, and says so', async () => {
    const mtime = fs.statSync(backup).mtimeMs;
    const again = await runDbq(h.dataDir, ['backup', '--to', backup, '--json']);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stderr.split('\n')[0])).toMatchObject({ success: false, code: 'invalid_request' });
    expect(again.stderr).toContain('already exists');
    expect(fs.statSync(backup).mtimeMs).toBe(mtime);
  });

  it('prints JSON with --json and the reminder on stderr', async () => {
    const file = path.join(work, 'second.backup');
    const res = await runDbq(h.dataDir, ['backup', '--to', file, '--json']);
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({ file, bytes: fs.statSync(file).size, migration: expect.any(String) });
    expect(res.stderr).toContain('Reminder: the backup holds no secret key');
    fs.rmSync(file);
  });

  it('--help names both commands, the secret key and pg_dump', async () => {
    const help = await runDbq(h.dataDir, ['--help']);
    expect(help.stdout).toMatch(/^\s+backup \[options\]/m);
    expect(help.stdout).toMatch(/^\s+restore \[options\]/m);
    const backupHelp = await runDbq(h.dataDir, ['backup', '--help']);
    expect(backupHelp.stdout).toMatch(/--to <file>.*\(required\)/);
    expect(backupHelp.stdout).toContain('secret key');
    expect(backupHelp.stdout).toContain('pg_dump');
  });

  it('points a PostgreSQL store to pg_dump and exits non-zero', async () => {
    const res = await runDbq(h.dataDir, ['backup', '--to', path.join(work, 'pg.backup')], {
      env: { DBQ_STORE_URL: 'postgres://postgres@127.0.0.1:5999/nothing' },
    });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('pg_dump');
    expect(fs.existsSync(path.join(work, 'pg.backup'))).toBe(false);
    const restore = await runDbq(tempDir(), ['restore', '--from', backup], {
      env: { DBQ_STORE_URL: 'postgres://postgres@127.0.0.1:5999/nothing' },
    });
    expect(restore.code).toBe(1);
    expect(restore.stderr).toContain('pg_restore');
  });

  it('restores into an empty data dir, and a server starts on it with its keys, workspaces and secrets', async () => {
    const dataDir = path.join(work, 'restored');
    const res = await runDbq(dataDir, ['restore', '--from', backup]);
    expect(res.code, res.stderr).toBe(0);
    // Started without the key, dbq would make a new one: the restore says what to do first.
    expect(res.stderr).toMatch(/no secret key yet.*copy the secret\.key kept with this backup/);
    const store = path.join(dataDir, 'dbq.sqlite');
    expect(fs.statSync(store).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(dataDir)).toEqual(['dbq.sqlite']);

    // The wrong key is named as such.
    fs.writeFileSync(path.join(dataDir, 'secret.key'), `${'ab'.repeat(32)}\n`, { mode: 0o600 });
    fs.rmSync(store);
    const wrong = await runDbq(dataDir, ['restore', '--from', backup]);
    expect(wrong.code, wrong.stderr).toBe(0);
    expect(wrong.stderr).toContain('does not open this backup');

    // The key kept with the backup: no warning, and the store serves as it was.
    fs.copyFileSync(path.join(h.dataDir, 'secret.key'), path.join(dataDir, 'secret.key'));
    fs.rmSync(store);
    const right = await runDbq(dataDir, ['restore', '--from', backup, '--json']);
    expect(right.code, right.stderr).toBe(0);
    expect(right.stderr).toBe('');
    expect(JSON.parse(right.stdout)).toEqual({ file: store, from: backup, migration: expect.any(String) });

    const server = await startDbq({ DBQ_DATA_DIR: dataDir, DBQ_LOG_LEVEL: 'warn' });
    try {
      const conns = await http('GET', `${server.url}/api/connections`, h.adminKey);
      expect(conns.status).toBe(200);
      expect(conns.body.data.connections.map((c: { name: string }) => c.name)).toEqual(['pg']);
      const other = await http('GET', `${server.url}/w/other/api/connections`, h.otherKey);
      expect(other.status).toBe(200);
    } finally {
      await server.stop();
    }
    const shown = await runDbq(dataDir, ['workspace', 'list']);
    expect(shown.stdout).toContain('load-0');
  });

  it('restores a store file copied while dbq was stopped (still in WAL mode) and leaves nothing beside it', async () => {
    const copied = path.join(work, 'copied', 'dbq.sqlite');
    fs.mkdirSync(path.dirname(copied));
    fs.copyFileSync(backup, copied);
    const wal = new SqliteDatabase(copied);
    wal.pragma('journal_mode = WAL');
    wal.close();
    const dataDir = tempDir();
    const res = await runDbq(dataDir, ['restore', '--from', copied]);
    expect(res.code, res.stderr).toBe(0);
    expect(fs.readdirSync(path.dirname(copied))).toEqual(['dbq.sqlite']);
    expect(slugs(path.join(dataDir, 'dbq.sqlite')).has('load-0')).toBe(true);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('refuses a data dir that holds a store (so any data dir a server is serving)', async () => {
    const res = await runDbq(h.dataDir, ['restore', '--from', backup]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('already holds a store');
    // A stale -wal alone would be replayed into the restored store: refused too.
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'dbq.sqlite-wal'), 'stale');
    const stale = await runDbq(dir, ['restore', '--from', backup]);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain('dbq.sqlite-wal');
    expect(fs.existsSync(path.join(dir, 'dbq.sqlite'))).toBe(false);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('refuses what is not a dbq store this version can run', async () => {
    const dir = tempDir();
    const notSqlite = path.join(work, 'notes.txt');
    fs.writeFileSync(notSqlite, 'hello');
    expect((await runDbq(dir, ['restore', '--from', notSqlite])).stderr).toContain('not an SQLite database');

    const other = path.join(work, 'other.sqlite');
    new SqliteDatabase(other).exec('create table t (x)').close();
    expect((await runDbq(dir, ['restore', '--from', other])).stderr).toContain('not a dbq store');

    const newer = path.join(work, 'newer.backup');
    fs.copyFileSync(backup, newer);
    const db = new SqliteDatabase(newer);
    db.prepare('insert into dbq_migrations (name, timestamp) values (?, ?)').run('9999_from_the_future', new Date().toISOString());
    db.close();
    const res = await runDbq(dir, ['restore', '--from', newer]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('written by a newer dbq (migrations 9999_from_the_future');
    expect(fs.readdirSync(dir)).toEqual([]);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
