// Kysely's SQLite driver calls better-sqlite3's prepare() on every query, and SQLite then
// parses and plans the text again: on the /query hot path (key look-up, history insert) that
// was a fifth of the server's CPU. This wrapper hands Kysely the same prepared statement for
// the same text. SQLite re-prepares a cached statement by itself after a schema change, so a
// migration never runs against a stale plan.
import type Database from 'better-sqlite3';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/** Distinct statement texts kept; Kysely's queries are few, but raw SQL could vary freely. */
export const STATEMENT_CACHE_SIZE = 256;

export function cachingDatabase(handle: Database.Database, size = STATEMENT_CACHE_SIZE): SqliteDatabase {
  const cache = new Map<string, Database.Statement>();
  return {
    close: () => {
      cache.clear();
      handle.close();
    },
    prepare(sql: string): SqliteStatement {
      const hit = cache.get(sql);
      // A statement still iterating (a streamed read) cannot run again until it finishes:
      // that caller gets a fresh one.
      if (hit && !hit.busy) {
        // Map order is insertion order: re-inserting keeps the oldest entry first to evict.
        cache.delete(sql);
        cache.set(sql, hit);
        return hit as unknown as SqliteStatement;
      }
      const stmt = handle.prepare(sql);
      if (!hit) {
        if (cache.size >= size) cache.delete(cache.keys().next().value as string);
        cache.set(sql, stmt);
      }
      return stmt as unknown as SqliteStatement;
    },
  };
}
