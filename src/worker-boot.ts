// Starts a worker thread on a module of src/. The compiled build (dist/server) runs the .js
// beside the caller; from the TypeScript sources (development, tests) the worker loads the .ts
// through tsx's API: a worker's own `--import tsx` is registered too late for its entry module.
// Shared by the guard's worker (src/guard/off-thread.ts) and the pattern worker
// (src/access/pattern-match.ts).
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** `entry` is the worker module's .ts URL relative to the caller, e.g.
 * `new URL('./classify-worker.ts', import.meta.url)`; `options` (workerData…) are the Worker's. */
export function startModuleWorker(entry: URL, options: Omit<WorkerOptions, 'eval'> = {}): Worker {
  const source = import.meta.url.endsWith('.ts');
  if (!source) return new Worker(new URL(entry.href.replace(/\.ts$/, '.js')), options);
  // tsx's ESM entry (its CommonJS one cannot register in a worker).
  const tsxRoot = path.dirname(createRequire(import.meta.url).resolve('tsx/package.json'));
  const tsx = pathToFileURL(path.join(tsxRoot, 'dist/esm/api/index.mjs')).href;
  const boot = `import(${JSON.stringify(tsx)}).then(({ tsImport }) => tsImport(${JSON.stringify(entry.href)}, ${JSON.stringify(import.meta.url)}))`;
  return new Worker(boot, { ...options, eval: true });
}
