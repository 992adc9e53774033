// `dbq migrate status`: what the store has run against what this code knows, without opening
// the store the way the server does (which would run the pending migrations it should list).
import fs from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { InvalidRequestError } from '../errors.ts';
import { readMigrationStatus, type MigrationStatus } from './migrations.ts';
import { STORE_FILE } from './backup.ts';

export interface StoreAddress {
  dataDir: string;
  storeUrl: string | null;
}

/** A bare Kysely on the store, no migration run, for `fn`; closed after. */
export async function withBareStore<T>(at: StoreAddress, fn: (db: Kysely<any>) => Promise<T>): Promise<T> {
  let db: Kysely<any>;
  if (at.storeUrl) {
    const pool = new pg.Pool({ connectionString: at.storeUrl, max: 1, connectionTimeoutMillis: 5000 });
    // An idle client's socket error is re-emitted on the pool; unlistened it would kill the command.
    pool.on('error', () => {});
    db = new Kysely({ dialect: new PostgresDialect({ pool }) });
  } else {
    const file = path.join(at.dataDir, STORE_FILE);
    if (!fs.existsSync(file)) throw new InvalidRequestError(`No dbq store at ${file}.`, { dataDir: at.dataDir });
    const handle = new SqliteDatabase(file, { fileMustExist: true });
    handle.pragma('busy_timeout = 5000');
    db = new Kysely({ dialect: new SqliteDialect({ database: handle }) });
  }
  try {
    return await fn(db);
  } finally {
    await db.destroy();
  }
}

export async function storeMigrationStatus(at: StoreAddress): Promise<MigrationStatus> {
  return withBareStore(at, readMigrationStatus);
}
