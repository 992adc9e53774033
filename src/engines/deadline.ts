// One request, one deadline. A read with `timeoutMs: 5000` to a target behind a
// silently dead network answered after 27.5 s: the catalog check opened its own session with a
// 15 s timeout, then waited for a cancel connection's 5 s connect, then the statement needed a
// new connect of its own. Every wait a request makes (pool slot, connect, catalog load or
// check, the statement itself) is measured against the same instant, start + timeoutMs, and
// ends there with the error a statement timeout gives (504 query_timeout).
import { QueryTimeoutError } from '../errors.ts';

export class Deadline {
  /** performance.now() at which the request's time is up. */
  readonly at: number;

  /** `timeoutMs` is the request's own: the error names it, not what was left of it. */
  constructor(
    readonly timeoutMs: number,
    start = performance.now(),
  ) {
    this.at = start + timeoutMs;
  }

  /** Milliseconds left, never negative. */
  remaining(): number {
    return Math.max(0, this.at - performance.now());
  }

  expired(): boolean {
    return performance.now() >= this.at;
  }

  error(): QueryTimeoutError {
    return new QueryTimeoutError(this.timeoutMs);
  }

  /** `work`'s outcome, or error() once the deadline passes first. `work` runs on (it may be
   * shared with other requests, or hold something that must be handed back when it ends). */
  race<T>(work: Promise<T>): Promise<T> {
    // Observed at once: once the deadline has answered, a later rejection must not go unhandled.
    work.catch(() => {});
    const left = this.remaining();
    if (left <= 0) return Promise.reject(this.error());
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(this.error()), left);
      work.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (err: unknown) => {
          clearTimeout(timer);
          reject(err);
        },
      );
    });
  }
}
