// How query history entries are committed, per store. On PostgreSQL each group
// commit returns without waiting for the WAL flush to disk — synchronous_commit = off for that
// one transaction — as the SQLite store's WAL with synchronous = NORMAL does (on the bench
// machine the flush was most of a history batch's time, and every query's response waits for
// its batch). The entries are committed and visible to every process before any response goes
// out (src/history/history-log.ts); only a crash of the PostgreSQL server or its host may lose
// the last fraction of a second of them (at most 3 × wal_writer_delay, 600 ms by default) —
// never a crash or stop of dbq. Every other store write (keys, users, connections) stays
// synchronous.
//
// One statement, one round trip: the INSERT itself sets the option for its own (implicit)
// transaction, with set_config(…, true) evaluated in its first value; a local setting lasts
// that transaction only, so it holds through PgBouncer in any pooling mode and never leaks to
// other statements of the session.
//
// A write's entry (src/query/run.ts openHistory) is the exception, `durable`: its commits wait
// for the flush as other store writes do. It is recorded `running` before the statement is sent
// so that an operator can always tell what ran, and completed after; a crash of the store's
// server must not take either back (a completion lost that way turned acknowledged writes back
// into `running` in the store-outage test).
import type { CompiledQuery, Kysely } from 'kysely';
import type { Database } from './schema.ts';

export interface HistoryWriteOptions {
  durable?: boolean;
}

/** Runs a history statement (a batch INSERT, a completing UPDATE) the way its store wants it
 * committed. Each store makes its own (Store.historyWriter), bound to its database. */
export type HistoryWriter = (statement: CompiledQuery, opts?: HistoryWriteOptions) => Promise<void>;

/** SQLite: the statement as it is (the WAL with synchronous = NORMAL already returns before
 * the disk flush). */
export function plainHistoryWriter(db: Kysely<Database>): HistoryWriter {
  return async (statement) => {
    await db.executeQuery(statement);
  };
}

const asyncTexts = new Map<string, string>();
const FIRST_VALUE = /\bvalues \(\$1,/;

/** The INSERT text with `$1` (the first column, text) wrapped so that evaluating it turns
 * synchronous_commit off for the statement's transaction. */
export function asyncCommitText(text: string): string {
  let out = asyncTexts.get(text);
  if (out === undefined) {
    if (!FIRST_VALUE.test(text)) throw new Error('history insert does not start its values with $1');
    out = text.replace(FIRST_VALUE, "values (case when set_config('synchronous_commit', 'off', true) is not null then $1 end,");
    if (asyncTexts.size >= 256) asyncTexts.clear();
    asyncTexts.set(text, out);
  }
  return out;
}

/** The same INSERT as a named prepared statement on the pool's connection: PostgreSQL parses
 * and plans each batch size once per connection instead of once per batch (node-postgres keeps
 * the names per connection and prepares on first use). */
export function preparedAsyncCommitWriter(pool: {
  query(config: { name: string; text: string; values: unknown[] }): Promise<unknown>;
}): HistoryWriter {
  const names = new Map<string, string>();
  return async (statement, opts) => {
    const text = opts?.durable ? statement.sql : asyncCommitText(statement.sql);
    let name = names.get(text);
    if (name === undefined) {
      name = `dbq_history_${names.size}`;
      names.set(text, name);
    }
    await pool.query({ name, text, values: [...statement.parameters] });
  };
}
