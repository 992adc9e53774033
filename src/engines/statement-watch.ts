// Client-side backstop around one statement. The database enforces the timeout itself
// (statement_timeout, max_statement_time/max_execution_time); this watch fires only if it
// did not (MySQL's max_execution_time covers SELECT only, a server can be wedged) or when the
// caller aborts. It asks the server to stop the statement (pg_cancel_backend, KILL QUERY,
// SIGKILL of the sqlite child) and, if the server does not answer within `graceMs`, abandons
// the connection so the request still ends.

import { QueryCanceledError, QueryTimeoutError, type DbqError } from '../errors.ts';
import type { StopSignal } from './stop.ts';

export type StopReason = 'timeout' | 'canceled';

/** How often an unanswered cancel is sent again (see stop()). */
const CANCEL_RETRY_MS = 200;

export interface WatchOptions {
  timeoutMs: number;
  /** The timeout the error names, when timeoutMs is only what was left of it (a request's
   * deadline: src/engines/deadline.ts). */
  reportMs?: number;
  /** On timeout, fail the calls waiting in run() at once (the request's time is up: a dead
   * network must not add the cancel's connect and the grace to it); the cancel and, failing
   * it, the abandon go on behind, and finish() waits for them before the connection is reused. */
  answerAtTimeout?: boolean;
  /** Added to timeoutMs so the server's own timeout normally wins the race. */
  backstopMs: number;
  /** After the cancel request, how long to wait before abandoning the connection. */
  graceMs: number;
  signal?: StopSignal;
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
  private retryTimer: NodeJS.Timeout | null = null;
  private finished = false;
  private pendingCancel: Promise<void> = Promise.resolve();
  /** Rejecters of the run() calls in flight; called when the connection is abandoned. Not a
   * Promise.race against one long-lived promise: every race leaves a reaction on it holding
   * its settled result, so a stream's run() per batch kept every batch alive. */
  private readonly waiting = new Set<(err: DbqError) => void>();
  private hardStopError: DbqError | null = null;
  /** Set when a timeout answered the waiters before the connection was settled (answerAtTimeout). */
  private answered = false;
  /** With answerAtTimeout, the work passed to run() and not settled yet: what finish() waits
   * for after an early answer. */
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Ends finish()'s wait when the grace abandons the connection. */
  private onAbandon: (() => void) | null = null;
  private readonly onAbort = () => this.stop('canceled');

  constructor(opts: WatchOptions) {
    this.opts = opts;
    this.timer = setTimeout(() => this.stop('timeout'), opts.timeoutMs + opts.backstopMs);
    if (opts.signal?.aborted) queueMicrotask(this.onAbort);
    else opts.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Resolves/rejects with `work`, or rejects when the connection had to be abandoned. */
  run<T>(work: Promise<T>): Promise<T> {
    work.catch(() => {});
    if (this.hardStopError) return Promise.reject(this.hardStopError);
    if (this.answered) return Promise.reject(this.error());
    if (this.opts.answerAtTimeout) {
      this.inFlight.add(work);
      const settled = () => this.inFlight.delete(work);
      work.then(settled, settled);
    }
    return new Promise<T>((resolve, reject) => {
      this.waiting.add(reject);
      work.then(
        (value) => {
          this.waiting.delete(reject);
          resolve(value);
        },
        (err: unknown) => {
          this.waiting.delete(reject);
          reject(err);
        },
      );
    });
  }

  /** Stop the statement for `reason` (first reason wins). */
  stop(reason: StopReason): void {
    if (this.reason) return;
    this.reason = reason;
    this.pendingCancel = this.opts.cancel().catch(() => {});
    // A cancel that reaches the server between two protocol messages of the statement is
    // ignored there (PostgreSQL between Bind/Describe and Execute, MySQL between prepare and
    // execute), and the statement then runs on: ask again until it ends or the grace is over.
    this.retryTimer = setInterval(() => {
      this.pendingCancel = this.pendingCancel.then(() => (this.finished ? undefined : this.opts.cancel().catch(() => {})));
    }, CANCEL_RETRY_MS);
    this.graceTimer = setTimeout(() => {
      if (this.retryTimer) clearInterval(this.retryTimer);
      this.abandoned = true;
      this.opts.abandon();
      this.hardStopError = this.error();
      for (const reject of this.waiting) reject(this.hardStopError);
      this.waiting.clear();
      this.onAbandon?.();
    }, this.opts.graceMs);
    if (reason === 'timeout' && this.opts.answerAtTimeout) {
      this.answered = true;
      const err = this.error();
      for (const reject of this.waiting) reject(err);
      this.waiting.clear();
    }
  }

  /** The error a stopped statement ends with, whatever the driver reported. */
  error(): DbqError {
    return this.reason === 'canceled' ? new QueryCanceledError() : new QueryTimeoutError(this.opts.reportMs ?? this.opts.timeoutMs);
  }

  /** Clear timers and wait for an in-flight cancel request, so it cannot land on the next
   * statement sent on the same connection. */
  async finish(): Promise<void> {
    clearTimeout(this.timer);
    // Answered early: the statement may still be running, so the connection is not handed back
    // until it ends (the cancel landed) or the grace abandons it.
    if (this.answered && !this.abandoned && this.inFlight.size > 0) {
      await new Promise<void>((resolve) => {
        this.onAbandon = resolve;
        void Promise.allSettled([...this.inFlight]).then(() => resolve());
      });
    }
    this.finished = true;
    if (this.retryTimer) clearInterval(this.retryTimer);
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
