// Upgrading from one shared DBQ_SQLITE_DIR to a directory per workspace (sqlite-path.ts).
// Records made before name files relative to DBQ_SQLITE_DIR itself; at the first start of this
// version each named file moves into DBQ_SQLITE_DIR/<slug of the record's workspace>/ under the
// same relative name, so the record keeps working unchanged. A file named by records of two
// workspaces goes to the oldest record's workspace and is copied nowhere (copying would hand
// the other workspace a snapshot of data it was never meant to have; in the shared layout any
// workspace admin could name any file). The marker file makes this happen once: a file put in
// the old place later is not adopted by whichever workspace happens to name it.
import fs from 'node:fs';
import path from 'node:path';
import type { Kysely } from 'kysely';
import type { Logger } from '../logger.ts';
import type { Database } from '../store/schema.ts';
import { ensureWorkspaceSqliteDir } from './sqlite-path.ts';

const UPGRADE_MARKER = '.per-workspace';
const COMPANIONS = ['-wal', '-shm', '-journal'];

interface Move {
  connectionId: string;
  slug: string;
  /** The record's file relative to DBQ_SQLITE_DIR (and, from now on, to its workspace's dir). */
  relative: string;
  /** Its real path in the old layout, when the file exists there. */
  source: string | null;
  /** The record named it by an absolute path: stored as `relative` from now on. */
  absolute: boolean;
}

/** Creates each workspace's directory and, once, moves files of the shared layout into them. */
export async function upgradeSqliteDir(db: Kysely<Database>, sqliteDir: string, logger: Logger): Promise<void> {
  fs.mkdirSync(sqliteDir, { recursive: true });
  ensureWorkspaceSqliteDir(sqliteDir, 'default');
  const marker = path.join(sqliteDir, UPGRADE_MARKER);
  if (fs.existsSync(marker)) return;
  for (const ws of await db.selectFrom('workspaces').select('slug').execute()) ensureWorkspaceSqliteDir(sqliteDir, ws.slug);
  const rows = await db
    .selectFrom('connections')
    .innerJoin('workspaces', 'workspaces.id', 'connections.workspace_id')
    .select(['connections.id', 'connections.database', 'workspaces.slug'])
    .where('connections.engine', '=', 'sqlite')
    .orderBy('connections.created_at')
    .orderBy('connections.id')
    .execute();
  const root = fs.realpathSync(sqliteDir);
  const owners = new Map<string, string>();
  for (const row of rows) {
    const move = planMove(sqliteDir, root, row.id, row.slug, row.database);
    if (move === null) continue;
    if (move.absolute) {
      await db.updateTable('connections').set({ database: move.relative }).where('id', '=', move.connectionId).execute();
    }
    if (move.source === null) continue;
    const owner = owners.get(move.source);
    if (owner !== undefined) {
      logger.warn(
        { connectionId: move.connectionId, ownerConnectionId: owner, file: move.relative },
        'sqlite upgrade: file already given to an older connection of another workspace; copy it yourself if both should have it',
      );
      continue;
    }
    owners.set(move.source, move.connectionId);
    const target = path.join(root, move.slug, move.relative);
    if (fs.existsSync(target)) {
      logger.warn(
        { connectionId: move.connectionId, file: move.relative },
        'sqlite upgrade: the workspace directory already has this file; the old one is left in place',
      );
      continue;
    }
    fs.mkdirSync(path.dirname(target), { recursive: true });
    // WAL and journal first: a database moved without its WAL loses what the WAL holds.
    for (const suffix of COMPANIONS) renameIfPresent(move.source + suffix, target + suffix);
    renameIfPresent(move.source, target);
    logger.info(
      { connectionId: move.connectionId, workspace: move.slug, file: move.relative },
      'sqlite upgrade: moved into the workspace directory',
    );
  }
  fs.writeFileSync(marker, 'SQLite files live in one directory per workspace (<slug>/); the shared layout was upgraded.\n');
}

function planMove(sqliteDir: string, root: string, connectionId: string, slug: string, database: string): Move | null {
  const absolute = path.isAbsolute(database);
  const relative = absolute ? insideOf(database, [sqliteDir, root]) : path.normalize(database);
  // Outside the old directory: never openable, nothing to move.
  if (relative === null || relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) return null;
  let source: string | null = null;
  try {
    const real = fs.realpathSync(path.join(root, relative));
    const rel = path.relative(root, real);
    if (rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel) && fs.statSync(real).isFile()) source = real;
  } catch {
    // Missing: the record already pointed at nothing.
  }
  return { connectionId, slug, relative, source, absolute };
}

function insideOf(file: string, roots: string[]): string | null {
  for (const root of roots) {
    const rel = path.relative(root, file);
    if (rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel)) return rel;
  }
  return null;
}

function renameIfPresent(from: string, to: string): void {
  try {
    fs.renameSync(from, to);
  } catch (err) {
    // Another process starting at the same time moved it first.
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
