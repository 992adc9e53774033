// The SQLite store's walk of the history for a page that no index seeks to directly: a
// search the trigram index cannot serve (off, too far behind, one or two characters), or
// filters that no single (workspace_id, column, id) index covers. One statement
// `ORDER BY id DESC LIMIT n` would walk every entry it rejects in one go (60 ms at 45k entries
// for a rare text, seconds at millions), with nothing able to stop it: better-sqlite3 cannot
// interrupt a statement, and a worker thread cannot be terminated inside one. So the walk goes
// down the id range in slices, newest first, each one statement of the same filters bounded
// to ids in [lo, hi). Ids start with their creation time (src/ids.ts), so a slice is a span of
// time, sized from how long the previous one took. Slices partition the id range and are read
// in id order, so the rows are exactly those of the one statement, in the same order.
//
// Past `budgetMs` the walk stops between slices and says where: the page then holds what was
// found so far and its cursor continues below the last slice walked (fewer entries than the
// limit, nextCursor not null), instead of a request holding its worker without end.
import { performance } from 'node:perf_hooks';
import type { SelectQueryBuilder } from 'kysely';
import type { Database, HistoryRow } from '../store/schema.ts';

type Filtered = SelectQueryBuilder<Database, 'query_history', HistoryRow>;

export interface WalkedPage {
  /** Newest first, at most the `want` asked for. */
  rows: HistoryRow[];
  /** Set when the budget ran out: an id bound below which the walk has not looked yet. */
  resumeBelow: string | null;
}

/** A slice's aim: short enough that the budget and a terminating worker are honoured promptly. */
const SLICE_TARGET_MS = 20;
const FIRST_SPAN_MS = 1_000;
const B32 = '0123456789abcdefghjkmnpqrstvwxyz';

/** The smallest id made in millisecond `ms`, padded to a full id so that it is also a valid
 * cursor (history.ts decodeCursor). */
export function idFloor(ms: number): string {
  let t = Math.min(Math.max(0, Math.floor(ms)), 2 ** 50 - 1);
  let time = '';
  for (let i = 0; i < 10; i++) {
    time = B32[t % 32] + time;
    t = Math.floor(t / 32);
  }
  return `h_${time}${'0'.repeat(16)}`;
}

/** The creation time an id starts with. */
export function idTime(id: string): number {
  let ms = 0;
  for (const c of id.slice(2, 12)) ms = ms * 32 + B32.indexOf(c);
  return ms;
}

/**
 * The newest `want` rows of `filtered` (every filter and the reader's scope applied, no order
 * or limit) with ids below `below`, and not below `floor` (the oldest id that can match; the
 * workspace's oldest entry at most). `started` is the performance.now() the budget counts from.
 */
export async function walkHistory(
  filtered: Filtered,
  opts: { want: number; below?: string; floor: string; budgetMs: number; started: number },
): Promise<WalkedPage> {
  const found: HistoryRow[] = [];
  let hi = opts.below;
  let hiMs = hi ? idTime(hi) : Date.now();
  let span = FIRST_SPAN_MS;
  for (;;) {
    const loMs = hiMs - span;
    // The first slice is open above (entries of a process whose clock runs ahead), the last
    // open below.
    const lo = idFloor(loMs) <= opts.floor ? null : idFloor(loMs);
    let q = filtered;
    if (hi) q = q.where('id', '<', hi);
    if (lo) q = q.where('id', '>=', lo);
    const t = performance.now();
    found.push(
      ...(await q
        .orderBy('id', 'desc')
        .limit(opts.want - found.length)
        .execute()),
    );
    if (found.length >= opts.want || lo === null) return { rows: found, resumeBelow: null };
    const now = performance.now();
    if (now - opts.started >= opts.budgetMs) return { rows: found, resumeBelow: lo };
    const took = now - t;
    if (took < SLICE_TARGET_MS / 4) span *= 4;
    else if (took < SLICE_TARGET_MS / 2) span *= 2;
    else if (took > SLICE_TARGET_MS) span = Math.max(1, Math.floor(span / 2));
    hi = lo;
    hiMs = loMs;
  }
}
