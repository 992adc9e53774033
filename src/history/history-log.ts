// Writing query history: one HistoryLog per store, built once by the composition root
// (src/services.ts) and held on Services as `history`. It owns what writing keeps between calls
// — the group commit's queue and the statement texts compiled for its store — so that state is
// a field of the object that uses it, not a registry keyed by the database.
import { CompiledQuery, type Kysely } from 'kysely';
import { newId, nowIso } from '../ids.ts';
import type { Database, HistoryRow } from '../store/schema.ts';
import type { HistoryWriter } from '../store/history-writer.ts';
import { toHistoryEntry, type HistoryEntry, type HistoryOutcome, type NewHistoryEntry } from './history.ts';

export interface WriteHistoryOptions {
  /** Committed so that a crash of the store's server cannot lose it either (a write's
   * `running` entry, written before its statement runs); otherwise the store's usual history
   * commit (src/store/history-writer.ts). */
  durable?: boolean;
}

// Group commit: entries written close together share one INSERT (one SQLite transaction, one
// PostgreSQL round trip) instead of a commit each — on the /query hot path a commit per entry
// was a quarter of the server's CPU. Every caller still waits until its own entry is
// committed, so no response goes out for a query whose history entry is not stored. Batches
// are written one after another in id order, so keyset readers never see a newer entry
// committed before an older one.
//
// Under load a loop turn produces one or two entries, and a commit costs about as much as four
// entries (on SQLite ~100 µs for the pages of the table and its indexes, ~25 µs an entry), so
// while more requests are in flight than entries wait, the batch gathers for up to GATHER_MS:
// the other requests' entries are most likely a turn or two away. A lone request (or every
// request in flight already waiting) is committed on the next turn as before, so the delay
// is only ever paid by requests that queue behind others anyway.
const MAX_BATCH = 200;
const GATHER_MS = 2;

interface Pending {
  row: HistoryRow;
  durable: boolean;
  resolve(): void;
  reject(err: unknown): void;
}

// Kysely builds and compiles an INSERT from scratch on every call; for the group commit that
// was more CPU than the insert itself. The text for n rows is compiled once per store and run
// with each batch's values (the store's statement cache then skips SQLite's prepare too).
const HISTORY_COLUMNS = [
  'id',
  'workspace_id',
  'query_id',
  'connection_id',
  'connection_name',
  'sql',
  'statement_type',
  'status',
  'row_count',
  'affected_rows',
  'duration_ms',
  'error',
  'source',
  'api_key_id',
  'api_key_name',
  'user_id',
  'user_email',
  'created_at',
  'tool_name',
  'tool_version',
] as const satisfies readonly (keyof HistoryRow)[];
// Fails to compile when a column is added to HistoryRow but not listed above.
const everyColumnListed: [Exclude<keyof HistoryRow, (typeof HISTORY_COLUMNS)[number]>] extends [never] ? true : never = true;
void everyColumnListed;
const PLACEHOLDER_ROW = Object.fromEntries(HISTORY_COLUMNS.map((c) => [c, null])) as unknown as HistoryRow;

export class HistoryLog {
  /** Requests the server is answering now, counted by the HTTP shell (src/server/app.ts); 0
   * where nothing counts them (the CLI), which commits every entry on the next turn. */
  inFlight = 0;
  private readonly pending: Pending[] = [];
  private scheduled = false;
  private gatherTimer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();
  /** The batch INSERT text for n rows, compiled once each. */
  private readonly insertTexts = new Map<number, string>();
  private completeText: string | null = null;
  private readonly db: Kysely<Database>;
  private readonly writer: HistoryWriter;

  /** `store`: its database and how it commits history (Store.historyWriter). */
  constructor(store: { db: Kysely<Database>; historyWriter: HistoryWriter }) {
    this.db = store.db;
    this.writer = store.historyWriter;
  }

  /** Writes one entry; resolves once it is committed (with the group commit's batch). */
  async write(e: NewHistoryEntry, opts: WriteHistoryOptions = {}): Promise<HistoryEntry> {
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
      tool_name: e.tool?.name ?? null,
      tool_version: e.tool?.version ?? null,
    };
    await this.enqueue(row, opts.durable === true);
    return toHistoryEntry(row);
  }

  /** Completes an entry written `running` (durably, as it was written): the same entry, so a
   * query still has exactly one. */
  async complete(id: string, o: HistoryOutcome): Promise<void> {
    await this.writer(
      CompiledQuery.raw(this.completeTextOf(), [o.status, o.rowCount, o.affectedRows, Math.round(o.durationMs), o.error, id]),
      { durable: true },
    );
  }

  /** Compiled once per store, like the INSERT texts. */
  private completeTextOf(): string {
    if (this.completeText === null) {
      this.completeText = this.db
        .updateTable('query_history')
        .set({ status: 'succeeded', row_count: null, affected_rows: null, duration_ms: 0, error: null })
        .where('id', '=', '')
        .compile().sql;
    }
    return this.completeText;
  }

  private enqueue(row: HistoryRow, durable: boolean): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ row, durable, resolve, reject });
      if (this.scheduled) return;
      if (this.pending.length < this.inFlight && this.pending.length < MAX_BATCH && !durable) {
        // More requests in flight than entries waiting: let their entries join this batch.
        this.gatherTimer ??= setTimeout(this.flushSoon, GATHER_MS);
        return;
      }
      this.flushSoon();
    });
  }

  /** setImmediate: every entry produced by the I/O events of this loop turn joins the batch. */
  private readonly flushSoon = (): void => {
    if (this.gatherTimer !== null) {
      clearTimeout(this.gatherTimer);
      this.gatherTimer = null;
    }
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.chain = this.chain.then(() => this.flush());
    });
  };

  private async flush(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, MAX_BATCH);
      try {
        // On PostgreSQL the commit does not wait for the WAL flush (src/store/history-writer.ts)
        // unless an entry of the batch must be durable: a write's `running` entry shares the
        // group commit (and keeps the id order) but waits for the flush, and so do the others.
        // Either way the entries are committed and visible when this resolves.
        const durable = batch.some((p) => p.durable);
        await this.writer(
          CompiledQuery.raw(
            this.insertText(batch.length),
            batch.flatMap((p) => HISTORY_COLUMNS.map((c) => p.row[c])),
          ),
          { durable },
        );
        for (const p of batch) p.resolve();
      } catch (err) {
        for (const p of batch) p.reject(err);
      }
    }
  }

  private insertText(rows: number): string {
    let text = this.insertTexts.get(rows);
    if (text === undefined) {
      const compiled = this.db
        .insertInto('query_history')
        .values(Array.from({ length: rows }, () => PLACEHOLDER_ROW))
        .compile();
      // Every value must be a parameter, in row-major column order, for the texts to be reusable.
      if (compiled.parameters.length !== rows * HISTORY_COLUMNS.length)
        throw new Error('history insert did not compile to one parameter per value');
      text = compiled.sql;
      this.insertTexts.set(rows, text);
    }
    return text;
  }
}
