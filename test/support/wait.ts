// Waiting in tests: wait for the thing, not for "long enough". `until` polls a condition under a
// deadline and says what it waited for when the deadline passes; `sleep` is for the few waits
// that ARE the behaviour under test (a window that must pass, a statement that must run for a
// while), each with a comment saying so.
import { performance } from 'node:perf_hooks';

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` every `everyMs` until it returns true; resolves with the ms that took. Throws
 * `timed out waiting for <what>` once `ms` passed without it. */
export async function until(what: string, check: () => boolean | Promise<boolean>, ms = 10_000, everyMs = 20): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > ms) throw new Error(`timed out waiting for ${what} (${ms} ms)`);
    await sleep(everyMs);
  }
  return performance.now() - started;
}
