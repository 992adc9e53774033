// Curated tool parameter patterns are compiled and matched on a worker thread, under a deadline
// (`^(a+)+$` as a backtracking RegExp held the whole server 85–114 s per call, and any caller
// of the tool, a tools-only agent key too, could send the value). RE2 (re2js)
// makes matching linear, but linear is not cheap in JavaScript: 100 KB took re2js 8–20 ms for
// `^[a-z]+$` and 0.5–2.4 s for patterns whose DFA it gives up on, and compiling 1,000
// characters of counted repetition took up to 1 s. The event loop only posts the pattern and
// the values and reads the answer. The work one parameter may ask for is capped
// (MAX_PATTERN_WORK) so a single caller cannot keep the shared worker busy for everyone; an
// answer that does not come within the deadline is a refusal, and the worker is replaced.
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../worker-boot.ts';
import type { PatternAnswer, PatternJob, PatternRequest } from './pattern-worker.ts';

export const PATTERN_DEADLINE_MS = 2_000;
/** How long a new worker may take to load (from the TypeScript sources, tsx compiles it first:
 * 0.3 s on an idle machine, over 2 s on a loaded one). Jobs' deadlines start once it is ready,
 * so a slow start is not mistaken for a pattern too slow to match. */
export const PATTERN_WORKER_BOOT_MS = 30_000;
/** Characters of value × RE2 instructions of the pattern, per parameter: at the worst cost
 * measured (~50 ns per character per instruction) about 200 ms of the worker's time. A pattern
 * of 10 instructions takes values up to 400,000 characters; one of 1,000, up to 4,000. */
export const MAX_PATTERN_WORK = 4_000_000;

export type PatternOutcome = { kind: 'matched' } | { kind: 'mismatch'; index: number } | { kind: 'refused'; problem: string };

const WORKER_URL = new URL('./pattern-worker.ts', import.meta.url);

interface Pending {
  /** The worker the job was posted to: only its own end refuses the job. */
  owner: Worker;
  resolve: (answer: PatternAnswer | null) => void;
  /** The deadline, from when the worker is ready. */
  timer: NodeJS.Timeout | undefined;
}

interface PatternWorker {
  thread: Worker;
  /** Resolves true once the worker's module has loaded, false if it never does. */
  ready: Promise<boolean>;
}

let worker: PatternWorker | null = null;
let nextId = 1;
const pending = new Map<number, Pending>();

/** Refuses every job posted to `owner`. A terminated worker's `exit` comes after its
 * replacement has taken new jobs; those must not be refused with it. */
function settleAll(owner: Worker): void {
  for (const [id, job] of pending) {
    if (job.owner !== owner) continue;
    clearTimeout(job.timer);
    pending.delete(id);
    job.resolve(null);
  }
}

function getWorker(): PatternWorker {
  if (worker) return worker;
  const created = startModuleWorker(WORKER_URL);
  let markReady: (ok: boolean) => void = () => undefined;
  const ready = new Promise<boolean>((resolve) => {
    markReady = resolve;
  });
  const bootTimer = setTimeout(() => markReady(false), PATTERN_WORKER_BOOT_MS);
  bootTimer.unref();
  created.on('message', (message: PatternAnswer | { kind: 'ready' }) => {
    if (message.kind === 'ready') {
      clearTimeout(bootTimer);
      markReady(true);
      return;
    }
    const job = pending.get(message.id);
    if (!job) return;
    pending.delete(message.id);
    clearTimeout(job.timer);
    if (pending.size === 0) created.unref();
    job.resolve(message);
  });
  const lost = () => {
    clearTimeout(bootTimer);
    markReady(false);
    if (worker?.thread === created) worker = null;
    settleAll(created);
  };
  created.on('error', lost);
  created.on('exit', lost);
  // An idle worker must not keep the process alive; a busy one must (a script awaiting it).
  created.unref();
  worker = { thread: created, ready };
  return worker;
}

/** Ends the worker that is stuck (or never loaded) and refuses every job waiting on it; the
 * next pattern starts a fresh one. */
function replace(stuck: PatternWorker): void {
  if (worker === stuck) worker = null;
  settleAll(stuck.thread);
  void stuck.thread.terminate();
}

/** The worker's answer, or null when it did not come within the deadline (or the worker died). */
function ask(job: PatternRequest): Promise<PatternAnswer | null> {
  return new Promise((resolve) => {
    const id = nextId++;
    const current = getWorker();
    const entry: Pending = { owner: current.thread, resolve, timer: undefined };
    pending.set(id, entry);
    current.thread.ref();
    current.thread.postMessage({ ...job, id } as PatternJob);
    void current.ready.then((ok) => {
      if (!pending.has(id)) return;
      if (!ok) return replace(current);
      // Whatever the worker is stuck on holds every job behind it: all of them are refused.
      entry.timer = setTimeout(() => replace(current), PATTERN_DEADLINE_MS);
      entry.timer.unref();
    });
  });
}

/** Why a pattern cannot be a parameter's constraint, in words, or null. */
export async function patternDefinitionProblem(pattern: string): Promise<string | null> {
  try {
    // Syntax only: V8 parses here and compiles at the first match, which never comes. MCP
    // clients are shown the pattern as JSON Schema (ECMA-262), so it must be valid JavaScript.
    new RegExp(pattern, 'u');
  } catch {
    return 'is not a valid regular expression (JavaScript syntax, u flag)';
  }
  const answer = await ask({ kind: 'check', pattern });
  if (!answer) return `could not be compiled within ${PATTERN_DEADLINE_MS} ms`;
  if (answer.kind !== 'check') throw new Error(`pattern worker answered ${answer.kind} to a check`);
  return answer.problem;
}

/** Matches each value (anywhere in it, as JSON Schema's `pattern` does); the index of the first
 * that does not match, or a refusal in words when the values are too long for this pattern or
 * the worker did not answer in time. */
export async function matchPattern(pattern: string, values: string[]): Promise<PatternOutcome> {
  const answer = await ask({ kind: 'match', pattern, values, maxWork: MAX_PATTERN_WORK });
  if (!answer) return { kind: 'refused', problem: `could not be matched against its pattern within ${PATTERN_DEADLINE_MS} ms` };
  if (answer.kind === 'refused') return { kind: 'refused', problem: answer.problem };
  if (answer.kind !== 'match') throw new Error(`pattern worker answered ${answer.kind} to a match`);
  return answer.firstMismatch === -1 ? { kind: 'matched' } : { kind: 'mismatch', index: answer.firstMismatch };
}
