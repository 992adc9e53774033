// A small closed-loop load generator: N concurrent workers each issue one request at a time
// for a fixed duration; reports throughput and latency percentiles. Used by every bench so
// the figures are comparable.
import http from 'node:http';
import { performance } from 'node:perf_hooks';

export interface LoadResult {
  label: string;
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export async function runLoad(label: string, concurrency: number, seconds: number, once: () => Promise<boolean>): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        let good: boolean;
        try {
          good = await once();
        } catch {
          good = false;
        }
        latencies.push(performance.now() - t0);
        if (!good) errors++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    label,
    requests: latencies.length,
    errors,
    seconds: elapsed,
    rps: latencies.length / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** POST JSON with a keep-alive agent; resolves true on a 2xx answer (body read fully). */
export function postJson(url: string, body: string, headers: Record<string, string> = {}): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } },
      (res) => {
        res.on('data', () => {});
        res.on('end', () => resolve((res.statusCode ?? 500) < 300));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
