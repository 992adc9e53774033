// Client-side backstop around one statement. The database enforces the timeout itself
// (statement_timeout, max_statement_time/max_execution_time); this watch fires only if it
// did not (MySQL's max_execution_time covers SELECT only, a server can be wedged) or when the
// caller aborts. It asks the server to stop the statement (pg_cancel_backend, KILL QUERY,
// SIGKILL of the sqlite child) and, if the server does not answer within `graceMs`, abandons
// the connection so the request still ends.

import { QueryCanceledError, QueryTimeoutError, type DbqError } from '../errors.ts';

export type StopReason = 'timeout' | 'canceled';

export interface WatchOptions {
  timeoutMs: number;
  /** Added to timeoutMs so the server's own timeout normally wins the race. */
  backstopMs: number;
  /** After the cancel request, how long to wait before abandoning the connection. */
  graceMs: number;
  signal?: AbortSignal;
  /** Ask the server to stop the running statement. */
  cancel: () => Promise<void>;
  /** Last resort: drop the connection (destroy the socket / kill the process). */
  abandon: () => void;
}

export class StatementWatch {
  reason: StopReason | null = null;
  abandoned = false;
  private readonly opts: WatchOptions;
  private readonly timer: NodeJS.Timeout;
  private graceTimer: NodeJS.Timeout | null = null;
  private pendingCancel: Promise<void> = Promise.resolve();
  private readonly hardStop: Promise<never>;
  private rejectHardStop: (err: DbqError) => void = () => {};
  private readonly onAbort = () => this.stop('canceled');

  constructor(opts: WatchOptions) {
    this.opts = opts;
    this.hardStop = new Promise<never>((_, reject) => {
      this.rejectHardStop = reject;
    });
    this.hardStop.catch(() => {});
    this.timer = setTimeout(() => this.stop('timeout'), opts.timeoutMs + opts.backstopMs);
    if (opts.signal?.aborted) queueMicrotask(this.onAbort);
    else opts.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Resolves/rejects with `work`, or rejects when the connection had to be abandoned. */
  run<T>(work: Promise<T>): Promise<T> {
    work.catch(() => {});
    return Promise.race([work, this.hardStop]);
  }

  /** Stop the statement for `reason` (first reason wins). */
  stop(reason: StopReason): void {
    if (this.reason) return;
    this.reason = reason;
    this.pendingCancel = this.opts.cancel().catch(() => {});
    this.graceTimer = setTimeout(() => {
      this.abandoned = true;
      this.opts.abandon();
      this.rejectHardStop(this.error());
    }, this.opts.graceMs);
  }

  /** The error a stopped statement ends with, whatever the driver reported. */
  error(): DbqError {
    return this.reason === 'canceled' ? new QueryCanceledError() : new QueryTimeoutError(this.opts.timeoutMs);
  }

  /** Clear timers and wait for an in-flight cancel request, so it cannot land on the next
   * statement sent on the same connection. */
  async finish(): Promise<void> {
    clearTimeout(this.timer);
    if (this.graceTimer) clearTimeout(this.graceTimer);
    this.opts.signal?.removeEventListener('abort', this.onAbort);
    await this.pendingCancel;
  }
}

/** Waits for `work` at most `ms`; never rejects (close() must not hang on a wedged server). */
export async function settleWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work.catch(() => {}), new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
