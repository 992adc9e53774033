// Query history: exactly one entry per query request, and keyset-paged reads. Entry ids are
// time-ordered (src/ids.ts), so "newest first" is `ORDER BY id DESC` and the cursor is the
// last id seen: entries written while a client pages land above its cursor and can neither
// shift a page (no skips) nor reappear (no repeats), unlike OFFSET paging.
import { CompiledQuery, sql, type Kysely } from 'kysely';
import { z } from 'zod';
import { InvalidRequestError } from '../errors.ts';
import { firstIdAt, newId, nowIso } from '../ids.ts';
import type { Database, HistoryRow } from '../store/schema.ts';
import type { Principal } from '../workspaces/api-keys.ts';

export type HistoryStatus = HistoryRow['status'];
export type HistorySource = HistoryRow['source'];
export const HISTORY_STATUSES: readonly HistoryStatus[] = ['succeeded', 'failed', 'rejected', 'timed_out', 'canceled'];
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
}

export async function writeHistory(db: Kysely<Database>, e: NewHistoryEntry): Promise<HistoryEntry> {
  const row: HistoryRow = {
    id: newId('h'),
    workspace_id: e.principal.workspace.id,
    query_id: e.queryId,
    connection_id: e.connection.id,
    connection_name: e.connection.name,
    sql: e.sql,
    statement_type: e.statementType,
    status: e.status,
    row_count: e.rowCount,
    affected_rows: e.affectedRows,
    duration_ms: Math.round(e.durationMs),
    error: e.error,
    source: e.source,
    api_key_id: e.principal.apiKey?.id ?? null,
    api_key_name: e.principal.apiKey?.name ?? null,
    user_id: e.principal.user.id,
    user_email: e.principal.user.email,
    created_at: nowIso(),
  };
  await enqueue(db, row);
  return toEntry(row);
}

// Group commit: entries written close together share one INSERT (one SQLite transaction, one
// PostgreSQL round trip) instead of a commit each — on the /query hot path a commit per entry
// was a quarter of the server's CPU. Every caller still waits until its own entry is
// committed, so no response goes out for a query whose history entry is not stored. Batches
// are written one after another in id order, so keyset readers never see a newer entry
// committed before an older one.
const MAX_BATCH = 200;

interface Pending {
  row: HistoryRow;
  resolve(): void;
  reject(err: unknown): void;
}

interface Queue {
  pending: Pending[];
  scheduled: boolean;
  chain: Promise<void>;
}

const queues = new WeakMap<Kysely<Database>, Queue>();

function enqueue(db: Kysely<Database>, row: HistoryRow): Promise<void> {
  let queue = queues.get(db);
  if (!queue) {
    queue = { pending: [], scheduled: false, chain: Promise.resolve() };
    queues.set(db, queue);
  }
  const q = queue;
  return new Promise<void>((resolve, reject) => {
    q.pending.push({ row, resolve, reject });
    if (!q.scheduled) {
      q.scheduled = true;
      // setImmediate: every entry produced by the I/O events of this loop turn joins the batch.
      setImmediate(() => {
        q.scheduled = false;
        q.chain = q.chain.then(() => flush(db, q));
      });
    }
  });
}

async function flush(db: Kysely<Database>, q: Queue): Promise<void> {
  while (q.pending.length > 0) {
    const batch = q.pending.splice(0, MAX_BATCH);
    try {
      await db.executeQuery(CompiledQuery.raw(insertText(db, batch.length), batch.flatMap((p) => HISTORY_COLUMNS.map((c) => p.row[c]))));
      for (const p of batch) p.resolve();
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }
}

// Kysely builds and compiles an INSERT from scratch on every call; for the group commit that
// was more CPU than the insert itself. The text for n rows is compiled once per store and run
// with each batch's values (the store's statement cache then skips SQLite's prepare too).
const HISTORY_COLUMNS = [
  'id', 'workspace_id', 'query_id', 'connection_id', 'connection_name', 'sql', 'statement_type', 'status', 'row_count',
  'affected_rows', 'duration_ms', 'error', 'source', 'api_key_id', 'api_key_name', 'user_id', 'user_email', 'created_at',
] as const satisfies readonly (keyof HistoryRow)[];
// Fails to compile when a column is added to HistoryRow but not listed above.
const everyColumnListed: [Exclude<keyof HistoryRow, (typeof HISTORY_COLUMNS)[number]>] extends [never] ? true : never = true;
void everyColumnListed;
const PLACEHOLDER_ROW = Object.fromEntries(HISTORY_COLUMNS.map((c) => [c, null])) as unknown as HistoryRow;
const insertTexts = new WeakMap<Kysely<Database>, Map<number, string>>();

function insertText(db: Kysely<Database>, rows: number): string {
  let texts = insertTexts.get(db);
  if (!texts) insertTexts.set(db, (texts = new Map()));
  let text = texts.get(rows);
  if (text === undefined) {
    const compiled = db.insertInto('query_history').values(Array.from({ length: rows }, () => PLACEHOLDER_ROW)).compile();
    // Every value must be a parameter, in row-major column order, for the texts to be reusable.
    if (compiled.parameters.length !== rows * HISTORY_COLUMNS.length) throw new Error('history insert did not compile to one parameter per value');
    text = compiled.sql;
    texts.set(rows, text);
  }
  return text;
}

function toEntry(row: HistoryRow): HistoryEntry {
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

export async function listHistory(
  db: Kysely<Database>,
  principal: Principal,
  query: HistoryQuery,
): Promise<{ entries: HistoryEntry[]; nextCursor: string | null }> {
  let q = db.selectFrom('query_history').selectAll().where('workspace_id', '=', principal.workspace.id);
  // Readers see their own entries only; admins see the workspace's.
  if (principal.user.role !== 'admin') q = q.where('user_id', '=', principal.user.id);
  if (query.cursor) q = q.where('id', '<', decodeCursor(query.cursor));
  if (query.connectionId) {
    const c = query.connectionId;
    q = q.where((eb) => eb.or([eb('connection_id', '=', c), eb('connection_name', '=', c)]));
  }
  if (query.status) q = q.where('status', '=', query.status);
  if (query.source) q = q.where('source', '=', query.source);
  if (query.since) q = q.where('created_at', '>=', new Date(query.since).toISOString());
  if (query.until) q = q.where('created_at', '<', new Date(query.until).toISOString());
  if (query.search) {
    const pattern = `%${query.search.toLowerCase().replace(/[\\%_]/g, (m) => `\\${m}`)}%`;
    // ESCAPE spelled out: SQLite has no default LIKE escape character, PostgreSQL's is `\`.
    q = q.where(sql<boolean>`lower(${sql.ref('sql')}) like ${pattern} escape '\\'`);
  }
  const rows = await q.orderBy('id', 'desc').limit(query.limit + 1).execute();
  const page = rows.slice(0, query.limit).map(toEntry);
  const nextCursor = rows.length > query.limit ? encodeCursor(page[page.length - 1].id) : null;
  return { entries: page, nextCursor };
}

/** Deletes entries older than the retention; returns how many went. An id starts with its
 * creation time (src/ids.ts), written at the same moment as created_at, so the primary key
 * finds them and the hot insert path keeps one index fewer. */
export async function pruneHistory(db: Kysely<Database>, days: number): Promise<number> {
  const cutoff = firstIdAt('h', Date.now() - days * 86_400_000);
  const result = await db.deleteFrom('query_history').where('id', '<', cutoff).executeTakeFirst();
  return Number(result.numDeletedRows ?? 0);
}
