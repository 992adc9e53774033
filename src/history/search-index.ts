// The SQLite store's history search index (migration 0009): contentless FTS5 trigram tables
// of query_history.sql keyed by its rowid, one per block of `partition_rows` rowids, filled
// behind the writes. A search of three characters or more asks them for candidate rowids
// newest first and checks each candidate with the same `lower(sql) like` test as the
// unindexed walk, so the index only ever narrows the walk — a search answers the same entries
// with it, without it, half built, or holding entries deleted since.
//
// Why behind the writes and not in the INSERT: FTS5 pays per transaction (a segment written,
// merges), so per history batch it cost 75 µs an entry on the event loop; batches of a few
// hundred cost 15–35 µs each. Why partitions: deleting from FTS5 entry by entry stalled the
// loop (0.5–3 s on 10M entries) and made retention 10× slower; a partition is dropped whole
// once retention has emptied its block. Why rowid order can stand for id order: one process
// writes its entries in id order (history-log.ts), and ids are monotonic within a process, so
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

const PARTITION = /^query_history_search_(\d+)$/;
const partitionName = (k: number) => `query_history_search_${k}`;

/** The partitions that exist, by number. */
async function partitions(db: Kysely<Database>): Promise<number[]> {
  const { rows } = await sql<{
    name: string;
  }>`select name from sqlite_master where type = 'table' and name like 'query\_history\_search\_%' escape '\\'`.execute(db);
  return rows
    .flatMap((r) => {
      const m = PARTITION.exec(r.name);
      return m ? [Number(m[1])] : [];
    })
    .sort((a, b) => a - b);
}

/** The statements that create partition `k`. */
function searchPartitionDdl(k: number): string[] {
  const name = partitionName(k);
  return [
    `create virtual table if not exists ${name} using fts5(sql, content = '', contentless_delete = 1, tokenize = 'trigram')`,
    // automerge 8 (default 4): each entry is rewritten by fewer merges as a partition grows,
    // for a few more segments a search reads. deletemerge 0: the only deletes are a stale
    // range's (see the migration); no merge may rewrite a segment inside that statement.
    `insert into ${name} (${name}, rank) values ('automerge', 8)`,
    `insert into ${name} (${name}, rank) values ('deletemerge', 0)`,
  ];
}

async function createSearchPartition(db: Kysely<Database>, k: number): Promise<void> {
  for (const statement of searchPartitionDdl(k)) await sql.raw(statement).execute(db);
}

export function hasSearchIndex(db: Kysely<Database>): boolean {
  return db.getExecutor().adapter instanceof SqliteAdapter;
}

/** A trigram index can only answer three characters or more. */
export function searchIndexApplies(db: Kysely<Database>, search: string): boolean {
  return hasSearchIndex(db) && [...search].length >= 3;
}

type Filtered = SelectQueryBuilder<Database, 'query_history', HistoryRow>;
type Found = HistoryRow & { search_rowid: number };
const newestFirst = (a: Found, b: Found) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

interface State {
  indexed_rowid: number;
  indexed_id: string | null;
  stale_upto: number | null;
  partition_rows: number;
}

async function readState(db: Kysely<Database>): Promise<State & { id_now: string | null }> {
  const { rows } = await sql<State & { id_now: string | null }>`
    select s.indexed_rowid, s.indexed_id, s.stale_upto, s.partition_rows, h.id as id_now
    from query_history_search_state s left join query_history h on h.rowid = s.indexed_rowid where s.id = 1`.execute(db);
  const r = rows[0];
  return {
    ...r,
    indexed_rowid: Number(r.indexed_rowid),
    stale_upto: r.stale_upto === null ? null : Number(r.stale_upto),
    partition_rows: Number(r.partition_rows),
  };
}

/** The watermark's entry is no longer the one indexed: a VACUUM renumbered the rowids. */
const renumbered = (s: State & { id_now: string | null }) => s.indexed_id !== null && s.id_now !== null && s.id_now !== s.indexed_id;

/**
 * The newest `limit + 1` entries of `filtered` (every filter and the cursor applied) whose
 * statement contains `search`, or null when the index cannot serve (too far behind, or
 * renumbered and not rebuilt yet). `matches` is the exact test each candidate must pass.
 */
export async function searchWithIndex(
  db: Kysely<Database>,
  filtered: Filtered,
  opts: { search: string; matches: ReturnType<typeof sql<boolean>>; limit: number; cursor?: string },
): Promise<HistoryRow[] | null> {
  const state = await readState(db);
  if (renumbered(state)) return null;
  const indexed = state.indexed_rowid;
  const { rows: tail } = await sql<{
    rowid: number;
  }>`select rowid from query_history where rowid > ${indexed} limit ${SEARCH_TAIL_MAX + 1}`.execute(db);
  if (tail.length > SEARCH_TAIL_MAX) return null;

  // Under a cursor, start just above its entry's rowid instead of at the newest entry.
  let upper = indexed + 1;
  if (opts.cursor) {
    const { rows } = await sql<{ rowid: number }>`select rowid from query_history where id >= ${opts.cursor} order by id limit 1`.execute(
      db,
    );
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
  const parts = await partitions(db);
  const size = state.partition_rows;
  let chunk = FIRST_CHUNK;
  for (;;) {
    if (found.length >= want) {
      found.sort(newestFirst);
      found.length = want;
      // Final once the walk is SLACK rowids below the page's oldest entry (see the top).
      if (upper <= Number(found[want - 1].search_rowid) - SEARCH_ROWID_SLACK) break;
    }
    // The newest partition holding rowids below `upper`.
    const k = parts.findLast((p) => p * size + 1 < upper);
    if (k === undefined) break;
    const { rows } = await sql<{ rowid: number }>`
      select rowid from ${sql.table(partitionName(k))} where ${sql.table(partitionName(k))} match ${phrase} and rowid < ${upper}
      order by rowid desc limit ${chunk}`.execute(db);
    if (rows.length < chunk) upper = k * size + 1; // this partition is done
    if (rows.length === 0) continue;
    const rowids = rows.map((r) => Number(r.rowid));
    await check(rowids);
    if (rows.length === chunk) upper = rowids[rowids.length - 1];
    chunk = Math.min(MAX_CHUNK, chunk * 2);
  }
  found.sort(newestFirst);
  return found.slice(0, want).map(({ search_rowid: _, ...row }) => row as HistoryRow);
}

/**
 * One round of upkeep in one transaction: starts over if the rowids were renumbered (VACUUM
 * renumbers a table without an INTEGER PRIMARY KEY), removes a stale range (the newest
 * entries deleted, their rowids about to be reused), drops partitions retention has emptied,
 * then indexes up to `rows` entries past the watermark. Returns how many it indexed.
 */
export async function indexHistoryBatch(db: Kysely<Database>, rows: number): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const state = await readState(trx);
    let from = state.indexed_rowid;
    const size = state.partition_rows;
    let parts = await partitions(trx);
    const drop = async (k: number) => {
      await sql`drop table ${sql.table(partitionName(k))}`.execute(trx);
      parts = parts.filter((p) => p !== k);
    };
    if (renumbered(state)) {
      for (const k of parts) await drop(k);
      from = 0;
    }
    if (state.stale_upto !== null && state.stale_upto > from) {
      for (const k of parts) {
        const lo = k * size + 1;
        const hi = (k + 1) * size;
        if (hi <= from || lo > state.stale_upto) continue;
        // A block wholly above the watermark (now the newest live rowid) has no entry left.
        if (lo > from) await drop(k);
        else await sql`delete from ${sql.table(partitionName(k))} where rowid > ${from} and rowid <= ${state.stale_upto}`.execute(trx);
      }
    }
    const { rows: oldest } = await sql<{ r: number | null }>`select min(rowid) as r from query_history`.execute(trx);
    const min = oldest[0]?.r === null || oldest[0]?.r === undefined ? from + 1 : Number(oldest[0].r);
    for (const k of parts) if ((k + 1) * size < min && (k + 1) * size <= from) await drop(k);

    // The next batch, within one partition; a block with nothing past the watermark (its
    // entries deleted before they were indexed) is skipped to the next entry's block.
    let indexed = 0;
    let to = from;
    let toId: string | null = from === state.indexed_rowid ? state.indexed_id : null;
    for (;;) {
      const k = Math.floor(to / size);
      const end = (k + 1) * size;
      const { rows: edge } = await sql<{ rowid: number; id: string }>`
        select rowid, id from query_history where rowid > ${to} and rowid <= ${end} order by rowid limit 1 offset ${rows - 1}`.execute(trx);
      const last =
        edge[0] ??
        (
          await sql<{
            rowid: number;
            id: string;
          }>`select rowid, id from query_history where rowid > ${to} and rowid <= ${end} order by rowid desc limit 1`.execute(trx)
        ).rows[0];
      if (last) {
        if (!parts.includes(k)) await createSearchPartition(trx, k);
        const result = await sql`
          insert into ${sql.table(partitionName(k))} (rowid, sql) select rowid, sql from query_history where rowid > ${to} and rowid <= ${last.rowid}`.execute(
          trx,
        );
        indexed = Number(result.numAffectedRows ?? 0);
        to = Number(last.rowid);
        toId = last.id;
        break;
      }
      const { rows: next } = await sql<{
        rowid: number;
      }>`select rowid from query_history where rowid > ${to} order by rowid limit 1`.execute(trx);
      if (!next[0]) break;
      to = Math.floor((Number(next[0].rowid) - 1) / size) * size;
      toId = null;
    }
    // An idle round writes nothing (no commit every second on an idle store).
    if (to !== state.indexed_rowid || toId !== state.indexed_id || state.stale_upto !== null) {
      await sql`update query_history_search_state set indexed_rowid = ${to}, indexed_id = ${toId}, stale_upto = null where id = 1`.execute(
        trx,
      );
    }
    return indexed;
  });
}

export interface SearchIndexer {
  /** Indexes until caught up (tests, the bench); resolves with the entries indexed. */
  catchUp(): Promise<number>;
  /** Batches run, entries indexed and the longest batch, in ms (bench/history-scale.ts). */
  readonly stats: { batches: number; entries: number; maxBatchMs: number };
  /** Stops the timer and waits for a running batch. */
  stop(): Promise<void>;
}

/**
 * Keeps the index caught up on the event loop's thread (better-sqlite3 is synchronous): every
 * `intervalMs`, batches sized to take about `sliceMs` each, yielding between them, so a
 * request waits about one slice for it — longer when FTS5 merges segments inside a batch.
 *
 * Not on a worker thread of its own (measured with 8 clients writing history
 * and the indexer catching up 30k entries): a second connection that writes is a second
 * writer, and SQLite has one write lock. While the worker held it, the event loop slept in the
 * server connection's busy handler at its next history commit (longest hold 79–117 ms, against
 * 33–68 ms with the batches on the loop and 28–49 ms with no indexer at all, on two shared
 * cores), and a store transaction that read before it wrote failed outright with SQLITE_BUSY
 * when the worker committed in between (107–147 of ~900).
 * The batches can leave the loop together with the store's other writes, on one writer.
 */
export function startSearchIndexer(
  db: Kysely<Database>,
  opts: { intervalMs?: number; sliceMs?: number; onError?: (err: unknown) => void } = {},
): SearchIndexer {
  // ~5 ms a batch: bigger batches cost less per entry (FTS5 writes a segment per transaction),
  // but each is a hold of the event loop; a second of lag is a short walk for a search.
  const intervalMs = opts.intervalMs ?? 1000;
  const sliceMs = opts.sliceMs ?? 5;
  let batch = 200;
  let running: Promise<number> | null = null;
  const stats = { batches: 0, entries: 0, maxBatchMs: 0 };
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
          stats.batches++;
          stats.entries += Math.max(0, n);
          stats.maxBatchMs = Math.max(stats.maxBatchMs, took);
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
    stats,
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
