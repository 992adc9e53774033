// A consistent copy of the SQLite store while a server is writing to it, and putting such a copy
// back. SQLite's online backup copies the pages as one read transaction sees them, so the copy
// holds every commit made before it began (including those still only in the -wal file) and
// none made halfway. The secret key is never part of a backup: it opens the connection secrets
// sealed in the store and is kept beside the backup by the operator.
import fs from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { InvalidRequestError } from '../errors.ts';
import { migrationProvider } from './migrations.ts';

export const STORE_FILE = 'dbq.sqlite';
/** SQLite's companions of the store: left beside a restored store, a stale -wal would be
 * replayed into it. */
const STORE_COMPANIONS = ['-wal', '-shm', '-journal'];

/** Everything at once: a copy made in steps restarts whenever another connection writes
 * between two steps, which under steady load may never finish. One step is one read
 * transaction, which in WAL mode never blocks the writers. */
const ALL_PAGES = 0x7fffffff;

export interface BackupResult {
  file: string;
  bytes: number;
  /** The newest migration the copy has applied. */
  migration: string | null;
}

/** A path beside `file` that no one else uses, created empty and 0600 so the copy is never
 * readable by others, not even for a moment. */
function privateTempBeside(file: string, tag: string): string {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${tag}-${process.pid}-${Date.now()}`);
  fs.closeSync(fs.openSync(temp, 'wx', 0o600));
  return temp;
}

/** Moves `temp` to `file` unless `file` exists: link() refuses an existing name, where rename()
 * would silently replace it. */
function publishNoClobber(temp: string, file: string): void {
  try {
    fs.linkSync(temp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new InvalidRequestError(`${file} already exists; dbq never overwrites a file: choose a new name or remove it first.`, {
        file,
      });
    }
    throw err;
  }
  fs.unlinkSync(temp);
}

function removeQuietly(file: string): void {
  for (const f of [file, ...STORE_COMPANIONS.map((s) => file + s)]) fs.rmSync(f, { force: true });
}

function latestMigration(db: SqliteDatabase.Database): string | null {
  const row = db.prepare('select name from dbq_migrations order by name desc limit 1').get() as { name: string } | undefined;
  return row?.name ?? null;
}

function assertIntact(db: SqliteDatabase.Database, what: string): void {
  const rows = db.pragma('integrity_check') as { integrity_check: string }[];
  const problems = rows.map((r) => r.integrity_check).filter((r) => r !== 'ok');
  if (problems.length > 0) throw new InvalidRequestError(`${what} fails SQLite's integrity check: ${problems.slice(0, 3).join('; ')}`);
}

/** Copies the store in `dataDir` to `to` (which must not exist) as a single self-contained
 * file, mode 0600. Safe while a server serves the store. */
export async function backupSqliteStore(dataDir: string, to: string): Promise<BackupResult> {
  const source = path.join(dataDir, STORE_FILE);
  if (!fs.existsSync(source)) throw new InvalidRequestError(`No dbq store at ${source}.`, { dataDir });
  const file = path.resolve(to);
  if (fs.existsSync(file)) {
    throw new InvalidRequestError(`${file} already exists; dbq never overwrites a file: choose a new name or remove it first.`, { file });
  }
  if (!fs.existsSync(path.dirname(file))) throw new InvalidRequestError(`The directory ${path.dirname(file)} does not exist.`, { file });
  const temp = privateTempBeside(file, 'partial');
  try {
    const db = new SqliteDatabase(source, { fileMustExist: true });
    try {
      db.pragma('busy_timeout = 5000');
      await db.backup(temp, { progress: () => ALL_PAGES });
    } finally {
      db.close();
    }
    // The copy says "WAL" in its header like its source; as a file on its own it should carry
    // its whole content in itself, so it leaves WAL mode (restore turns it back on).
    const copy = new SqliteDatabase(temp, { fileMustExist: true });
    let migration: string | null;
    try {
      copy.pragma('journal_mode = DELETE');
      assertIntact(copy, 'The copy');
      migration = latestMigration(copy);
    } finally {
      copy.close();
    }
    publishNoClobber(temp, file);
    return { file, bytes: fs.statSync(file).size, migration };
  } catch (err) {
    removeQuietly(temp);
    throw err;
  }
}

/** Opens `file` read-only for `fn`. A backup file still in WAL mode (a store copied while
 * stopped) makes SQLite create a -wal and -shm beside it even for reading: the empty ones this
 * created are removed again, so checking a backup leaves its directory as it was. */
async function readingBackup<T>(file: string, fn: (db: SqliteDatabase.Database) => Promise<T> | T): Promise<T> {
  const made = ['-wal', '-shm'].filter((s) => !fs.existsSync(file + s));
  const db = new SqliteDatabase(file, { readonly: true, fileMustExist: true });
  try {
    return await fn(db);
  } finally {
    db.close();
    for (const s of made) {
      const companion = file + s;
      if (s === '-shm' || (fs.existsSync(companion) && fs.statSync(companion).size === 0)) fs.rmSync(companion, { force: true });
    }
  }
}

export interface BackupInfo {
  migration: string | null;
  /** One sealed connection secret and its record id, to prove a key opens this store's
   * secrets; null when the store holds none. */
  sealedSample: { id: string; sealed: string } | null;
}

/** Checks that `file` is a dbq store this code can run (an intact SQLite database whose applied
 * migrations are all known here) and says what it holds. */
export async function inspectBackup(file: string): Promise<BackupInfo> {
  const header = Buffer.alloc(16);
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    throw new InvalidRequestError(`Cannot read ${file}.`, { file });
  }
  try {
    fs.readSync(fd, header, 0, 16, 0);
  } finally {
    fs.closeSync(fd);
  }
  if (header.toString('latin1') !== 'SQLite format 3\0')
    throw new InvalidRequestError(`${file} is not an SQLite database, so not a dbq backup.`, { file });
  return readingBackup(file, async (db) => {
    const hasMigrations = db.prepare("select 1 from sqlite_master where type = 'table' and name = 'dbq_migrations'").get();
    if (!hasMigrations)
      throw new InvalidRequestError(`${file} is an SQLite database but not a dbq store (it has no dbq_migrations table).`, { file });
    assertIntact(db, file);
    const known = new Set(Object.keys(await migrationProvider.getMigrations()));
    const applied = (db.prepare('select name from dbq_migrations order by name').all() as { name: string }[]).map((r) => r.name);
    const unknown = applied.filter((name) => !known.has(name));
    if (unknown.length > 0) {
      throw new InvalidRequestError(
        `${file} was written by a newer dbq (migrations ${unknown.join(', ')} are unknown to this version); restore it with that version or a later one.`,
        { file, unknown },
      );
    }
    const sample = db.prepare('select id, secret from connections where secret is not null limit 1').get() as
      { id: string; secret: string } | undefined;
    return { migration: applied.at(-1) ?? null, sealedSample: sample ? { id: sample.id, sealed: sample.secret } : null };
  });
}

/** The store files present in `dataDir` (the store itself, or a -wal/-shm/-journal it left). */
export function storeFilesIn(dataDir: string): string[] {
  return [STORE_FILE, ...STORE_COMPANIONS.map((s) => STORE_FILE + s)].filter((name) => fs.existsSync(path.join(dataDir, name)));
}

/**
 * Puts the backup `from` in place as the store of `dataDir`, which must hold no store: a server
 * serving a data dir always has its store there, so this also refuses the data dir of a running
 * server, and an existing store is never replaced. The copy is made and checked under a
 * temporary name and appears as dbq.sqlite only when complete.
 */
export async function restoreSqliteStore(dataDir: string, from: string): Promise<BackupInfo> {
  const info = await inspectBackup(from);
  const present = storeFilesIn(dataDir);
  if (present.length > 0) {
    throw new InvalidRequestError(
      `${dataDir} already holds a store (${present.join(', ')}): restore goes into an empty data dir. ` +
        'Stop any server on it, then move the store aside or choose another data dir.',
      { dataDir, present },
    );
  }
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const target = path.join(dataDir, STORE_FILE);
  const temp = privateTempBeside(target, 'restoring');
  try {
    await readingBackup(from, (src) => src.backup(temp, { progress: () => ALL_PAGES }));
    const copy = new SqliteDatabase(temp, { fileMustExist: true });
    try {
      assertIntact(copy, 'The restored copy');
      // Back in the mode the store runs in; switching checkpoints and removes the -wal on close.
      copy.pragma('journal_mode = WAL');
    } finally {
      copy.close();
    }
    for (const s of STORE_COMPANIONS) fs.rmSync(temp + s, { force: true });
    publishNoClobber(temp, target);
    fs.chmodSync(target, 0o600);
    return info;
  } catch (err) {
    removeQuietly(temp);
    throw err;
  }
}
