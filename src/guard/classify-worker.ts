// The guard's worker thread (see off-thread.ts): classifies what the main thread sends and
// answers with the verdict, plain data. Parsers load here on first use, as on the main thread.
import { parentPort } from 'node:worker_threads';
import type { EngineName } from '../engines/engine.ts';
import { classifyText } from './guard.ts';

interface Job {
  id: number;
  engine: EngineName;
  sql: string;
}

parentPort?.on('message', (job: Job) => {
  classifyText(job.engine, job.sql).then(
    (verdict) => parentPort?.postMessage({ id: job.id, verdict }),
    () => parentPort?.postMessage({ id: job.id, verdict: null }),
  );
});
