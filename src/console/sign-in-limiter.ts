// Sign-in attempt limiting, in memory, per process: failed attempts are counted per
// (address, email) — so one person mistyping does not lock out the office behind one NAT —
// and per address — so one client cannot spray passwords over many emails. The maps are
// bounded (oldest entries dropped), so a flood of distinct addresses cannot exhaust memory.
// Several server processes each keep their own count; the API's shared limiter is separate.

export interface SignInLimits {
  /** Failures allowed per address+email within the window. */
  perAccount: number;
  /** Failures allowed per address (any email) within the window. */
  perAddress: number;
  windowMs: number;
  maxEntries: number;
}

export const DEFAULT_SIGN_IN_LIMITS: SignInLimits = { perAccount: 5, perAddress: 30, windowMs: 15 * 60_000, maxEntries: 10_000 };

interface Bucket {
  failures: number;
  resetAt: number;
}

export class SignInLimiter {
  private readonly accounts = new Map<string, Bucket>();
  private readonly addresses = new Map<string, Bucket>();

  constructor(
    private readonly limits: SignInLimits = DEFAULT_SIGN_IN_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Seconds to wait before another attempt is allowed, or 0 when one is allowed now. */
  retryAfter(address: string, email: string): number {
    const t = this.now();
    const waits = [
      this.wait(this.accounts, accountKey(address, email), this.limits.perAccount, t),
      this.wait(this.addresses, address, this.limits.perAddress, t),
    ];
    return Math.max(...waits);
  }

  recordFailure(address: string, email: string): void {
    const t = this.now();
    this.bump(this.accounts, accountKey(address, email), t);
    this.bump(this.addresses, address, t);
  }

  /** A successful sign-in clears that account's count (not the address's). */
  recordSuccess(address: string, email: string): void {
    this.accounts.delete(accountKey(address, email));
  }

  private wait(map: Map<string, Bucket>, key: string, limit: number, t: number): number {
    const bucket = map.get(key);
    if (!bucket) return 0;
    if (bucket.resetAt <= t) {
      map.delete(key);
      return 0;
    }
    return bucket.failures >= limit ? Math.ceil((bucket.resetAt - t) / 1000) : 0;
  }

  private bump(map: Map<string, Bucket>, key: string, t: number): void {
    const bucket = map.get(key);
    if (bucket && bucket.resetAt > t) {
      bucket.failures += 1;
      return;
    }
    map.delete(key);
    // Map keeps insertion order: the first key is the oldest window.
    while (map.size >= this.limits.maxEntries) map.delete(map.keys().next().value as string);
    map.set(key, { failures: 1, resetAt: t + this.limits.windowMs });
  }
}

function accountKey(address: string, email: string): string {
  return `${address}\n${email.trim().toLowerCase()}`;
}
