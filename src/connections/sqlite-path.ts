// SQLite connections may only open files under DBQ_SQLITE_DIR. The check resolves symlinks
// (a link inside the directory pointing at /etc/passwd is outside), refuses `..` escapes,
// absolute paths elsewhere and NUL bytes, and runs again each time a pool is opened.
import fs from 'node:fs';
import path from 'node:path';
import { InvalidRequestError } from '../errors.ts';

export function resolveSqlitePath(sqliteDir: string, file: string): string {
  if (!file || file.includes('\0')) throw new InvalidRequestError('database must name a file under DBQ_SQLITE_DIR', { field: 'database' });
  fs.mkdirSync(sqliteDir, { recursive: true });
  const root = fs.realpathSync(sqliteDir);
  const candidate = path.resolve(root, file);
  let real: string;
  try {
    real = fs.realpathSync(candidate);
  } catch {
    // Not created yet: its directory must still be inside the root.
    try {
      real = path.join(fs.realpathSync(path.dirname(candidate)), path.basename(candidate));
    } catch {
      throw new InvalidRequestError('database must name a file under DBQ_SQLITE_DIR', { field: 'database' });
    }
  }
  const rel = path.relative(root, real);
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) {
    throw new InvalidRequestError('database must name a file under DBQ_SQLITE_DIR', { field: 'database' });
  }
  return real;
}
