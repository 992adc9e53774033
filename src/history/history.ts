// Query history: exactly one entry per query request, and keyset-paged reads. Entry ids are
// time-ordered (src/ids.ts), so "newest first" is `ORDER BY id DESC` and the cursor is the
// last id seen: entries written while a client pages land above its cursor and can neither
// shift a page (no skips) nor reappear (no repeats), unlike OFFSET paging. Writing entries (the
// group commit, which holds state per store) is history-log.ts.
import { PostgresAdapter, SqliteAdapter, sql, type Kysely } from 'kysely';
import { z } from 'zod';
import { InvalidRequestError } from '../errors.ts';
import { firstIdAt } from '../ids.ts';
import type { Database, HistoryRow } from '../store/schema.ts';
import { searchIndexApplies, searchWithIndex } from './search-index.ts';
import { walkHistory } from './history-walk.ts';
import type { Principal } from '../workspaces/api-keys.ts';

export type HistoryStatus = HistoryRow['status'];
export type HistorySource = HistoryRow['source'];
export const HISTORY_STATUSES: readonly HistoryStatus[] = ['succeeded', 'failed', 'rejected', 'timed_out', 'canceled', 'running'];
export const HISTORY_SOURCES: readonly HistorySource[] = ['api', 'mcp', 'ai', 'ui'];

export interface HistoryEntry {
  id: string;
  queryId: string;
  connectionId: string;
  connectionName: string;
  sql: string;
  statementType: string;
  status: HistoryStatus;
  rowCount: number | null;
  affectedRows: number | null;
  durationMs: number;
  error: string | null;
  source: HistorySource;
  apiKey: { id: string; name: string } | null;
  user: { id: string; email: string };
  createdAt: string;
  /** The curated tool this entry ran; null for raw SQL. */
  tool: { name: string; version: number } | null;
}

export interface NewHistoryEntry {
  principal: Principal;
  queryId: string;
  connection: { id: string; name: string };
  sql: string;
  statementType: string;
  status: HistoryStatus;
  rowCount: number | null;
  affectedRows: number | null;
  durationMs: number;
  error: string | null;
  source: HistorySource;
  /** The curated tool run, if any (src/tools/tools.ts). */
  tool?: { name: string; version: number } | null;
}

export interface HistoryOutcome {
  status: Exclude<HistoryStatus, 'running'>;
  rowCount: number | null;
  affectedRows: number | null;
  durationMs: number;
  error: string | null;
}

/** The public shape of a stored entry. */
export function toHistoryEntry(row: HistoryRow): HistoryEntry {
  return {
    id: row.id,
    queryId: row.query_id,
    connectionId: row.connection_id,
    connectionName: row.connection_name,
    sql: row.sql,
    statementType: row.statement_type,
    status: row.status,
    rowCount: row.row_count,
    affectedRows: row.affected_rows === null ? null : Number(row.affected_rows),
    durationMs: row.duration_ms,
    error: row.error,
    source: row.source,
    apiKey: row.api_key_id ? { id: row.api_key_id, name: row.api_key_name ?? '' } : null,
    user: { id: row.user_id, email: row.user_email },
    createdAt: row.created_at,
    tool: row.tool_name === null ? null : { name: row.tool_name, version: Number(row.tool_version) },
  };
}

/** A query-string integer: `?limit=abc` once answered "expected number, received NaN"; every
 * way of getting it wrong now says what is wanted. */
export function queryInteger(min: number, max: number) {
  const error = `must be an integer from ${min} to ${max}`;
  return z.coerce.number({ error }).int({ error }).min(min, { error }).max(max, { error });
}

const isoDate = z.string().refine((v) => !Number.isNaN(Date.parse(v)), 'must be an ISO 8601 date or time');

export const historyQuerySchema = z
  .object({
    limit: queryInteger(1, 200).default(50),
    cursor: z.string().max(200).optional(),
    connectionId: z.string().max(200).optional(),
    status: z.enum(HISTORY_STATUSES as [HistoryStatus, ...HistoryStatus[]]).optional(),
    source: z.enum(HISTORY_SOURCES as [HistorySource, ...HistorySource[]]).optional(),
    since: isoDate.optional(),
    until: isoDate.optional(),
    search: z.string().max(1000).optional(),
  })
  .strict();
export type HistoryQuery = z.infer<typeof historyQuerySchema>;

function encodeCursor(id: string): string {
  return Buffer.from(JSON.stringify({ id })).toString('base64url');
}

function decodeCursor(cursor: string): string {
  try {
    const { id } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { id?: unknown };
    if (typeof id === 'string' && /^h_[0-9a-z]{26}$/.test(id)) return id;
  } catch {
    // fall through to the error below
  }
  throw new InvalidRequestError('cursor is not valid', { field: 'cursor' });
}

// Clocks of several processes differ a little; an entry's id time and created_at come from one
// process but a filter's bound must not drop an entry whose id time is a bit off.
const ID_CLOCK_SLACK_MS = 60_000;
/** An id's time prefix holds 10 base32 digits (ms < 2^50, the year 37000-odd). */
const idBound = (ms: number) => firstIdAt('h', Math.min(Math.max(0, ms), 2 ** 50 - 1));

/** Whose entries a read may return: the part of a Principal the listing needs, as plain data
 * (it crosses to the history reader's worker thread, src/history/history-reader.ts). */
export interface HistoryScope {
  workspaceId: string;
  /** Readers see their own entries only; admins (null) see the workspace's. */
  userId: string | null;
  /** A key scoped to some connections sees the entries of those connections only. */
  connections: string[] | null;
}

export function historyScope(principal: Principal): HistoryScope {
  const scoped = principal.apiKey?.scope?.connections;
  return {
    workspaceId: principal.workspace.id,
    userId: principal.user.role === 'admin' ? null : principal.user.id,
    connections: scoped ? [...scoped] : null,
  };
}

export interface HistoryPage {
  /** Newest first: up to limit + 1 (one more tells that a next page exists). */
  rows: HistoryRow[];
  /** Set when a walk stopped at its budget (history-walk.ts): the page continues below it. */
  resumeBelow: string | null;
}

/** Reads the pages of the SQLite store that may walk (walksHistory) off the event loop:
 * src/history/history-reader.ts. */
export interface HistoryPageReader {
  read(scope: HistoryScope, query: HistoryQuery): Promise<HistoryPage>;
}

export async function listHistory(
  db: Kysely<Database>,
  principal: Principal,
  query: HistoryQuery,
  opts: { reader?: HistoryPageReader | null } = {},
): Promise<{ entries: HistoryEntry[]; nextCursor: string | null }> {
  // Refused here, before anything is handed to a worker thread.
  if (query.cursor) decodeCursor(query.cursor);
  const scope = historyScope(principal);
  const { rows, resumeBelow } =
    opts.reader && walksHistory(scope, query) ? await opts.reader.read(scope, query) : await selectHistoryPage(db, scope, query);
  const page = rows.slice(0, query.limit).map(toHistoryEntry);
  const nextCursor =
    rows.length > query.limit ? encodeCursor(page[page.length - 1].id) : resumeBelow === null ? null : encodeCursor(resumeBelow);
  return { entries: page, nextCursor };
}

/** Whether a page may walk entries it does not return: a search, a time window (created_at is
 * tested entry by entry within ID_CLOCK_SLACK_MS of each bound), or more than one equality
 * (the reader, the key's connections, each filter) where each index covers one (migration
 * 0008). Any other page is one index seek of limit + 1 entries. */
export function walksHistory(scope: HistoryScope, query: HistoryQuery): boolean {
  if (query.search || query.since || query.until) return true;
  const equalities = [scope.userId, query.connectionId, query.status, query.source].filter((v) => v !== null && v !== undefined).length;
  return equalities + (scope.connections?.length ?? 0) > 1;
}

/**
 * The rows of a page. On PostgreSQL one statement (the walk runs in its backend). On SQLite a
 * page that walksHistory is read by the trigram index when it can serve it (search-index.ts),
 * and otherwise in bounded slices (history-walk.ts), which stop once `budgetMs` is spent (no
 * limit unless given: the history reader's worker gives one).
 */
export async function selectHistoryPage(
  db: Kysely<Database>,
  scope: HistoryScope,
  query: HistoryQuery,
  opts: { budgetMs?: number } = {},
): Promise<HistoryPage> {
  const started = performance.now();
  const cursor = query.cursor ? decodeCursor(query.cursor) : undefined;
  let q = db.selectFrom('query_history').selectAll().where('workspace_id', '=', scope.workspaceId);
  if (scope.userId !== null) q = q.where('user_id', '=', scope.userId);
  if (scope.connections) q = scope.connections.length ? q.where('connection_id', 'in', scope.connections) : q.where(sql<boolean>`1 = 0`);
  if (cursor) q = q.where('id', '<', cursor);
  if (query.connectionId) {
    // An id or a name, never both: ids start with conn_ and names may not (connections.ts).
    // One column each, so each filter walks its own (workspace_id, column, id) index in
    // keyset order (migration 0008) instead of merging two.
    const c = query.connectionId;
    q = q.where(c.startsWith('conn_') ? 'connection_id' : 'connection_name', '=', c);
  }
  if (query.status) q = q.where('status', '=', query.status);
  if (query.source) q = q.where('source', '=', query.source);
  // created_at and the id's time prefix are written together (ids.ts), so the time bounds
  // are also id bounds the keyset index can start and stop at; created_at stays exact.
  let floor: string | null = null;
  if (query.since) {
    const since = new Date(query.since);
    floor = idBound(since.getTime() - ID_CLOCK_SLACK_MS);
    q = q.where('created_at', '>=', since.toISOString()).where('id', '>=', floor);
  }
  let ceiling = cursor;
  if (query.until) {
    const until = new Date(query.until);
    const bound = idBound(until.getTime() + ID_CLOCK_SLACK_MS);
    q = q.where('created_at', '<', until.toISOString()).where('id', '<', bound);
    if (ceiling === undefined || bound < ceiling) ceiling = bound;
  }
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  if (query.search) {
    const needle = query.search.toLowerCase();
    if (postgres) {
      for (const condition of postgresSearchConditions(needle)) q = q.where(condition);
    } else {
      // ESCAPE spelled out: SQLite has no default LIKE escape character.
      const pattern = `%${needle.replace(/[\\%_]/g, (m) => `\\${m}`)}%`;
      const matches = sql<boolean>`lower(${sql.ref('sql')}) like ${pattern} escape '\\'`;
      // The trigram index narrows the walk to candidates (search-index.ts).
      if (searchIndexApplies(db, query.search)) {
        const rows = await searchWithIndex(db, q, { search: query.search, matches, limit: query.limit, cursor });
        if (rows) return { rows, resumeBelow: null };
      }
      q = q.where(matches);
    }
  }
  if (postgres || !walksHistory(scope, query))
    return {
      rows: await q
        .orderBy('id', 'desc')
        .limit(query.limit + 1)
        .execute(),
      resumeBelow: null,
    };
  // The walk stops at the workspace's oldest entry (one seek of its keyset index).
  const oldest = await db
    .selectFrom('query_history')
    .select((eb) => eb.fn.min('id').as('id'))
    .where('workspace_id', '=', scope.workspaceId)
    .executeTakeFirst();
  if (!oldest?.id) return { rows: [], resumeBelow: null };
  return walkHistory(q, {
    want: query.limit + 1,
    below: ceiling,
    floor: floor !== null && floor > oldest.id ? floor : oldest.id,
    budgetMs: opts.budgetMs ?? Infinity,
    started,
  });
}

/** PostgreSQL's search conditions for a lower-cased text. Exact: strpos, a plain substring
 * test. For the pg_trgm index, a LIKE that matches a superset: each `%` or `_` of the text as
 * the wildcard `_`. Escaped (`\_`), they are literal non-word characters to pg_trgm, which then
 * adds word-boundary trigrams such as 're ' that nearly every statement holds ('where '): 34 ms
 * on 10M entries instead of 0.5. */
export function postgresSearchConditions(needle: string) {
  const loose = `%${needle.replace(/\\/g, '\\\\').replace(/%/g, '_')}%`;
  return [sql<boolean>`lower(${sql.ref('sql')}) like ${loose} escape '\\'`, sql<boolean>`strpos(lower(${sql.ref('sql')}), ${needle}) > 0`];
}

/** Deletes entries older than the retention; returns how many went. An id starts with its
 * creation time (src/ids.ts), written at the same moment as created_at, so the primary key
 * finds them and the hot insert path keeps one index fewer. In batches by id range, one
 * statement (one short transaction) each, with a pause between them: a first run over months
 * of history must not hold locks, or SQLite's event loop, for seconds while queries wait to
 * write their entries. PostgreSQL deletes in its own backend (and row locks on old entries
 * never block inserts of new ones): 10,000 rows a statement. SQLite deletes on the event
 * loop's thread (better-sqlite3 is synchronous), so there the batch adapts to keep each
 * statement near PRUNE_SQLITE_TARGET_MS. */
export async function pruneHistory(db: Kysely<Database>, days: number, opts: { batch?: number; pauseMs?: number } = {}): Promise<number> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  const adaptive = sqlite && opts.batch === undefined;
  let batch = opts.batch ?? (sqlite ? PRUNE_BATCH_SQLITE : PRUNE_BATCH);
  const pauseMs = opts.pauseMs ?? PRUNE_PAUSE_MS;
  const cutoff = firstIdAt('h', Date.now() - days * 86_400_000);
  let deleted = 0;
  for (;;) {
    const started = performance.now();
    // The batch's last id: the batch-th oldest entry below the cutoff, found on the primary key.
    const edge = await db
      .selectFrom('query_history')
      .select('id')
      .where('id', '<', cutoff)
      .orderBy('id')
      .offset(batch - 1)
      .limit(1)
      .executeTakeFirst();
    let del = db.deleteFrom('query_history').where('id', '<', cutoff);
    if (edge) del = del.where('id', '<=', edge.id);
    const result = await del.executeTakeFirst();
    deleted += Number(result.numDeletedRows ?? 0);
    if (!edge) return deleted;
    if (adaptive) {
      const took = performance.now() - started;
      if (took > PRUNE_SQLITE_TARGET_MS) batch = Math.max(PRUNE_BATCH_MIN, Math.floor(batch / 2));
      else if (took < PRUNE_SQLITE_TARGET_MS / 2) batch = Math.min(PRUNE_BATCH, Math.ceil(batch * 1.5));
    }
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
}

export const PRUNE_BATCH = 10_000;
const PRUNE_BATCH_SQLITE = 1_000;
const PRUNE_BATCH_MIN = 50;
const PRUNE_SQLITE_TARGET_MS = 10;
const PRUNE_PAUSE_MS = 10;

/** No statement runs longer than this: the longest timeout a request may ask for (300 s), its
 * connect and slot waits, and the shutdown grace, with room to spare. */
export const ABANDONED_AFTER_MS = 15 * 60_000;
export const ABANDONED_ERROR = 'dbq stopped before this statement finished; whether it took effect is unknown';

/** A write's entry is written `running` before its statement is sent and completed after. A
 * process killed in between (kill -9, power loss) leaves it `running` for ever, listed by GET
 * /history as still running. Entries older than any statement can run are marked failed with
 * a message saying the outcome is unknown. Per workspace, on the (workspace, status, id) index. */
export async function failAbandonedRunning(db: Kysely<Database>, olderThanMs = ABANDONED_AFTER_MS): Promise<number> {
  const cutoff = firstIdAt('h', Date.now() - olderThanMs);
  const workspaces = await db.selectFrom('workspaces').select('id').execute();
  let failed = 0;
  for (const { id } of workspaces) {
    const result = await db
      .updateTable('query_history')
      .set({ status: 'failed', error: ABANDONED_ERROR })
      .where('workspace_id', '=', id)
      .where('status', '=', 'running')
      .where('id', '<', cutoff)
      .executeTakeFirst();
    failed += Number(result.numUpdatedRows);
  }
  return failed;
}
