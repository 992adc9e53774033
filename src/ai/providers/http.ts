// POST JSON to an LLM API with a per-attempt timeout and bounded retries. Retried: 429, 5xx
// and network failures (both APIs shed load with 429/529/503), honouring Retry-After up to
// MAX_WAIT_MS so one slow server cannot hold a request for minutes. Errors never carry the
// request headers: the API key stays out of messages and logs.
import { GenerationFailedError } from '../../errors.ts';

export interface PostOptions {
  timeoutMs: number;
  /** Attempts in all (default 3). */
  attempts?: number;
  /** First backoff step (default 500 ms), doubled each time, with jitter. */
  baseDelayMs?: number;
  fetchImpl?: typeof fetch;
}

const MAX_WAIT_MS = 10_000;

export function retryAfterMs(header: string | null, now = Date.now()): number | null {
  if (!header) return null;
  const secs = Number(header);
  if (Number.isFinite(secs)) return Math.max(0, secs * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function postJson(
  provider: string,
  url: string,
  headers: Record<string, string>,
  body: unknown,
  opts: PostOptions,
): Promise<unknown> {
  const attempts = opts.attempts ?? 3;
  const base = opts.baseDelayMs ?? 500;
  const doFetch = opts.fetchImpl ?? fetch;
  let lastError = '';
  for (let i = 0; i < attempts; i++) {
    let wait = Math.min(MAX_WAIT_MS, base * 2 ** i * (0.75 + Math.random() * 0.5));
    try {
      const res = await doFetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(opts.timeoutMs),
      });
      const text = await res.text();
      if (res.ok) {
        try {
          return JSON.parse(text) as unknown;
        } catch {
          throw new GenerationFailedError(`${provider} returned a reply that is not JSON`);
        }
      }
      lastError = `${provider} answered HTTP ${res.status}${describeError(text)}`;
      if (res.status !== 429 && res.status < 500) break;
      const ra = retryAfterMs(res.headers.get('retry-after'));
      if (ra !== null) wait = Math.min(MAX_WAIT_MS, ra);
    } catch (err) {
      if (err instanceof GenerationFailedError) throw err;
      const e = err as Error;
      lastError =
        e.name === 'TimeoutError'
          ? `${provider} did not answer within ${opts.timeoutMs} ms`
          : `${provider} could not be reached (${e.message})`;
    }
    if (i < attempts - 1) await sleep(wait);
  }
  throw new GenerationFailedError(lastError);
}

function describeError(text: string): string {
  try {
    const j = JSON.parse(text) as { error?: { message?: unknown } | string };
    const msg = typeof j.error === 'string' ? j.error : j.error?.message;
    if (typeof msg === 'string' && msg) return `: ${msg.slice(0, 300)}`;
  } catch {
    // not JSON: fall through
  }
  return '';
}
