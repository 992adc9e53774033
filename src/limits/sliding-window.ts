// The sliding-window log behind every dbq limit, in two stores with the same behaviour:
//
// - Redis (shared by every process): one Lua script per count, which keeps a sorted set of the
//   times of admitted requests and counts only the last window. A fixed window (the count
//   resetting a whole window after the first request) would admit up to twice the limit across
//   a window edge — 60 requests at 0:59 and 60 more at 1:00; API.md promises a sliding window.
//   src/limits/limits.ts sends it as an ioredis command (EVALSHA, EVAL if Redis lost it).
// - Memory (one process): `SlidingLog`, the same log in a Map, used alone when DBQ_REDIS_URL is
//   unset and in place of Redis while Redis is unreachable.
//
// A refused request is not logged: a client that keeps retrying while refused does not push
// its own recovery further away. `msBeforeNext` is the time until the next slot frees (the
// oldest admitted request leaves the window), which is what RateLimit-Reset and Retry-After say.

// ARGV: points to take, the limit, the window (s). Returns {count including this take,
// msBeforeNext}; over the limit means refused and nothing logged. Scores are Redis TIME in
// microseconds: one clock for every process, whatever their hosts' clocks say. Two requests
// in the same microsecond get distinct members by bumping the later one by 1 µs. Scores travel
// as '%.0f' strings because Lua numbers print in %.14g and would round 16-digit microseconds.
// redis.replicate_commands() lets Redis < 7 accept writes after TIME (a no-op on 7).
export const SLIDING_WINDOW_LUA = `
if redis.replicate_commands then redis.replicate_commands() end
local key = KEYS[1]
local take = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3]) * 1000000
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

  /** Admits `take` more under `limit` or refuses, answering as the Redis script does. */
  take(key: string, take: number, limit: number): { counted: number; msBeforeNext: number } {
    const now = this.now();
    const times = this.live(key, now);
    const count = times.length;
    let waitMs = this.windowMs;
    if (count + take <= limit) {
      for (let i = 0; i < take; i++) times.push(now);
      if (!this.entries.has(key)) {
        while (this.entries.size >= this.maxKeys) this.entries.delete(this.entries.keys().next().value as string);
        this.entries.set(key, times);
      }
      waitMs = this.windowMs - (now - times[0]);
    } else if (count + take - limit <= count) {
      waitMs = this.windowMs - (now - times[count + take - limit - 1]);
    }
    return { counted: count + take, msBeforeNext: Math.ceil(waitMs) };
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
