// How long this process's event loop went without turning, while something ran beside it: a
// 1 ms timer notes the longest gap between its ticks. On Linux the scheduler's own account of
// the main thread (/proc/self/task/<pid>/schedstat) also gives the time it waited for a core
// in that gap: on two cores shared with other work, the wall-clock gap measures the machine
// as much as dbq (50 ms gaps with nothing running), the gap less that wait is dbq's own hold.
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';

export interface LoopHold {
  /** Longest gap between ticks, less the 1 ms interval. */
  wallMs: number;
  /** The same, less the thread's waits for a core; null off Linux. */
  heldMs: number | null;
}

function threadWaitMs(): (() => number) | null {
  try {
    const fd = fs.openSync(`/proc/self/task/${process.pid}/schedstat`, 'r');
    const buf = Buffer.alloc(128);
    return () => Number(buf.toString('utf8', 0, fs.readSync(fd, buf, 0, buf.length, 0)).split(' ')[1]) / 1e6;
  } catch {
    return null;
  }
}

/** Starts watching; the returned function stops and reports. */
export function watchLoop(): () => LoopHold {
  const wait = threadWaitMs();
  let last = performance.now();
  let lastWait = wait?.() ?? 0;
  let wallMs = 0;
  let heldMs = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    wallMs = Math.max(wallMs, now - last - 1);
    if (wait) {
      const w = wait();
      heldMs = Math.max(heldMs, now - last - (w - lastWait) - 1);
      lastWait = w;
    }
    last = now;
  }, 1);
  return () => {
    clearInterval(ticker);
    return { wallMs, heldMs: wait ? heldMs : null };
  };
}
