// Prints one plain closing line, "N passed, N failed[, N skipped]", after vitest's own
// summary, so CI tooling that reads a generic closing line counts the run correctly.
import type { Reporter } from 'vitest/reporters';

type Task = { type: string; mode?: string; result?: { state?: string }; tasks?: Task[] };

/** Counts tests; returns how many failed under `tasks`. A suite or file that failed with no
 * failing test beneath it (an error in beforeAll, a file that did not load) counts as one. */
function count(tasks: Task[], totals: { passed: number; failed: number; skipped: number }): number {
  let failedHere = 0;
  for (const task of tasks) {
    if (task.type === 'test') {
      const state = task.result?.state;
      if (state === 'pass') totals.passed++;
      else if (state === 'fail') {
        totals.failed++;
        failedHere++;
      } else totals.skipped++;
      continue;
    }
    const below = task.tasks ? count(task.tasks, totals) : 0;
    if (task.result?.state === 'fail' && below === 0) {
      totals.failed++;
      failedHere++;
    } else failedHere += below;
  }
  return failedHere;
}

export default class SummaryReporter implements Reporter {
  onFinished(files: Task[] = [], errors: unknown[] = []): void {
    const totals = { passed: 0, failed: 0, skipped: 0 };
    count(
      files.map((f) => ({ ...f, type: 'suite' })),
      totals,
    );
    // A file that failed to load has no tests but is a failure all the same.
    const failed = totals.failed + errors.length;
    const skipped = totals.skipped ? `, ${totals.skipped} skipped` : '';
    process.stdout.write(`\n${totals.passed} passed, ${failed} failed${skipped}\n`);
  }
}
