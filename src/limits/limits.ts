// Rate limits as a core service: per-workspace plan budgets and the per-address budget of
// failed authentications. With DBQ_REDIS_URL every process counts in Redis, so N processes
// behind a load balancer share one budget; without it (or while Redis is unreachable) each
// process counts alone. dbq keeps serving when Redis goes away: a limit that cannot be shared
// is still enforced per process, which is a better failure than refusing every request
// (fail closed) or dropping limits altogether (fail open). One warning is logged when that
// happens and one line when the shared count is back. A Redis that hangs rather than dies is
// skipped while it does (redis-breaker.ts), so the fallback costs no wait either.
//
// HTTP and MCP both call `consumeRequest`; src/limits/http.ts turns the answer into headers.
import { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Logger } from '../logger.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import type { Plan } from '../workspaces/workspaces.ts';
import { AUTH_FAILURES_PER_WINDOW, PLAN_LIMITS, WINDOW_SECONDS } from './plans.ts';
import { RedisBreaker } from './redis-breaker.ts';
import { SLIDING_WINDOW_LUA, SlidingLog, SlidingWindowMemory } from './sliding-window.ts';

/** What a limit said about one request. */
export type LimitState =
  | { unlimited: true; allowed: true }
  | {
      unlimited: false;
      allowed: boolean;
      limit: number;
      remaining: number;
      /** Seconds until another request is allowed (RateLimit-Reset; Retry-After when refused). */
      resetSeconds: number;
      /** True when the count came from Redis (shared by every process), false when per process. */
      shared: boolean;
    };

export interface LimitsOptions {
  redisUrl: string | null;
  keyPrefix: string;
  logger: Logger;
  /** Overrides for benches and tests; production uses PLAN_LIMITS. */
  planLimits?: Partial<Record<Plan, number | null>>;
  authFailures?: number;
  windowSeconds?: number;
  /** Bound on one Redis round trip before the per-process count answers instead. */
  redisTimeoutMs?: number;
}

/** A count that fell back after this share of the Redis timeout waited it out (it did not
 * fail fast: not connected, or an error on the key). */
const SLOW_FRACTION = 0.8;

/** The limiter asked first, and the per-process one it falls back to (the same when there is
 * no Redis): while the breaker is open the fallback is asked directly. */
interface Limiter {
  first: RateLimiterRedis | SlidingWindowMemory;
  memory: SlidingWindowMemory;
}

export class Limits {
  /** Whether counts are meant to be shared (DBQ_REDIS_URL set). */
  readonly distributed: boolean;
  private readonly redis: Redis | null;
  private readonly breaker: RedisBreaker | null;
  private readonly log: SlidingLog;
  private readonly planLimiters = new Map<Plan, { limit: number; limiter: Limiter }>();
  private readonly authLimiter: Limiter;
  private readonly authLimit: number;
  private readonly logger: Logger;
  private degraded = false;
  private readonly redisTimeoutMs: number;
  private connecting: Promise<void> | null = null;

  constructor(opts: LimitsOptions) {
    const window = opts.windowSeconds ?? WINDOW_SECONDS;
    this.logger = opts.logger.child({ component: 'rate-limits' });
    this.log = new SlidingLog(window * 1000);
    this.redisTimeoutMs = opts.redisTimeoutMs ?? 500;
    this.redis = opts.redisUrl ? redisClient(opts.redisUrl, this.redisTimeoutMs) : null;
    this.distributed = this.redis !== null;
    const redis = this.redis;
    this.breaker = redis
      ? new RedisBreaker({
          probe: () => redis.ping(),
          slowMs: SLOW_FRACTION * this.redisTimeoutMs,
          probeTimeoutMs: this.redisTimeoutMs,
          onOpen: (reason) => this.degrade(reason),
          onClose: () => this.recover(),
        })
      : null;
    if (redis) {
      redis.on('error', (err: Error) => this.degrade(err.message));
      // Connected again is not answering again: with the breaker open, a probe decides.
      redis.on('ready', () => (this.breaker?.open ? this.breaker.probeSoon() : this.recover()));
    }
    const limiterFor = (points: number, name: string): Limiter => {
      const keyPrefix = `${opts.keyPrefix}:${name}`;
      const memory = new SlidingWindowMemory(this.log, points, keyPrefix);
      if (!this.redis) return { first: memory, memory };
      const shared = new RateLimiterRedis({
        storeClient: this.redis,
        keyPrefix,
        points,
        duration: window,
        customIncrTtlLuaScript: SLIDING_WINDOW_LUA,
        // Without this, a command issued while disconnected would wait for a reconnect;
        // the per-process count answers at once instead.
        rejectIfRedisNotReady: true,
        insuranceLimiter: memory,
      });
      return { first: shared, memory };
    };
    const plans = { ...PLAN_LIMITS, ...opts.planLimits };
    for (const [plan, limit] of Object.entries(plans) as [Plan, number | null][]) {
      // Every plan counts in the same key (`requests`), so a plan change keeps the count and
      // only the limit it is compared with changes.
      if (limit !== null) this.planLimiters.set(plan, { limit, limiter: limiterFor(limit, 'requests') });
    }
    this.authLimit = opts.authFailures ?? AUTH_FAILURES_PER_WINDOW;
    this.authLimiter = limiterFor(this.authLimit, 'auth-failures');
  }

  /** Whether the principal's plan has a limit at all (false: enterprise, nothing is counted). */
  limited(principal: Pick<Principal, 'workspace'>): boolean {
    return this.planLimiters.has(principal.workspace.plan);
  }

  /**
   * Counts `count` requests (API calls or MCP messages; a JSON-RPC batch is one call with its
   * length) against the principal's workspace plan, all or none: a batch that does not fit
   * whole is refused whole and counts nothing.
   */
  async consumeRequest(principal: Pick<Principal, 'workspace'>, count = 1): Promise<LimitState> {
    const plan = this.planLimiters.get(principal.workspace.plan);
    if (!plan) return { unlimited: true, allowed: true };
    return this.consume(plan.limiter, plan.limit, principal.workspace.id, Math.max(1, Math.floor(count)));
  }

  /** Counts one failed authentication from a client address; refused past the budget. */
  async recordAuthFailure(address: string): Promise<LimitState> {
    return this.consume(this.authLimiter, this.authLimit, addressKey(address));
  }

  async close(): Promise<void> {
    this.log.close();
    this.breaker?.stop();
    if (!this.redis) return;
    this.redis.removeAllListeners('error');
    this.redis.on('error', () => {});
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => this.redis?.disconnect());
    else this.redis.disconnect();
  }

  private async consume(limiter: Limiter, limit: number, key: string, count = 1): Promise<LimitState> {
    // Redis known to hang: counted here at once, as RateLimiterRedis would after its timeout.
    const skip = this.breaker?.open ?? false;
    // Checked here rather than in connected(): the common case then costs no extra await.
    const started = performance.now();
    if (!skip && this.redis && this.redis.status !== 'ready') await this.connected(this.redis);
    let res: RateLimiterRes;
    let allowed = true;
    try {
      res = await (skip ? limiter.memory : limiter.first).consume(key, count);
    } catch (err) {
      // A refusal arrives as a rejected RateLimiterRes. Redis failures never get here (the
      // in-memory insurance answers them), so anything else is a bug and surfaces as one.
      if (!(err instanceof RateLimiterRes)) throw err;
      res = err;
      allowed = false;
    }
    const shared = this.distributed && !this.log.issued.has(res);
    if (this.distributed && !skip) {
      // A late answer to a command sent before the breaker opened does not close it.
      if (shared) {
        if (!this.breaker?.open) this.recover();
      } else {
        this.breaker?.failed(performance.now() - started, `Redis did not answer within ${this.redisTimeoutMs} ms`);
        this.degrade('a Redis command failed or timed out');
      }
    }
    return {
      unlimited: false,
      allowed,
      limit,
      remaining: allowed ? Math.max(limit - res.consumedPoints, 0) : 0,
      resetSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
      shared,
    };
  }

  // The client connects on first use, not at construction: CLI commands build the same
  // services and never count a request. The first request waits for the connection (bounded),
  // so it is counted in Redis like every later one; from then on ioredis reconnects by itself.
  private async connected(redis: Redis): Promise<void> {
    if (!this.connecting) {
      this.connecting = redis.connect().catch((err: Error) => this.degrade(err.message));
    }
    if (redis.status === 'ready') return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.connecting, new Promise<void>((resolve) => (timer = setTimeout(resolve, this.redisTimeoutMs)))]);
    clearTimeout(timer);
  }

  private degrade(reason: string): void {
    if (this.degraded) return;
    this.degraded = true;
    this.logger.warn({ reason }, 'Redis unreachable: rate limits are counted per process until it is back');
  }

  private recover(): void {
    if (!this.degraded) return;
    this.degraded = false;
    this.logger.info('Redis reachable again: rate limits are shared between processes');
  }
}

function redisClient(url: string, timeoutMs: number): Redis {
  return new Redis(url, {
    lazyConnect: true,
    // Fail fast and let the per-process count answer; keep reconnecting in the background.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: timeoutMs,
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
}

/**
 * The address a failure is counted against. IPv6 clients usually hold a whole /64, so counting
 * single IPv6 addresses would give one client 2^64 budgets; IPv4-mapped IPv6 is plain IPv4.
 */
export function addressKey(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1];
  if (!ip.includes(':')) return ip;
  const [head, tail = ''] = ip.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

export function createLimits(opts: LimitsOptions): Limits {
  return new Limits(opts);
}

/** The core entry point for HTTP hooks and MCP: one request (or MCP message) of a principal. */
export function consumeRequest(svc: { limits: Limits }, principal: Pick<Principal, 'workspace'>, count = 1): Promise<LimitState> {
  return svc.limits.consumeRequest(principal, count);
}
