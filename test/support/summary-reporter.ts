// Prints one plain closing line, "N passed, N failed[, N skipped]", after vitest's own
// summary, so CI tooling that reads a generic closing line counts the run correctly.
import type { Reporter } from 'vitest/reporters';

type Task = { type: string; mode?: string; result?: { state?: string }; tasks?: Task[] };

function count(tasks: Task[], totals: { passed: number; failed: number; skipped: number }): void {
  for (const task of tasks) {
    if (task.tasks) count(task.tasks, totals);
    if (task.type !== 'test') continue;
    const state = task.result?.state;
    if (state === 'pass') totals.passed++;
    else if (state === 'fail') totals.failed++;
    else totals.skipped++;
  }
}

export default class SummaryReporter implements Reporter {
  onFinished(files: Task[] = [], errors: unknown[] = []): void {
    const totals = { passed: 0, failed: 0, skipped: 0 };
    count(files, totals);
    // A file that failed to load has no tests but is a failure all the same.
    const failed = totals.failed + files.filter((f) => f.result?.state === 'fail' && !(f.tasks?.length)).length + errors.length;
    const skipped = totals.skipped ? `, ${totals.skipped} skipped` : '';
    process.stdout.write(`\n${totals.passed} passed, ${failed} failed${skipped}\n`);
  }
}
