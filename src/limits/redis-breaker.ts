// A circuit breaker in front of one Redis client. A dead Redis costs nothing:
// its socket closes, ioredis refuses commands at once (no offline queue) and the caller falls
// back. A hung one — SIGSTOPped, swapping, stuck in a long script — keeps its TCP connection
// open, so every command waits out its full timeout before the fallback answers: 505 ms added
// to each rate-limited request (200 requests took 101 s) and 2 s to each MCP relay look-up, for
// as long as it hung.
//
// - closed: commands go to Redis; the first one that failed only after `slowMs` (it timed out)
//   opens the breaker. One is enough: opening costs only a moment of per-process counting. A
//   quick failure (not connected, refused, WRONGTYPE on one bad key) opens nothing: it cost no
//   wait, and says nothing about whether Redis answers;
// - open: callers skip Redis and take their fallback at once; a PING probes in the background
//   every `probeEveryMs` (never two at once), unanswered after `probeTimeoutMs` is a failure;
// - the first probe answered closes it. Only a probe closes it: a late answer to a command sent
//   before it opened says nothing about Redis now.
//
// Rate limits (limits.ts) and the MCP relay (relay.ts) each hold one for their own client.

export interface RedisBreakerOptions {
  /** One round trip on the guarded client (PING). */
  probe: () => Promise<unknown>;
  /** A failure that took this long was a timeout: a little under the client's command timeout. */
  slowMs: number;
  probeEveryMs?: number;
  probeTimeoutMs?: number;
  /** Called once per opening, with what failed. */
  onOpen?: (reason: string) => void;
  /** Called once Redis answered a probe again. */
  onClose?: () => void;
}

const BREAKER_DEFAULTS = { probeEveryMs: 1_000, probeTimeoutMs: 500 };

export class RedisBreaker {
  private readonly opts: Required<Omit<RedisBreakerOptions, 'onOpen' | 'onClose'>> & Pick<RedisBreakerOptions, 'onOpen' | 'onClose'>;
  private openedAt: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private probing = false;
  private stopped = false;

  constructor(opts: RedisBreakerOptions) {
    this.opts = { ...BREAKER_DEFAULTS, ...opts };
  }

  /** Whether Redis is known unresponsive: skip it and fall back now. */
  get open(): boolean {
    return this.openedAt !== null;
  }

  /** A command failed after `elapsedMs`: a timeout opens the breaker (once) and starts probing. */
  failed(elapsedMs: number, reason: string): void {
    if (this.openedAt !== null || this.stopped || elapsedMs < this.opts.slowMs) return;
    this.openedAt = Date.now();
    this.opts.onOpen?.(reason);
    this.schedule(this.opts.probeEveryMs);
  }

  /** `command`, whose failure is reported to failed() with its duration. */
  watch<T>(command: Promise<T>): Promise<T> {
    const started = performance.now();
    return command.catch((err: unknown) => {
      this.failed(performance.now() - started, err instanceof Error ? err.message : String(err));
      throw err;
    });
  }

  /** Probe at once rather than at the next tick (the client has just reconnected). */
  probeSoon(): void {
    if (this.openedAt === null || this.stopped || this.probing) return;
    this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.probe(), ms);
    this.timer.unref();
  }

  private async probe(): Promise<void> {
    this.timer = null;
    if (this.openedAt === null || this.stopped) return;
    // The last PING is still queued on the hung connection (its client's command timeout can be
    // longer than ours): another would only queue behind it.
    if (this.probing) return this.schedule(this.opts.probeEveryMs);
    this.probing = true;
    const attempt = this.opts.probe().then(
      () => true,
      () => false,
    );
    void attempt.then(() => (this.probing = false));
    let deadline: NodeJS.Timeout | undefined;
    const answered = await Promise.race([
      attempt,
      new Promise<boolean>((resolve) => {
        deadline = setTimeout(() => resolve(false), this.opts.probeTimeoutMs);
      }),
    ]);
    clearTimeout(deadline);
    if (this.stopped || this.openedAt === null) return;
    if (!answered) {
      this.schedule(this.opts.probeEveryMs);
      return;
    }
    this.openedAt = null;
    this.opts.onClose?.();
  }
}
