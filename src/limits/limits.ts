// Rate limits as a core service: per-workspace plan budgets and the per-address budget of
// failed authentications. With DBQ_REDIS_URL every process counts in Redis, so N processes
// behind a load balancer share one budget; without it (or while Redis is unreachable) each
// process counts alone. dbq keeps serving when Redis goes away: a limit that cannot be shared
// is still enforced per process, which is a better failure than refusing every request
// (fail closed) or dropping limits altogether (fail open). One warning is logged when that
// happens and one line when the shared count is back.
//
// HTTP and MCP both call `consumeRequest`; src/limits/http.ts turns the answer into headers.
import { Redis, type Result } from 'ioredis';
import type { Logger } from '../logger.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import type { Plan } from '../workspaces/workspaces.ts';
import { AUTH_FAILURES_PER_WINDOW, PLAN_LIMITS, WINDOW_SECONDS } from './plans.ts';
import { SLIDING_WINDOW_LUA, SlidingLog } from './sliding-window.ts';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** SLIDING_WINDOW_LUA by EVALSHA (EVAL once if Redis lost the script): [counted, msBeforeNext]. */
    dbqSlidingWindow(key: string, take: number, limit: number, windowSeconds: number): Result<[number, number], Context>;
  }
}

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

/** One budget: where its counts live (the same key in Redis and in memory) and its size. */
interface Budget {
  prefix: string;
  limit: number;
}

export class Limits {
  /** Whether counts are meant to be shared (DBQ_REDIS_URL set). */
  readonly distributed: boolean;
  private readonly redis: Redis | null;
  private readonly log: SlidingLog;
  private readonly windowSeconds: number;
  private readonly planBudgets = new Map<Plan, Budget>();
  private readonly authBudget: Budget;
  private readonly logger: Logger;
  private degraded = false;
  private readonly redisTimeoutMs: number;
  private connecting: Promise<void> | null = null;

  constructor(opts: LimitsOptions) {
    this.windowSeconds = opts.windowSeconds ?? WINDOW_SECONDS;
    this.logger = opts.logger.child({ component: 'rate-limits' });
    this.log = new SlidingLog(this.windowSeconds * 1000);
    this.redisTimeoutMs = opts.redisTimeoutMs ?? 500;
    this.redis = opts.redisUrl ? redisClient(opts.redisUrl, this.redisTimeoutMs) : null;
    this.distributed = this.redis !== null;
    if (this.redis) {
      this.redis.on('error', (err: Error) => this.degrade(err.message));
      this.redis.on('ready', () => this.recover());
      // Our own command rather than a rate-limiter-flexible limiter around it: measured with
      // Redis idle between calls (as between HTTP requests), the library's promise layers added
      // about 0.05 ms to each count. ioredis sends EVALSHA and falls back to EVAL by itself.
      this.redis.defineCommand('dbqSlidingWindow', { numberOfKeys: 1, lua: SLIDING_WINDOW_LUA });
    }
    const plans = { ...PLAN_LIMITS, ...opts.planLimits };
    for (const [plan, limit] of Object.entries(plans) as [Plan, number | null][]) {
      // Every plan counts in the same key (`requests`), so a plan change keeps the count and
      // only the limit it is compared with changes.
      if (limit !== null) this.planBudgets.set(plan, { prefix: `${opts.keyPrefix}:requests`, limit });
    }
    this.authBudget = { prefix: `${opts.keyPrefix}:auth-failures`, limit: opts.authFailures ?? AUTH_FAILURES_PER_WINDOW };
  }

  /** Whether the principal's plan has a limit at all (false: enterprise, nothing is counted). */
  limited(principal: Pick<Principal, 'workspace'>): boolean {
    return this.planBudgets.has(principal.workspace.plan);
  }

  /**
   * Counts `count` requests (API calls or MCP messages; a JSON-RPC batch is one call with its
   * length) against the principal's workspace plan, all or none: a batch that does not fit
   * whole is refused whole and counts nothing.
   */
  async consumeRequest(principal: Pick<Principal, 'workspace'>, count = 1): Promise<LimitState> {
    const budget = this.planBudgets.get(principal.workspace.plan);
    if (!budget) return { unlimited: true, allowed: true };
    return this.consume(budget, principal.workspace.id, Math.max(1, Math.floor(count)));
  }

  /** Counts one failed authentication from a client address; refused past the budget. */
  async recordAuthFailure(address: string): Promise<LimitState> {
    return this.consume(this.authBudget, addressKey(address));
  }

  async close(): Promise<void> {
    this.log.close();
    if (!this.redis) return;
    this.redis.removeAllListeners('error');
    this.redis.on('error', () => {});
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => this.redis?.disconnect());
    else this.redis.disconnect();
  }

  private async consume(budget: Budget, id: string, count = 1): Promise<LimitState> {
    const key = `${budget.prefix}:${id}`;
    const redis = this.redis;
    if (redis) {
      // Checked here rather than in connected(): the common case then costs no extra await.
      if (redis.status !== 'ready') await this.connected(redis);
      // Not ready (down, reconnecting, first connection too slow): count in memory at once
      // rather than wait; the offline queue is off, so a command would only be refused anyway.
      if (redis.status === 'ready') {
        try {
          const [counted, msBeforeNext] = await redis.dbqSlidingWindow(key, count, budget.limit, this.windowSeconds);
          this.recover();
          return answer(budget.limit, counted, msBeforeNext, true);
        } catch (err) {
          // A failed or timed-out command (commandTimeout) falls back like a lost connection.
          this.degrade(err instanceof Error ? err.message : String(err));
        }
      } else {
        this.degrade(`Redis connection is ${redis.status}`);
      }
    }
    const { counted, msBeforeNext } = this.log.take(key, count, budget.limit);
    return answer(budget.limit, counted, msBeforeNext, false);
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

/**
 * A limit answer from what either store returns: the count including this request's `take`
 * (over the limit means refused and not logged) and the ms until the oldest slot frees.
 */
function answer(limit: number, counted: number, msBeforeNext: number, shared: boolean): LimitState {
  const allowed = counted <= limit;
  return {
    unlimited: false,
    allowed,
    limit,
    remaining: allowed ? limit - counted : 0,
    resetSeconds: Math.max(1, Math.ceil(msBeforeNext / 1000)),
    shared,
  };
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
