// A preload for bench/ratio.ts's servers (`node --import <this file>`, passed in NODE_OPTIONS so
// it reaches `bin/dbq` and the bare proxy unchanged): the event loop's delay, measured inside
// the server by perf_hooks.monitorEventLoopDelay, so the bench reads how long a request waits
// for the loop without dbq's sources carrying a probe. Plain JavaScript: it loads into dbq's
// compiled build, where no TypeScript loader is registered.
//
// Beside it, the garbage collector's pauses of the main thread (PerformanceObserver 'gc'), in
// ms since the previous report: a request graph kept alive past a scavenge shows there first.
//
// Protocol: on SIGUSR2 the probe writes its histogram since the previous SIGUSR2 (ms, JSON,
// with a sequence number) to $BENCH_LOOP_PROBE_FILE and starts a new one. The bench signals
// once before a round (discarding what came before) and once after it.
import fs from 'node:fs';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

const file = process.env.BENCH_LOOP_PROBE_FILE;
if (file) {
  // 1 ms: the finest libuv timer; a turn that holds the loop longer than that shows as delay.
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  let gcMs = 0;
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcMs += entry.duration;
  }).observe({ entryTypes: ['gc'] });
  let seq = 0;
  const ms = (ns) => Number(ns) / 1e6;
  process.on('SIGUSR2', () => {
    const report = {
      seq: ++seq,
      count: histogram.count,
      mean: ms(histogram.mean),
      p50: ms(histogram.percentile(50)),
      p99: ms(histogram.percentile(99)),
      max: ms(histogram.max),
      gcMs,
    };
    histogram.reset();
    gcMs = 0;
    // Written whole, then renamed: the bench never reads half a report.
    fs.writeFileSync(`${file}.tmp`, JSON.stringify(report));
    fs.renameSync(`${file}.tmp`, file);
  });
}
