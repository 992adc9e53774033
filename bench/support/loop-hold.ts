// How long this process's event loop went without turning while a bench ran beside it. The
// probe is the tests' (test/support/loop-hold.ts: a 1 ms ticker, and on Linux the main
// thread's waits for a core from schedstat); here in the benches' terms: the wall-clock hold
// and dbq's own, each less the 1 ms interval.
import { watchLoop as watch } from '../../test/support/loop-hold.ts';

export { loopHeldDuring } from '../../test/support/loop-hold.ts';

export interface LoopHold {
  /** Longest gap between ticks, less the 1 ms interval. */
  wallMs: number;
  /** The same, less the thread's waits for a core; null off Linux. */
  heldMs: number | null;
}

/** Starts watching; the returned function stops and reports. */
export function watchLoop(): () => LoopHold {
  const stop = watch();
  return () => {
    const hold = stop();
    return { wallMs: Math.max(0, hold.gapMs - 1), heldMs: hold.ownGapMs === null ? null : Math.max(0, hold.ownGapMs - 1) };
  };
}
