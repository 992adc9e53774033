// The sliding-window log behind every dbq limit, in two stores with the same behaviour:
//
// - Redis (shared by every process): rate-limiter-flexible's RateLimiterRedis runs our Lua
//   script through its `customIncrTtlLuaScript` hook. The library's own script is an
//   "enhanced fixed window" (the count resets a whole `duration` after the first request), which
//   admits up to twice the limit across a window edge — 60 requests at 0:59 and 60 more at 1:00.
//   dbq's limits are sliding windows (README), so the script keeps a sorted set of the times
//   of admitted requests and counts only the last `duration` seconds. The library still owns the client
//   wiring (EVALSHA via defineCommand), result parsing, `rejectIfRedisNotReady` and the
//   switch to the insurance limiter when Redis fails.
// - Memory (one process): `SlidingWindowMemory`, the same log in a Map, used alone when
//   DBQ_REDIS_URL is unset and as the Redis limiter's insurance while Redis is unreachable.
//
// A refused request is not logged: a client that keeps retrying while refused does not push
// its own recovery further away. `msBeforeNext` is the time until the next slot frees (the
// oldest admitted request leaves the window), which is what RateLimit-Reset and Retry-After say.
import { RateLimiterCompatibleAbstract, RateLimiterRes } from 'rate-limiter-flexible';

// ARGV is RateLimiterRedis's: points to take, duration (s, unused: ARGV[4] is the same),
// the limiter's points (the limit) and duration (s). Scores are Redis TIME in microseconds:
// one clock for every process, whatever their hosts' clocks say. Two requests in the same
// microsecond get distinct members by bumping the later one by 1 µs. Scores travel as
// '%.0f' strings because Lua numbers print in %.14g and would round 16-digit microseconds.
// redis.replicate_commands() lets Redis < 7 accept writes after TIME (a no-op on 7).
export const SLIDING_WINDOW_LUA = `
if redis.replicate_commands then redis.replicate_commands() end
local key = KEYS[1]
local take = tonumber(ARGV[1])
local limit = tonumber(ARGV[3])
local window = tonumber(ARGV[4]) * 1000000
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%.0f', now - window))
local count = redis.call('ZCARD', key)
if count + take <= limit then
  local at = now
  for i = 1, take do
    while redis.call('ZADD', key, 'NX', string.format('%.0f', at), string.format('%.0f', at)) == 0 do at = at + 1 end
  end
  redis.call('PEXPIRE', key, math.ceil(window / 1000))
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return {count + take, math.ceil((tonumber(oldest[2]) + window - now) / 1000)}
end
local wait = window
local frees = count + take - limit
if frees <= count then
  local entry = redis.call('ZRANGE', key, frees - 1, frees - 1, 'WITHSCORES')
  wait = tonumber(entry[2]) + window - now
end
return {count + take, math.ceil(wait / 1000)}
`;

/** The per-process log: admitted request times (ms, monotonic) per key, oldest first. */
export class SlidingLog {
  private readonly entries = new Map<string, number[]>();
  /** Results this log produced, so a caller can tell a fallback answer from a Redis one. */
  readonly issued = new WeakSet<RateLimiterRes>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number = () => performance.now(),
    // A flood of distinct keys (spoofed or IPv6 addresses hitting the auth-failure limiter)
    // must not grow memory without bound; past this many keys the oldest are dropped.
    private readonly maxKeys = 100_000,
  ) {
    this.sweeper = setInterval(() => this.sweep(), windowMs).unref();
  }

  /** Admits `take` more under `limit` or refuses; the result says which (consumed > limit). */
  take(key: string, take: number, limit: number): { res: RateLimiterRes; admitted: boolean } {
    const now = this.now();
    const times = this.live(key, now);
    const count = times.length;
    let admitted = false;
    let waitMs = this.windowMs;
    if (count + take <= limit) {
      admitted = true;
      for (let i = 0; i < take; i++) times.push(now);
      if (!this.entries.has(key)) {
        while (this.entries.size >= this.maxKeys) this.entries.delete(this.entries.keys().next().value as string);
        this.entries.set(key, times);
      }
      waitMs = this.windowMs - (now - times[0]);
    } else if (count + take - limit <= count) {
      waitMs = this.windowMs - (now - times[count + take - limit - 1]);
    }
    const consumed = count + take;
    const res = new RateLimiterRes(Math.max(limit - consumed, 0), Math.ceil(waitMs), consumed, consumed === take);
    this.issued.add(res);
    return { res, admitted };
  }

  count(key: string): number {
    return this.live(key, this.now()).length;
  }

  delete(key: string): boolean {
    return this.entries.delete(key);
  }

  close(): void {
    clearInterval(this.sweeper);
    this.entries.clear();
  }

  /** The key's times still inside the window (expired ones dropped in place). */
  private live(key: string, now: number): number[] {
    const times = this.entries.get(key);
    if (!times) return [];
    let expired = 0;
    while (expired < times.length && times[expired] <= now - this.windowMs) expired++;
    if (expired > 0) times.splice(0, expired);
    if (times.length === 0) this.entries.delete(key);
    return times;
  }

  private sweep(): void {
    const now = this.now();
    for (const key of [...this.entries.keys()]) this.live(key, now);
  }
}

/**
 * A rate-limiter-flexible limiter over a `SlidingLog`: `points` per the log's window. Several
 * instances may share one log (one per plan), so a workspace that changes plan keeps its
 * count, as it does in Redis. Only `consume`, `get` and `delete` are used by dbq; the rest of
 * the interface refuses rather than pretend.
 */
export class SlidingWindowMemory extends RateLimiterCompatibleAbstract {
  // Plain fields (not the base class's throwing accessors); RateLimiterRedis copies its own
  // blockDuration/execEvenly (both 0/false here) into its insurance limiter.
  readonly keyPrefix: string;
  blockDuration = 0;
  execEvenly = false;

  constructor(
    private readonly log: SlidingLog,
    readonly points: number,
    keyPrefix: string,
  ) {
    super();
    this.keyPrefix = keyPrefix;
  }

  consume(key: string | number, pointsToConsume = 1): Promise<RateLimiterRes> {
    const { res, admitted } = this.log.take(this.keyOf(key), pointsToConsume, this.points);
    return admitted ? Promise.resolve(res) : Promise.reject(res);
  }

  get(key: string | number): Promise<RateLimiterRes | null> {
    const count = this.log.count(this.keyOf(key));
    return Promise.resolve(count === 0 ? null : new RateLimiterRes(Math.max(this.points - count, 0), 0, count, false));
  }

  delete(key: string | number): Promise<boolean> {
    return Promise.resolve(this.log.delete(this.keyOf(key)));
  }

  penalty(): Promise<RateLimiterRes> {
    return Promise.reject(new Error('SlidingWindowMemory does not support penalty'));
  }

  reward(): Promise<RateLimiterRes> {
    return Promise.reject(new Error('SlidingWindowMemory does not support reward'));
  }

  set(): Promise<RateLimiterRes> {
    return Promise.reject(new Error('SlidingWindowMemory does not support set'));
  }

  block(): Promise<RateLimiterRes> {
    return Promise.reject(new Error('SlidingWindowMemory does not support block'));
  }

  private keyOf(key: string | number): string {
    return `${this.keyPrefix}:${key}`;
  }
}
