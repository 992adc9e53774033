// The pattern worker thread (see pattern-match.ts): compiles curated tool parameter patterns
// and matches values against them, so neither a 1 s compile nor a 1 MB value ever runs on the
// event loop. Answers plain data.
import { parentPort } from 'node:worker_threads';
import type { RE2JS } from 're2js';
import { compilePattern, type CompiledPattern } from './pattern-syntax.ts';

export type PatternRequest = { kind: 'check'; pattern: string } | { kind: 'match'; pattern: string; values: string[]; maxWork: number };
export type PatternJob = PatternRequest & { id: number };
export type PatternAnswer = { id: number } & (
  | { kind: 'check'; problem: string | null; programSize: number }
  | { kind: 'match'; firstMismatch: number }
  | { kind: 'refused'; problem: string }
);

// Compiled patterns by text: a workspace has few tools, and a tool's patterns are matched at
// every run. Bounded, oldest out first, so patterns of deleted tools do not pile up.
const CACHE_SIZE = 256;
const cache = new Map<string, CompiledPattern>();

function compiled(pattern: string): CompiledPattern {
  let found = cache.get(pattern);
  if (found) return found;
  found = compilePattern(pattern);
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!);
  cache.set(pattern, found);
  return found;
}

function answer(job: PatternJob): PatternAnswer {
  const c = compiled(job.pattern);
  if (job.kind === 'check') return { id: job.id, kind: 'check', problem: c.ok ? null : c.problem, programSize: c.ok ? c.programSize : 0 };
  if (!c.ok) return { id: job.id, kind: 'refused', problem: c.problem };
  const re: RE2JS = c.re;
  // Checked before any matching: values too long for this pattern are refused whole.
  let chars = 0;
  for (const v of job.values) chars += v.length;
  if (chars * c.programSize > job.maxWork) {
    const most = Math.floor(job.maxWork / c.programSize);
    return {
      id: job.id,
      kind: 'refused',
      problem: `is too long to be matched against its pattern: ${chars} characters, at most ${most} for this pattern (${c.programSize} RE2 instructions)`,
    };
  }
  for (let i = 0; i < job.values.length; i++) if (!re.test(job.values[i])) return { id: job.id, kind: 'match', firstMismatch: i };
  return { id: job.id, kind: 'match', firstMismatch: -1 };
}

parentPort?.on('message', (job: PatternJob) => {
  parentPort?.postMessage(answer(job));
});
// Loaded: the main thread starts its jobs' deadlines from here (pattern-match.ts).
parentPort?.postMessage({ kind: 'ready' });
