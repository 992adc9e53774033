// The metadata store: SQLite in the data dir by default, PostgreSQL when DBQ_STORE_URL says
// so. One Kysely code path over both; migrations run at open.
import fs from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.ts';
import { assertStoreNotNewer, migrationProvider, MIGRATION_LOCK_TABLE, MIGRATION_TABLE } from './migrations.ts';
import { ChangeEpoch } from './change-epoch.ts';
import { PgChangeFeed } from './pg-changes.ts';
import { plainHistoryWriter, preparedAsyncCommitWriter, type HistoryWriter } from './history-writer.ts';
import { cachingDatabase } from './statement-cache.ts';
import { createPrivateFile } from './private-files.ts';
import { StorePool } from './pg-store-pool.ts';

export type StoreKind = 'sqlite' | 'postgres';

export interface Store {
  db: Kysely<Database>;
  kind: StoreKind;
  ping(): Promise<void>;
  close(): Promise<void>;
  /** Changes whenever data that key/connection look-ups depend on may have changed; null when
   * the backend cannot tell right now, which means "do not cache". See change-epoch.ts (SQLite)
   * and pg-changes.ts (PostgreSQL: LISTEN/NOTIFY, with a polled counter as the fallback). */
  epoch(): string | null;
  /** Memoises a look-up for as long as epoch() is unchanged. */
  memo: Memo;
  /** PostgreSQL only: the change feed behind epoch() (tests, diagnostics). */
  changes?: PgChangeFeed;
  /** How this store commits query history statements (history-writer.ts). */
  historyWriter: HistoryWriter;
}

export type Memo = <T>(key: string, load: () => Promise<T>) => Promise<T>;

const MEMO_LIMIT = 10_000;

function createMemo(epoch: () => string | null): Memo {
  const entries = new Map<string, { epoch: string; value: unknown }>();
  return async <T>(key: string, load: () => Promise<T>): Promise<T> => {
    // Read the epoch before loading: a change that lands during the load makes the stored
    // entry stale at once instead of being hidden behind it.
    const now = epoch();
    if (now === null) return load();
    const hit = entries.get(key);
    if (hit && hit.epoch === now) return hit.value as T;
    const value = await load();
    if (entries.size >= MEMO_LIMIT) entries.clear();
    entries.set(key, { epoch: now, value });
    return value;
  };
}

export interface StoreOptions {
  dataDir: string;
  storeUrl: string | null;
  /** Where the PostgreSQL store reports its change feed going down and coming back. */
  logger?: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}

export async function openStore(opts: StoreOptions): Promise<Store> {
  const store = opts.storeUrl ? openPostgresStore(opts.storeUrl, opts.logger) : openSqliteStore(opts.dataDir);
  try {
    await migrate(store.db);
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}

function openSqliteStore(dataDir: string): Store {
  // The store holds key hashes and sealed secrets: keep the directory private to its owner.
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, 'dbq.sqlite');
  // SQLite would create it 0644 (its default, less the umask), and its -wal and -shm after it.
  createPrivateFile(file);
  const handle = new SqliteDatabase(file);
  // WAL lets the CLI write (create a key, revoke one) while a server reads; busy_timeout makes
  // the rare writer-writer overlap wait instead of failing with SQLITE_BUSY.
  handle.pragma('journal_mode = WAL');
  handle.pragma('busy_timeout = 5000');
  handle.pragma('foreign_keys = ON');
  handle.pragma('synchronous = NORMAL');
  const changes = new ChangeEpoch(handle);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: cachingDatabase(handle) }), plugins: [changes] });
  return {
    db,
    kind: 'sqlite',
    epoch: () => changes.current(),
    memo: createMemo(() => changes.current()),
    historyWriter: plainHistoryWriter(db),
    async ping() {
      await sql`select 1`.execute(db);
    },
    async close() {
      await db.destroy();
    },
  };
}

function openPostgresStore(url: string, logger?: StoreOptions['logger']): Store {
  const poolConfig: pg.PoolConfig = {
    connectionString: url,
    max: 10,
    // Also bounds the wait for a free connection under load, so it stays generous; an
    // unreachable store is answered at once after its first failed connect (pg-store-pool.ts).
    connectionTimeoutMillis: 5000,
    // A store host that vanished without closing its sockets is found out by TCP keepalive.
    keepAlive: true,
    // Per-pool type parsing (never pg.types globally): bigint counters come back as numbers;
    // store values never approach 2^53.
    types: {
      getTypeParser(oid: number, format?: any) {
        if (oid === 20) return (v: string) => Number(v);
        return pg.types.getTypeParser(oid, format);
      },
    } as any,
  };
  // Error listeners on the pool and every client, StoreUnavailableError, failing fast while
  // the store is down: see pg-store-pool.ts.
  const pool = new StorePool(poolConfig, logger);

  const changes = new PgChangeFeed({
    url,
    async readCounter() {
      const { rows } = await sql<{ counter: number }>`select counter from dbq_store_changes where id = 1`.execute(db);
      return Number(rows[0]?.counter ?? 0);
    },
    onStateChange(state, err) {
      if (state === 'listening') logger?.info({}, 'store change notifications: listening');
      else logger?.warn({ err }, `store change notifications down: look-up caches follow a counter read every 500 ms until they are back`);
    },
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), plugins: [changes.ownWrites] });
  // The listener starts with the first look-up, not at open: admin commands (the CLI) open the
  // store too and never cache anything. Until it listens (or the fallback has read the counter)
  // the epoch is null and look-ups go to the store.
  let started = false;
  const epoch = () => {
    if (!started) {
      started = true;
      void changes.start();
    }
    return changes.current();
  };
  return {
    db,
    kind: 'postgres',
    epoch,
    memo: createMemo(epoch),
    changes,
    // History group commits do not wait for the WAL flush: see history-writer.ts.
    historyWriter: preparedAsyncCommitWriter(pool),
    async ping() {
      await sql`select 1`.execute(db);
    },
    async close() {
      await changes.close();
      await db.destroy();
    },
  };
}

async function migrate(db: Kysely<Database>): Promise<void> {
  await assertStoreNotNewer(db);
  const migrator = new Migrator({
    db,
    provider: migrationProvider,
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: MIGRATION_LOCK_TABLE,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`Store migration ${failed?.migrationName ?? ''} failed: ${String((error as Error).message ?? error)}`, {
      cause: error,
    });
  }
}
