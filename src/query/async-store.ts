// The `async_queries` rows (migration 0011_async_queries): an async query's state, shared by
// every process on the store, and the bound on what finished results take together.
import { STALE_MS, type AsyncRow, type RunningRow, type SharedDb } from './shared-running.ts';

export type AsyncStatus = 'running' | 'succeeded' | 'failed' | 'canceled' | 'timed_out';

export interface AsyncError {
  message: string;
  code: string;
  details?: Record<string, unknown>;
}

/** What GET answers about an async query, from a row or from the process running it. */
export interface AsyncView {
  queryId: string;
  workspaceId: string;
  userId: string;
  connectionId: string;
  status: AsyncStatus;
  submittedAt: string;
  finishedAt: string | null;
  /** ms since the epoch; null while running. */
  expiresAt: number | null;
  resultJson: string | null;
  error: AsyncError | null;
}

/** What a dead process's query says once another process notices. */
const LOST: AsyncError = { message: 'The dbq process running this query stopped before it finished', code: 'internal_error' };

export function viewOf(row: AsyncRow): AsyncView {
  return {
    queryId: row.query_id,
    workspaceId: row.workspace_id,
    userId: row.user_id,
    connectionId: row.connection_id,
    status: row.status as AsyncStatus,
    submittedAt: row.submitted_at,
    finishedAt: row.finished_at,
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
    resultJson: row.result_json,
    error: row.error_json === null ? null : (JSON.parse(row.error_json) as AsyncError),
  };
}

/** The query's row and, for an async query, its entry among the running statements, in one
 * transaction: either process may be asked about it as soon as the 202 is sent. */
export async function insertStarted(db: SharedDb, row: AsyncRow, running: RunningRow): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx.insertInto('async_queries').values(row).execute();
    await tx.insertInto('running_queries').values(running).execute();
  });
}

/** Characters of result JSON per statement: a result up to this is stored in its row. */
export const PART_CHARS = 1024 * 1024;

/** The outcome; a result over PART_CHARS goes in parts first, one statement each with a turn
 * of the event loop between them, and the row says `succeeded` only once they are all in. */
export async function writeFinished(db: SharedDb, view: AsyncView, bytes: number): Promise<void> {
  const json = view.resultJson;
  let parts = 0;
  if (json !== null && json.length > PART_CHARS) {
    for (let start = 0; start < json.length; parts++) {
      let end = Math.min(start + PART_CHARS, json.length);
      // Never between the two halves of a surrogate pair: each part is valid text.
      const last = json.charCodeAt(end - 1);
      if (end < json.length && last >= 0xd800 && last <= 0xdbff) end--;
      if (parts > 0) await nextTurn();
      await db
        .insertInto('async_query_parts')
        .values({ query_id: view.queryId, n: parts, body: json.slice(start, end) })
        .execute();
      start = end;
    }
  }
  await db
    .updateTable('async_queries')
    .set({
      status: view.status,
      finished_at: view.finishedAt,
      expires_at: view.expiresAt,
      result_json: parts > 0 ? null : json,
      error_json: view.error === null ? null : JSON.stringify(view.error),
      bytes,
      parts,
    })
    .where('query_id', '=', view.queryId)
    .execute();
}

/** A result stored in parts, read one part a statement. */
async function readParts(db: SharedDb, queryId: string, parts: number): Promise<string | null> {
  const pieces: string[] = [];
  for (let n = 0; n < parts; n++) {
    if (n > 0) await nextTurn();
    const part = await db
      .selectFrom('async_query_parts')
      .select('body')
      .where('query_id', '=', queryId)
      .where('n', '=', n)
      .executeTakeFirst();
    // Evicted or expired while being read: as if it had gone a moment earlier.
    if (!part) return null;
    pieces.push(part.body);
  }
  return pieces.join('');
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The row, if any and not expired. An expired one is deleted; a running one whose process
 * stopped heartbeating is marked failed (and kept its TTL from now, like any outcome). */
export async function loadView(db: SharedDb, queryId: string, ttlMs: number): Promise<AsyncView | undefined> {
  const row = await db.selectFrom('async_queries').selectAll().where('query_id', '=', queryId).executeTakeFirst();
  if (!row) return undefined;
  const now = Date.now();
  if (row.expires_at !== null && Number(row.expires_at) <= now) {
    await db.deleteFrom('async_queries').where('query_id', '=', queryId).execute();
    return undefined;
  }
  if (row.status === 'running' && Number(row.heartbeat_at) <= now - STALE_MS) {
    const lost: AsyncView = {
      ...viewOf(row),
      status: 'failed',
      finishedAt: new Date(Number(row.heartbeat_at)).toISOString(),
      expiresAt: now + ttlMs,
      error: LOST,
    };
    await db
      .updateTable('async_queries')
      .set({ status: 'failed', finished_at: lost.finishedAt, expires_at: lost.expiresAt, error_json: JSON.stringify(LOST) })
      .where('query_id', '=', queryId)
      .where('status', '=', 'running')
      .execute();
    return lost;
  }
  const view = viewOf(row);
  if (row.parts > 0) {
    view.resultJson = await readParts(db, queryId, Number(row.parts));
    if (view.resultJson === null) return undefined;
  }
  return view;
}

/** Keeps the running rows of this process's async queries alive. */
export async function heartbeat(db: SharedDb, queryIds: string[], now: number): Promise<void> {
  for (let i = 0; i < queryIds.length; i += 500) {
    await db
      .updateTable('async_queries')
      .set({ heartbeat_at: now })
      .where('query_id', 'in', queryIds.slice(i, i + 500))
      .where('status', '=', 'running')
      .execute();
  }
}

/** Expired results, and queries of processes that died long ago. */
export async function sweep(db: SharedDb, now: number, ttlMs: number): Promise<void> {
  await db.deleteFrom('async_queries').where('expires_at', '<=', now).execute();
  await db
    .deleteFrom('async_queries')
    .where('status', '=', 'running')
    .where('heartbeat_at', '<', now - STALE_MS - ttlMs)
    .execute();
}

/** Past the byte budget or the count, the oldest finished results (by id: submission order)
 * go first, whichever process ran them; `keep`, the result that just arrived, stays even if
 * it alone is over the budget. */
export async function evict(db: SharedDb, keep: string, budgetBytes: number, maxFinished: number): Promise<void> {
  const totals = await db
    .selectFrom('async_queries')
    .select((eb) => [eb.fn.countAll().as('n'), eb.fn.coalesce(eb.fn.sum('bytes'), eb.lit(0)).as('b')])
    .where('status', '<>', 'running')
    .executeTakeFirstOrThrow();
  let count = Number(totals.n);
  let bytes = Number(totals.b);
  let after = '';
  while (bytes > budgetBytes || count > maxFinished) {
    const oldest = await db
      .selectFrom('async_queries')
      .select(['query_id', 'bytes'])
      .where('status', '<>', 'running')
      .where('query_id', '<>', keep)
      .where('query_id', '>', after)
      .orderBy('query_id')
      .limit(200)
      .execute();
    if (oldest.length === 0) return;
    const drop: string[] = [];
    for (const r of oldest) {
      if (bytes <= budgetBytes && count <= maxFinished) break;
      drop.push(r.query_id);
      bytes -= Number(r.bytes);
      count--;
      after = r.query_id;
    }
    await db.deleteFrom('async_queries').where('query_id', 'in', drop).execute();
  }
}
