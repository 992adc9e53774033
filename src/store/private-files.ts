// The data dir holds the store (API key hashes, sealed connection secrets, query history with
// its SQL) and secret.key, which opens the secrets: nobody but its owner may read any of it.
// New directories are made 0700 and new files 0600 whatever the umask. SQLite creates the
// store's -wal, -shm and -journal itself, with the mode of their database file (os_unix.c
// findCreateFileMode), so creating dbq.sqlite 0600 before SQLite opens it covers them, after
// every checkpoint too, without touching the process-wide umask. A layout made by an older
// version, or copied in, is tightened at start.
import fs from 'node:fs';
import path from 'node:path';

/** dbq's own files in the data dir; SQLite connection files (DBQ_SQLITE_DIR) are the operator's. */
const DATA_FILES = ['dbq.sqlite', 'dbq.sqlite-wal', 'dbq.sqlite-shm', 'dbq.sqlite-journal', 'secret.key'];

export function createPrivateDir(dir: string): void {
  // `mode` applies to every directory the recursive call creates.
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
}

/** Creates `file` empty with mode 0600 unless it exists (an empty file is an empty SQLite
 * database); an existing file is left as it is. */
export function createPrivateFile(file: string): void {
  try {
    fs.closeSync(fs.openSync(file, 'wx', 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

export interface Tightened {
  /** Paths whose group and other permissions were removed. */
  paths: string[];
  /** Paths that could not be changed (another owner, a read-only mount), with the error code. */
  failed: { path: string; code: string }[];
}

/** Removes group and other permissions from the data dir and dbq's files in it. Symbolic links
 * are left alone: chmod would change their target, wherever it is. */
export function tightenDataDir(dataDir: string): Tightened {
  const result: Tightened = { paths: [], failed: [] };
  for (const p of [dataDir, ...DATA_FILES.map((name) => path.join(dataDir, name))]) {
    let stat: fs.Stats;
    try {
      stat = fs.lstatSync(p);
    } catch {
      continue;
    }
    if (!(stat.isDirectory() || stat.isFile()) || (stat.mode & 0o077) === 0) continue;
    try {
      fs.chmodSync(p, stat.mode & 0o700);
      result.paths.push(p);
    } catch (err) {
      result.failed.push({ path: p, code: (err as NodeJS.ErrnoException).code ?? 'unknown' });
    }
  }
  return result;
}
