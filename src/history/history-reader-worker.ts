// A history reader's worker thread (see history-reader.ts): its own read-only connection to
// the SQLite store's file, running the same selectHistoryPage as the event loop would. WAL
// lets it read while the server's connection writes; each page reads one snapshot (a read
// transaction), as the one statement it replaces did. The snapshot lasts one page, at most the
// walk's budget: a checkpoint cannot move past it meanwhile, so the WAL grows that much longer.
import { parentPort, workerData } from 'node:worker_threads';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { DbqError } from '../errors.ts';
import type { Database } from '../store/schema.ts';
import { cachingDatabase } from '../store/statement-cache.ts';
import { selectHistoryPage, type HistoryPage, type HistoryQuery, type HistoryScope } from './history.ts';

export interface ReaderJob {
  id: number;
  scope: HistoryScope;
  query: HistoryQuery;
  budgetMs: number;
}

export type ReaderAnswer =
  | { kind: 'ready' }
  | { kind: 'page'; id: number; page: HistoryPage }
  | { kind: 'failed'; id: number; error: { message: string; code: string | null } };

const port = parentPort!;
const { file } = workerData as { file: string };
const handle = new SqliteDatabase(file, { readonly: true, fileMustExist: true });
// A reader waits only while a checkpoint resets the WAL, briefly; never for writers.
handle.pragma('busy_timeout = 5000');
const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: cachingDatabase(handle) }) });

async function answer(job: ReaderJob): Promise<ReaderAnswer> {
  handle.exec('begin');
  try {
    return { kind: 'page', id: job.id, page: await selectHistoryPage(db, job.scope, job.query, { budgetMs: job.budgetMs }) };
  } catch (err) {
    // Plain data across the thread: the error's class goes by its envelope code.
    return {
      kind: 'failed',
      id: job.id,
      error: { message: String((err as Error)?.message ?? err), code: err instanceof DbqError ? err.code : null },
    };
  } finally {
    if (handle.inTransaction) handle.exec('commit');
  }
}

// One job at a time: the pool (history-reader.ts) posts the next only after this one answered.
port.on('message', (job: ReaderJob) => {
  void answer(job).then((a) => port.postMessage(a));
});
port.postMessage({ kind: 'ready' } satisfies ReaderAnswer);
