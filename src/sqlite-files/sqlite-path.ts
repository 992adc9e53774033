// SQLite connections of a workspace may only open files under DBQ_SQLITE_DIR/<workspace slug>/:
// one directory per workspace, so an admin of one workspace cannot name (read, write, or learn
// the existence of) another workspace's file. The check resolves symlinks (a link inside the
// directory pointing at /etc/passwd or at another workspace's file is outside), refuses `..`
// escapes, absolute paths elsewhere and NUL bytes, and runs again each time a pool is opened.
// Every refusal has the same message, whether or not the named file exists.
import fs from 'node:fs';
import path from 'node:path';
import { InvalidRequestError } from '../errors.ts';

const OUTSIDE = "database must name a file in the workspace's SQLite directory";

/** DBQ_SQLITE_DIR/<slug>/. Slugs are DNS labels (workspaces.ts): never `..`, never a `/`. */
export function workspaceSqliteDir(sqliteDir: string, slug: string): string {
  return path.join(sqliteDir, slug);
}

/** The workspace's directory, created when missing (with the workspace, at start, on first use). */
export function ensureWorkspaceSqliteDir(sqliteDir: string, slug: string): string {
  const dir = workspaceSqliteDir(sqliteDir, slug);
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

/** The real path of `file` inside `workspaceDir` (one workspace's directory), or a 400. */
export function resolveSqlitePath(workspaceDir: string, file: string): string {
  if (!file || file.includes('\0')) throw new InvalidRequestError(OUTSIDE, { field: 'database' });
  fs.mkdirSync(workspaceDir, { recursive: true });
  const root = fs.realpathSync(workspaceDir);
  const candidate = path.resolve(root, file);
  let real: string;
  try {
    real = fs.realpathSync(candidate);
  } catch {
    // Not created yet: its directory must still be inside the root.
    try {
      real = path.join(fs.realpathSync(path.dirname(candidate)), path.basename(candidate));
    } catch {
      throw new InvalidRequestError(OUTSIDE, { field: 'database' });
    }
  }
  const rel = path.relative(root, real);
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) {
    throw new InvalidRequestError(OUTSIDE, { field: 'database' });
  }
  return real;
}
