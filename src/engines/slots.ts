// A counting semaphore in front of every engine's pool. The drivers' own pools either have no
// acquire timeout (mysql2) or use one timer for "wait in the queue" and "open a socket"
// (pg-pool's connectionTimeoutMillis), so a full pool and a dead server would look alike.
// Holding a slot first means the driver pool never queues: waiting here is "database busy"
// (503), a failure while the driver opens a connection is "connection failed" (502).

import { DatabaseBusyError, QueryCanceledError, type DbqError } from '../errors.ts';
import type { StopSignal } from './stop.ts';

interface Waiter {
  grant: () => void;
  fail: (err: DbqError) => void;
}

export class Slots {
  private free: number;
  private readonly waiters: Waiter[] = [];
  private closedWith: DbqError | null = null;

  constructor(size: number) {
    this.free = Math.max(1, Math.floor(size));
  }

  /** Resolves with a release function once a slot is free; DatabaseBusyError after
   * `timeoutMs`, QueryCanceledError when `signal` aborts first. */
  acquire(timeoutMs: number, signal?: StopSignal): Promise<() => void> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    if (signal?.aborted) return Promise.reject(new QueryCanceledError());
    if (this.free > 0 && this.waiters.length === 0) {
      this.free--;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
      };
      const waiter: Waiter = {
        grant: () => {
          settle();
          resolve(this.releaser());
        },
        fail: (err) => {
          settle();
          reject(err);
        },
      };
      const onAbort = () => waiter.fail(new QueryCanceledError());
      const timer = setTimeout(() => waiter.fail(new DatabaseBusyError()), Math.max(0, timeoutMs));
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Fails every waiter and every later acquire with `err`. */
  close(err: DbqError): void {
    this.closedWith = err;
    for (const waiter of [...this.waiters]) waiter.fail(err);
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters[0];
      if (next) next.grant();
      else this.free++;
    };
  }
}
