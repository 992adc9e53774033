// What stops a statement: a client that went away, a cancel request, a shutdown. The query
// path used AbortController for it, but in Node 20 creating an AbortSignal and adding and
// removing one listener costs ~5 µs (and garbage for the collector), several times per
// request: a tenth of dbq's whole core path for `SELECT 1` (bench/query-core). StopController
// does the same job with a plain array. StopSignal is the part of AbortSignal the engines use,
// so a real AbortSignal (the MCP SDK's, say) is accepted wherever a StopSignal is.

export interface StopSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

class Signal implements StopSignal {
  aborted = false;
  private listeners: (() => void)[] = [];

  // Every listener runs at most once: abort happens once, and fire() drops them all.
  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.aborted) this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.listeners.lastIndexOf(listener);
    if (i >= 0) this.listeners.splice(i, 1);
  }

  fire(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listeners = this.listeners;
    this.listeners = [];
    // One listener's failure must not keep the others (a slot wait, a statement's cancel)
    // from hearing the abort; the first failure still reaches whoever called abort().
    let failure: { error: unknown } | null = null;
    for (const listener of listeners) {
      try {
        listener();
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
  }
}

export class StopController {
  private readonly own = new Signal();
  readonly signal: StopSignal = this.own;
  /** Why the first abort() happened, when its caller said: the engines still end the statement
   * with QueryCanceledError, and whoever reports it (src/query/run.ts) answers this instead. A
   * shutdown's cut is the server's doing, not a client that went away. */
  reason: Error | null = null;

  abort(reason?: Error): void {
    if (!this.own.aborted) this.reason = reason ?? null;
    this.own.fire();
  }
}

/** The statement's StopController: the caller's own when it made one for this query, else a
 * new one following the caller's signal; `unlink` stops following once the statement is over. */
export function statementController(cancel: { signal?: StopSignal; controller?: StopController }): {
  controller: StopController;
  unlink(): void;
} {
  return cancel.controller ? { controller: cancel.controller, unlink: noop } : linkedController(cancel.signal);
}

/** A StopController for one statement that also follows the caller's signal; `unlink` stops
 * following it once the statement is over. */
export function linkedController(signal: StopSignal | undefined): { controller: StopController; unlink(): void } {
  const controller = new StopController();
  if (!signal) return { controller, unlink: noop };
  const onAbort = () => controller.abort();
  if (signal.aborted) controller.abort();
  else signal.addEventListener('abort', onAbort, { once: true });
  return { controller, unlink: () => signal.removeEventListener('abort', onAbort) };
}

function noop(): void {}
