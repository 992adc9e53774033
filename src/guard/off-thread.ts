// Long statements are classified on a worker thread, under a deadline. The parsers are linear
// in the text but not cheap: a 100 KB IN list takes libpg-query ~45 ms and node-sql-parser
// ~250 ms, and four such requests at once would stall every workspace's requests (the rule:
// nothing an input can make costs more than linear time on the event loop). The event loop
// only posts the text and receives the verdict. A verdict that does not come within the
// deadline is a refusal (the statement could not be checked), and the worker is replaced.
import type { Worker } from 'node:worker_threads';
import type { EngineName } from '../engines/engine.ts';
import type { Verdict } from './verdict.ts';
import { unparseableVerdict, writeVerdict } from './verdict-builders.ts';
import { startModuleWorker } from '../worker-boot.ts';

/** Texts longer than this leave the event loop (a few ms of parsing at most stay on it). */
export const OFF_THREAD_CHARS = 8_192;
export const CLASSIFY_DEADLINE_MS = 5_000;

interface Pending {
  resolve: (verdict: Verdict) => void;
  timer: NodeJS.Timeout;
}

const WORKER_URL = new URL('./classify-worker.ts', import.meta.url);

let worker: Worker | null = null;
let nextId = 1;
const pending = new Map<number, Pending>();

function tooSlow(): Verdict {
  return writeVerdict('UNKNOWN', `Statement could not be checked within ${CLASSIFY_DEADLINE_MS} ms; not a read`, 'unparseable');
}

function settleAll(verdict: () => Verdict): void {
  for (const [id, job] of pending) {
    clearTimeout(job.timer);
    pending.delete(id);
    job.resolve(verdict());
  }
}

function getWorker(): Worker {
  if (worker) return worker;
  const created = startModuleWorker(WORKER_URL);
  created.on('message', (message: { id: number; verdict: Verdict | null }) => {
    const job = pending.get(message.id);
    if (!job) return;
    pending.delete(message.id);
    clearTimeout(job.timer);
    if (pending.size === 0) created.unref();
    job.resolve(message.verdict ?? unparseableVerdict());
  });
  // A worker replaced after a missed deadline exits later: its jobs were settled then, and
  // the jobs pending now are its successor's.
  const lost = () => {
    if (worker !== created) return;
    worker = null;
    settleAll(() => unparseableVerdict());
  };
  created.on('error', lost);
  created.on('exit', lost);
  // An idle worker must not keep the process alive; a busy one must (a script awaiting it).
  created.unref();
  worker = created;
  return created;
}

/** Classifies on the worker thread; resolves with a refusal when the deadline passes. */
export function classifyOffThread(engine: EngineName, sql: string): Promise<Verdict> {
  return new Promise<Verdict>((resolve) => {
    const id = nextId++;
    const timer = setTimeout(() => {
      // Whatever the worker is stuck on holds every job behind it: all of them are refused,
      // and the next long statement starts a fresh worker.
      const stuck = worker;
      worker = null;
      settleAll(tooSlow);
      void stuck?.terminate();
    }, CLASSIFY_DEADLINE_MS);
    timer.unref();
    pending.set(id, { resolve, timer });
    const current = getWorker();
    current.ref();
    current.postMessage({ id, engine, sql });
  });
}
