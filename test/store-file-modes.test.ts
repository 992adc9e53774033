// What broke: the data dir's files were world-readable. dbq.sqlite (key hashes, sealed
// secrets, query history), its -wal and -shm, and the sample database came out 0644 under the
// usual umask 022, and a secret.key made by an older version or copied in kept whatever mode it
// had. The data dir is now created 0700 and its files 0600 (SQLite gives -wal and -shm the
// mode of their database file), and a looser layout found at start is tightened, with one log
// line naming the paths.
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureSample } from '../src/cli/serve.ts';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { closeServices, createServices, type Services } from '../src/services.ts';
import { createWorkspace } from '../src/workspaces/workspaces.ts';
import { tempDir } from './support/databases.ts';

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

const modeOf = (p: string) => fs.statSync(p).mode & 0o777;
const octal = (m: number) => m.toString(8).padStart(4, '0');

/** A data dir that does not exist yet (tempDir itself is made 0700 by mkdtemp). */
function freshDataDir(): string {
  const parent = tempDir('dbq-modes-');
  cleanup.push(() => fs.rmSync(parent, { recursive: true, force: true }));
  return path.join(parent, 'data');
}

async function start(dataDir: string, logs?: string[]): Promise<Services> {
  const config = loadConfig({ DBQ_DATA_DIR: dataDir, DBQ_LOG_LEVEL: logs ? 'info' : 'silent' });
  const destination = logs ? { write: (line: string) => void logs.push(line) } : undefined;
  const svc = await createServices(config, { logger: createLogger(config.logLevel, destination as never) });
  let closed = false;
  cleanup.push(async () => {
    if (!closed) await closeServices(svc);
  });
  const close = svc.store.close;
  svc.store.close = async () => {
    closed = true;
    await close();
  };
  return svc;
}

function findFile(dir: string, name: string): string | null {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isFile() && entry.name === name) return p;
    if (entry.isDirectory()) {
      const found = findFile(p, name);
      if (found) return found;
    }
  }
  return null;
}

const STORE_FILES = ['dbq.sqlite', 'dbq.sqlite-wal', 'dbq.sqlite-shm', 'secret.key'];

describe('data dir permissions', () => {
  it('creates a fresh data dir 0700 and every file in it 0600, -wal and -shm included, after writes', async () => {
    const dataDir = freshDataDir();
    const svc = await start(dataDir);
    await createWorkspace(svc.db, { slug: `modes${process.pid}`, plan: 'free' });
    await ensureSample(svc);

    const modes: Record<string, string> = {};
    for (const entry of fs.readdirSync(dataDir, { withFileTypes: true })) {
      modes[entry.name] = octal(modeOf(path.join(dataDir, entry.name)));
    }
    const sample = findFile(svc.config.sqliteDir, 'sample.db');
    expect(sample).not.toBeNull();
    modes.sample = octal(modeOf(sample!));
    expect(modes).toMatchObject({
      'dbq.sqlite': '0600',
      'dbq.sqlite-wal': '0600',
      'dbq.sqlite-shm': '0600',
      'secret.key': '0600',
      sample: '0600',
    });
    for (const [name, mode] of Object.entries(modes)) {
      const isDir = name !== 'sample' && fs.statSync(path.join(dataDir, name)).isDirectory();
      expect(mode, name).toBe(isDir ? '0700' : '0600');
    }
    expect(octal(modeOf(dataDir))).toBe('0700');

    // A checkpoint and a new write keep them so.
    const handle = new Database(path.join(dataDir, 'dbq.sqlite'));
    cleanup.push(() => void handle.close());
    handle.pragma('wal_checkpoint(TRUNCATE)');
    await createWorkspace(svc.db, { slug: `modes2${process.pid}`, plan: 'free' });
    for (const name of STORE_FILES) expect(octal(modeOf(path.join(dataDir, name))), name).toBe('0600');
  });

  it('tightens a pre-existing 0755/0644 layout at start, with one log line naming the paths', async () => {
    const dataDir = freshDataDir();
    const first = await start(dataDir);
    await createWorkspace(first.db, { slug: `loose${process.pid}`, plan: 'free' });
    await closeServices(first);
    // An open handle keeps -wal and -shm in place across the restart, as a CLI would.
    const holder = new Database(path.join(dataDir, 'dbq.sqlite'));
    cleanup.push(() => void holder.close());
    holder.prepare('SELECT count(*) FROM workspaces').get();
    fs.chmodSync(dataDir, 0o755);
    for (const name of STORE_FILES) fs.chmodSync(path.join(dataDir, name), 0o644);
    const key = fs.readFileSync(path.join(dataDir, 'secret.key'), 'utf8').trim();

    const logs: string[] = [];
    const svc = await start(dataDir, logs);
    expect(octal(modeOf(dataDir))).toBe('0700');
    for (const name of STORE_FILES) expect(octal(modeOf(path.join(dataDir, name))), name).toBe('0600');

    const lines = logs.filter((line) => line.includes('permissions'));
    expect(lines).toHaveLength(1);
    const entry = JSON.parse(lines[0]);
    expect(entry.level).toBeGreaterThanOrEqual(30);
    expect([...entry.paths].sort()).toEqual([dataDir, ...STORE_FILES.map((n) => path.join(dataDir, n))].sort());
    expect(lines[0]).not.toContain(key);

    // Nothing left to tighten: the next start says nothing.
    await closeServices(svc);
    const again: string[] = [];
    await start(dataDir, again);
    expect(again.filter((line) => line.includes('permissions'))).toEqual([]);
  });
});
