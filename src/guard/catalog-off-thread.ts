// Builds a PostgreSQL connection's read policy on a worker thread. Judging a catalog parses
// every view, row security policy and user function body (~1,000 texts on a fresh database,
// far more on a large one): tens to hundreds of milliseconds that must not hold the event loop
// other workspaces' requests run on. The catalog goes over as six JSON texts (a string copies
// cheaply; ~5,000 row objects do not), the judged catalog (compact plain maps) comes back. One worker, started on first use, idle between reloads.
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../worker-boot.ts';
import type { CatalogText } from '../engines/postgres/postgres-catalog-rows.ts';
import type { PostgresCatalog } from './read-policy.ts';

/** A build that takes longer than this is abandoned (the worker is replaced) and fails. */
const BUILD_DEADLINE_MS = 60_000;

interface Pending {
  resolve: (catalog: PostgresCatalog) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

let worker: Worker | null = null;
let nextId = 1;
const pending = new Map<number, Pending>();

function failAll(error: Error): void {
  for (const [id, job] of pending) {
    clearTimeout(job.timer);
    pending.delete(id);
    job.reject(error);
  }
}

function getWorker(): Worker {
  if (worker) return worker;
  const created = startModuleWorker(new URL('./catalog-worker.ts', import.meta.url));
  created.on('message', (message: { id: number; catalog?: PostgresCatalog; error?: string }) => {
    const job = pending.get(message.id);
    if (!job) return;
    pending.delete(message.id);
    clearTimeout(job.timer);
    if (pending.size === 0) created.unref();
    if (message.catalog !== undefined) job.resolve(message.catalog);
    else job.reject(new Error(`The database catalog could not be judged: ${message.error ?? 'unknown error'}`));
  });
  // A worker replaced after a missed deadline exits later: its jobs were settled then, and
  // the jobs pending now are its successor's.
  const lost = () => {
    if (worker !== created) return;
    worker = null;
    failAll(new Error('The database catalog could not be judged: its worker stopped'));
  };
  created.on('error', lost);
  created.on('exit', lost);
  created.unref();
  worker = created;
  return created;
}

export function buildCatalogOffThread(text: CatalogText): Promise<PostgresCatalog> {
  return new Promise<PostgresCatalog>((resolve, reject) => {
    const id = nextId++;
    const timer = setTimeout(() => {
      const stuck = worker;
      worker = null;
      failAll(new Error(`The database catalog could not be judged within ${BUILD_DEADLINE_MS} ms`));
      void stuck?.terminate();
    }, BUILD_DEADLINE_MS);
    timer.unref();
    pending.set(id, { resolve, reject, timer });
    const current = getWorker();
    current.ref();
    current.postMessage({ id, text });
  });
}
