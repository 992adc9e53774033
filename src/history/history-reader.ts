// History pages that may walk the SQLite store are read on worker threads, not on the event
// loop (a rare search held the loop 60 ms at 45k entries with the search
// index off or behind, and the soak's p99 doubled as history grew). better-sqlite3 is
// synchronous, so a walk on the server's own connection stalls every request for as long as
// it runs. Each worker opens the store's file read-only (WAL: readers never wait for the
// writer, nor it for them) and runs the same selectHistoryPage; the event loop only posts the
// scope and query and maps the rows it gets back. Pages that are one index seek stay on the
// loop (history.ts walksHistory): the hop would cost more than the seek.
//
// Work per page is bounded twice: the walk stops between slices once HISTORY_READ_BUDGET_MS
// is spent and the page says where to continue (history-walk.ts), and a worker that has not
// answered within HISTORY_READ_DEADLINE_MS (one statement running away) is ended and the page
// refused, so it cannot hold its thread for the pages queued behind it.
import os from 'node:os';
import type { Worker } from 'node:worker_threads';
import { sql, type Kysely } from 'kysely';
import { InternalError, QueryTimeoutError, StorageFullError } from '../errors.ts';
import type { Database } from '../store/schema.ts';
import { startModuleWorker } from '../worker-boot.ts';
import type { HistoryPage, HistoryPageReader, HistoryQuery, HistoryScope } from './history.ts';
import type { ReaderAnswer, ReaderJob } from './history-reader-worker.ts';

export const HISTORY_READ_BUDGET_MS = 1_000;
export const HISTORY_READ_DEADLINE_MS = 10_000;
/** From the TypeScript sources tsx compiles the worker first: over 2 s on a loaded machine.
 * A page's deadline starts once its worker is ready. */
const BOOT_MS = 30_000;
/** A core is left to the event loop: on two cores one page walks at a time (the others
 * wait their turn, each bounded by the budget) and the loop never competes with two walks. */
const DEFAULT_THREADS = Math.max(1, Math.min(2, os.availableParallelism() - 1));

const WORKER_URL = new URL('./history-reader-worker.ts', import.meta.url);

export interface HistoryReader extends HistoryPageReader {
  /** Starts the workers ahead of the first pages (the server, at start: loading one costs
   * 50 ms to seconds of CPU, from the TypeScript sources); resolves once they are ready. */
  warm(): Promise<void>;
  close(): Promise<void>;
}

interface Job {
  id: number;
  scope: HistoryScope;
  query: HistoryQuery;
  resolve(page: HistoryPage): void;
  reject(err: unknown): void;
  timer?: NodeJS.Timeout;
}

interface Slot {
  thread: Worker;
  ready: Promise<boolean>;
  job: Job | null;
}

export interface HistoryReaderOptions {
  threads?: number;
  budgetMs?: number;
  deadlineMs?: number;
}

/** A reader of the SQLite store `db` is open on (its file, asked of the connection). */
export async function openHistoryReader(db: Kysely<Database>, opts: HistoryReaderOptions = {}): Promise<HistoryReader> {
  const { rows } = await sql<{ file: string }>`select file from pragma_database_list where name = 'main'`.execute(db);
  const file = rows[0]?.file;
  if (!file) throw new Error('the SQLite store has no file a history reader could open');
  return new ThreadedHistoryReader(file, opts);
}

class ThreadedHistoryReader implements HistoryReader {
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;
  private readonly threads: number;
  private readonly budgetMs: number;
  private readonly deadlineMs: number;

  constructor(
    private readonly file: string,
    opts: HistoryReaderOptions,
  ) {
    this.threads = Math.max(1, opts.threads ?? DEFAULT_THREADS);
    this.budgetMs = opts.budgetMs ?? HISTORY_READ_BUDGET_MS;
    this.deadlineMs = opts.deadlineMs ?? HISTORY_READ_DEADLINE_MS;
  }

  read(scope: HistoryScope, query: HistoryQuery): Promise<HistoryPage> {
    if (this.closed) return Promise.reject(new InternalError(new Error('history reader closed')));
    return new Promise<HistoryPage>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, scope, query, resolve, reject });
      this.dispatch();
    });
  }

  async warm(): Promise<void> {
    while (!this.closed && this.slots.length < this.threads) this.spawn();
    // Referenced while they load: a caller awaiting this is waiting on them.
    const slots = [...this.slots];
    for (const s of slots) s.thread.ref();
    await Promise.all(slots.map((s) => s.ready));
    for (const s of slots) if (s.job === null) s.thread.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new InternalError(new Error('history reader closed')));
    await Promise.all([...this.slots].map((slot) => this.lose(slot, new InternalError(new Error('history reader closed')))));
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.find((s) => s.job === null);
      if (!slot) {
        if (this.slots.length >= this.threads) return;
        slot = this.spawn();
      }
      this.run(slot, this.queue.shift()!);
    }
  }

  private run(slot: Slot, job: Job): void {
    slot.job = job;
    slot.thread.ref();
    slot.thread.postMessage({ id: job.id, scope: job.scope, query: job.query, budgetMs: this.budgetMs } satisfies ReaderJob);
    void slot.ready.then((ok) => {
      if (slot.job !== job) return;
      if (!ok) return void this.lose(slot, new InternalError(new Error('history reader worker did not start')));
      job.timer = setTimeout(() => void this.lose(slot, new QueryTimeoutError(this.deadlineMs)), this.deadlineMs);
      job.timer.unref();
    });
  }

  private spawn(): Slot {
    const thread = startModuleWorker(WORKER_URL, { workerData: { file: this.file } });
    let markReady: (ok: boolean) => void = () => undefined;
    const ready = new Promise<boolean>((resolve) => (markReady = resolve));
    const bootTimer = setTimeout(() => markReady(false), BOOT_MS);
    bootTimer.unref();
    const slot: Slot = { thread, ready, job: null };
    thread.on('message', (message: ReaderAnswer) => {
      if (message.kind === 'ready') {
        clearTimeout(bootTimer);
        markReady(true);
        return;
      }
      const job = slot.job;
      if (!job || job.id !== message.id) return;
      clearTimeout(job.timer);
      slot.job = null;
      thread.unref();
      if (message.kind === 'page') job.resolve(message.page);
      else
        job.reject(
          message.error.code === 'storage_full'
            ? new StorageFullError('store')
            : new InternalError(new Error(`history read failed: ${message.error.message}`)),
        );
      this.dispatch();
    });
    const lost = (err: unknown) => {
      clearTimeout(bootTimer);
      markReady(false);
      void this.lose(slot, new InternalError(err));
    };
    thread.on('error', lost);
    thread.on('exit', () => lost(new Error('history reader worker exited')));
    // An idle worker must not keep the process alive; a busy one must (a script awaiting it).
    thread.unref();
    this.slots.push(slot);
    return slot;
  }

  /** Ends a worker (stuck, dead or closing): its page is refused with `err`, and the pages
   * queued go to the others or to a fresh one. */
  private async lose(slot: Slot, err: unknown): Promise<void> {
    const at = this.slots.indexOf(slot);
    if (at === -1) return;
    this.slots.splice(at, 1);
    const job = slot.job;
    slot.job = null;
    if (job) {
      clearTimeout(job.timer);
      job.reject(err);
    }
    if (!this.closed) this.dispatch();
    await slot.thread.terminate();
  }
}
