// Kysely's SQLite driver calls better-sqlite3's prepare() on every query, and SQLite then
// parses and plans the text again: on the /query hot path (key look-up, history insert) that
// was a fifth of the server's CPU. This wrapper hands Kysely the same prepared statement for
// the same text. SQLite re-prepares a cached statement by itself after a schema change, so a
// migration never runs against a stale plan.
//
// It is also the SQLite store's one way to its driver, so the driver's "disk full" is classified
// here, once: a StorageFullError (507) instead of a SqliteError every caller would answer 500.
import type Database from 'better-sqlite3';
import type { SqliteDatabase, SqliteStatement } from 'kysely';
import { StorageFullError } from '../errors.ts';

/** Distinct statement texts kept; Kysely's queries are few, but raw SQL could vary freely. */
export const STATEMENT_CACHE_SIZE = 256;

/** SQLITE_FULL: a write (or a spill to a temporary file) found no space left on the disk. */
function classify(err: unknown): unknown {
  return (err as { code?: unknown } | null)?.code === 'SQLITE_FULL' ? new StorageFullError('store', err) : err;
}

interface Cached {
  stmt: Database.Statement;
  kysely: SqliteStatement;
}

function cached(stmt: Database.Statement): Cached {
  const kysely: SqliteStatement = {
    get reader() {
      return stmt.reader;
    },
    all(parameters) {
      try {
        return stmt.all(parameters);
      } catch (err) {
        throw classify(err);
      }
    },
    run(parameters) {
      try {
        return stmt.run(parameters);
      } catch (err) {
        throw classify(err);
      }
    },
    *iterate(parameters) {
      try {
        yield* stmt.iterate(parameters) as IterableIterator<unknown>;
      } catch (err) {
        throw classify(err);
      }
    },
  };
  return { stmt, kysely };
}

export function cachingDatabase(handle: Database.Database, size = STATEMENT_CACHE_SIZE): SqliteDatabase {
  const cache = new Map<string, Cached>();
  return {
    close: () => {
      cache.clear();
      handle.close();
    },
    prepare(sql: string): SqliteStatement {
      const hit = cache.get(sql);
      // A statement still iterating (a streamed read) cannot run again until it finishes:
      // that caller gets a fresh one.
      if (hit && !hit.stmt.busy) {
        // Map order is insertion order: re-inserting keeps the oldest entry first to evict.
        cache.delete(sql);
        cache.set(sql, hit);
        return hit.kysely;
      }
      let stmt: Database.Statement;
      try {
        stmt = handle.prepare(sql);
      } catch (err) {
        throw classify(err);
      }
      const entry = cached(stmt);
      if (!hit) {
        if (cache.size >= size) cache.delete(cache.keys().next().value as string);
        cache.set(sql, entry);
      }
      return entry.kysely;
    },
  };
}
