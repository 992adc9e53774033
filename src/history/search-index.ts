// The SQLite store's history search index (migration 0009): a contentless FTS5 trigram index
// of query_history.sql keyed by its rowid, filled behind the writes. A search of three
// characters or more asks it for candidate rowids newest first and checks each candidate with
// the same `lower(sql) like` test as the unindexed walk, so the index only ever narrows the
// walk — a search answers the same entries with it, without it, or half built.
//
// Why behind the writes and not in the INSERT: FTS5 pays per transaction (a segment written,
// merges), so per history batch it cost 75 µs an entry on the event loop; a few hundred
// entries a transaction cost ~14 µs each. Why rowid order can stand for id order: one process
// writes its entries in id order (history.ts), and ids are monotonic within a process, so
// rowids ascend with ids; SEARCH_ROWID_SLACK rowids of margin absorb a second writer (the
// CLI) committing a batch between another's id and its insert.
import { SqliteAdapter, sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import type { Database, HistoryRow } from '../store/schema.ts';

/** Rowids read past the page's last entry before a page is final (see above). */
export const SEARCH_ROWID_SLACK = 200;
/** Entries not yet indexed that a search checks one by one; beyond that it walks as if there
 * were no index (while a store that grew without one is indexed, or with the indexer off). */
export const SEARCH_TAIL_MAX = 50_000;
const FIRST_CHUNK = 100;
const MAX_CHUNK = 5_000;

export function hasSearchIndex(db: Kysely<Database>): boolean {
  return db.getExecutor().adapter instanceof SqliteAdapter;
}

/** A trigram index can only answer three characters or more. */
export function searchIndexApplies(db: Kysely<Database>, search: string): boolean {
  return hasSearchIndex(db) && [...search].length >= 3;
}

type Filtered = SelectQueryBuilder<Database, 'query_history', HistoryRow>;
type Found = HistoryRow & { search_rowid: number };

/** How far the index reaches, or null when its rowids no longer name the entries it indexed
 * (renumbered by a VACUUM since; the indexer starts over on its next round). */
async function indexedRowid(db: Kysely<Database>): Promise<number | null> {
  const { rows } = await sql<{ indexed_rowid: number; indexed_id: string | null; id: string | null }>`
    select s.indexed_rowid, s.indexed_id, h.id from query_history_search_state s
    left join query_history h on h.rowid = s.indexed_rowid where s.id = 1`.execute(db);
  const state = rows[0];
  if (!state) return null;
  if (state.indexed_id !== null && state.id !== null && state.id !== state.indexed_id) return null;
  return Number(state.indexed_rowid);
}

/**
 * The newest `limit + 1` entries of `filtered` (every filter and the cursor applied) whose
 * statement contains `search`, or null when the index cannot serve (too far behind).
 * `matches` is the exact test (`lower(sql) like …`) each candidate must pass.
 */
export async function searchWithIndex(
  db: Kysely<Database>,
  filtered: Filtered,
  opts: { search: string; matches: ReturnType<typeof sql<boolean>>; limit: number; cursor?: string },
): Promise<HistoryRow[] | null> {
  const indexed = await indexedRowid(db);
  if (indexed === null) return null;
  const { rows: tail } = await sql<{ rowid: number }>`select rowid from query_history where rowid > ${indexed} limit ${SEARCH_TAIL_MAX + 1}`.execute(db);
  if (tail.length > SEARCH_TAIL_MAX) return null;

  // Under a cursor, start just above its entry's rowid instead of at the newest entry.
  let upper = indexed + 1;
  if (opts.cursor) {
    const { rows } = await sql<{ rowid: number }>`select rowid from query_history where id >= ${opts.cursor} order by id limit 1`.execute(db);
    if (rows[0]) upper = Math.min(upper, Number(rows[0].rowid) + SEARCH_ROWID_SLACK);
  }
  const want = opts.limit + 1;
  const found: Found[] = [];
  const check = async (rowids: number[]) => {
    if (rowids.length === 0) return;
    const rows = (await filtered
      .select(sql<number>`query_history.rowid`.as('search_rowid'))
      .where(sql<boolean>`query_history.rowid in (select value from json_each(${JSON.stringify(rowids)}))`)
      .where(opts.matches)
      .execute()) as Found[];
    found.push(...rows);
  };
  await check(tail.map((r) => Number(r.rowid)));

  const phrase = `"${opts.search.toLowerCase().replaceAll('"', '""')}"`;
  let chunk = FIRST_CHUNK;
  for (;;) {
    if (found.length >= want) {
      found.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
      found.length = want;
      // Final once the walk is SLACK rowids below the page's oldest entry (see the top).
      if (upper <= Number(found[want - 1].search_rowid) - SEARCH_ROWID_SLACK) break;
    }
    if (upper <= 1) break;
    const { rows } = await sql<{ rowid: number }>`
      select rowid from query_history_search where query_history_search match ${phrase} and rowid < ${upper}
      order by rowid desc limit ${chunk}`.execute(db);
    if (rows.length === 0) break;
    const rowids = rows.map((r) => Number(r.rowid));
    await check(rowids);
    upper = rowids[rowids.length - 1];
    chunk = Math.min(MAX_CHUNK, chunk * 2);
  }
  found.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  return found.slice(0, want).map(({ search_rowid: _, ...row }) => row as HistoryRow);
}

/**
 * Indexes up to `rows` entries past the watermark in one transaction; returns how many. Also
 * notices a store whose rowids were renumbered (VACUUM renumbers a table without an INTEGER
 * PRIMARY KEY) — the watermark's entry is no longer the one recorded — and starts over.
 */
export async function indexHistoryBatch(db: Kysely<Database>, rows: number): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const { rows: state } = await sql<{ indexed_rowid: number; indexed_id: string | null }>`
      select indexed_rowid, indexed_id from query_history_search_state where id = 1`.execute(trx);
    let from = Number(state[0]?.indexed_rowid ?? 0);
    const recorded = state[0]?.indexed_id ?? null;
    if (recorded !== null && from > 0) {
      const { rows: at } = await sql<{ id: string }>`select id from query_history where rowid = ${from}`.execute(trx);
      if (at[0] && at[0].id !== recorded) {
        await sql`insert into query_history_search (query_history_search) values ('delete-all')`.execute(trx);
        from = 0;
      }
    }
    const { rows: edge } = await sql<{ rowid: number; id: string }>`
      select rowid, id from query_history where rowid > ${from} order by rowid limit 1 offset ${rows - 1}`.execute(trx);
    const last = edge[0]
      ? edge[0]
      : (await sql<{ rowid: number; id: string }>`select rowid, id from query_history where rowid > ${from} order by rowid desc limit 1`.execute(trx)).rows[0];
    if (!last) {
      if (from !== Number(state[0]?.indexed_rowid ?? 0)) await sql`update query_history_search_state set indexed_rowid = ${from}, indexed_id = null where id = 1`.execute(trx);
      return 0;
    }
    const result = await sql`
      insert into query_history_search (rowid, sql) select rowid, sql from query_history where rowid > ${from} and rowid <= ${last.rowid}`.execute(trx);
    await sql`update query_history_search_state set indexed_rowid = ${last.rowid}, indexed_id = ${last.id} where id = 1`.execute(trx);
    return Number(result.numAffectedRows ?? 0);
  });
}

export interface SearchIndexer {
  /** Indexes until caught up (tests, the bench); resolves with the entries indexed. */
  catchUp(): Promise<number>;
  /** Stops the timer and waits for a running batch. */
  stop(): Promise<void>;
}

/**
 * Keeps the index caught up on the event loop's thread (better-sqlite3 is synchronous): every
 * `intervalMs`, batches sized to take about `sliceMs` each, yielding between them, so a
 * request waits at most one slice for it.
 */
export function startSearchIndexer(
  db: Kysely<Database>,
  opts: { intervalMs?: number; sliceMs?: number; onError?: (err: unknown) => void } = {},
): SearchIndexer {
  // Like retention's batches, ~10 ms a statement: bigger batches cost less per entry (FTS5
  // writes a segment per transaction), and a second of lag is a short walk for a search.
  const intervalMs = opts.intervalMs ?? 1000;
  const sliceMs = opts.sliceMs ?? 10;
  let batch = 200;
  let running: Promise<number> | null = null;
  let stopped = false;
  const run = () =>
    (running ??= (async () => {
      let total = 0;
      try {
        while (!stopped) {
          const started = performance.now();
          const n = await indexHistoryBatch(db, batch);
          total += n;
          const took = performance.now() - started;
          if (took > sliceMs) batch = Math.max(16, Math.floor(batch / 2));
          else if (took < sliceMs / 2 && n === batch) batch = Math.min(2_000, Math.ceil(batch * 1.5));
          if (n === 0) break;
          await new Promise((resolve) => setImmediate(resolve));
        }
      } catch (err) {
        opts.onError?.(err);
      } finally {
        running = null;
      }
      return total;
    })());
  const timer = setInterval(() => void run(), intervalMs).unref();
  return {
    async catchUp() {
      let total = 0;
      for (;;) {
        if (running) total += await running;
        const n = await run();
        total += n;
        if (n === 0) return total;
      }
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
