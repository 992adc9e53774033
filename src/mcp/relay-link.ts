// The MCP relay's link to Redis (relay.ts): two connections — one for commands, one subscribed
// to this process's own channels — the breaker in front of them, and whether the link is up.
// It is degraded from the first error or timed-out command until both connections are ready,
// the subscription is in place and the breaker closed again; each change is logged once. What
// goes through it is sealed with DBQ_SECRET_KEY and bound to the key or channel it is written
// to (relay.ts says why); the names and messages are relay-protocol.ts's.
import type { Redis } from 'ioredis';
import { RedisBreaker } from '../limits/redis-breaker.ts';
import type { Logger } from '../logger.ts';
import type { SecretBox } from '../secrets/secret-box.ts';
import { COMMAND_TIMEOUT_MS, redisClient, type ToCaller, type ToOwner } from './relay-protocol.ts';

/** Bound on the first connection to Redis (later, commands fail fast while it is down). */
const FIRST_CONNECT_WAIT_MS = 2_000;

export interface RelayLinkOptions {
  redisUrl: string;
  secretBox: SecretBox;
  log: Logger;
  /** This process's own channels, subscribed once the subscriber first connects. */
  channels: string[];
  onMessage: (channel: string, raw: string) => void;
  /** The subscriber's connection closed: whatever was published to us meanwhile is lost. */
  onSubscriberClosed: () => void;
  /** Redis is reachable again; what this process keeps there may have been lost. */
  onRecovered: () => void;
}

export class RelayLink {
  readonly cmd: Redis;
  readonly breaker: RedisBreaker;
  private readonly sub: Redis;
  private readonly writes = new Set<Promise<unknown>>();
  private subscribed = false;
  private firstConnect: Promise<void> | null = null;
  private degraded = false;
  private closed = false;
  private warnedSeal = false;

  constructor(private readonly opts: RelayLinkOptions) {
    this.cmd = redisClient(opts.redisUrl);
    this.sub = redisClient(opts.redisUrl);
    this.breaker = new RedisBreaker({
      probe: () => this.cmd.ping(),
      slowMs: 0.8 * COMMAND_TIMEOUT_MS,
      onOpen: (reason) => this.degrade(reason),
      onClose: () => this.recover(),
    });
    this.cmd.on('error', (err: Error) => this.degrade(err.message));
    this.sub.on('error', (err: Error) => this.degrade(err.message));
    this.cmd.on('ready', () => {
      this.breaker.probeSoon();
      this.recover();
    });
    this.sub.on('ready', () => {
      // ioredis subscribes again by itself after a reconnect; only the first time is ours.
      if (!this.subscribed) {
        this.sub.subscribe(...opts.channels).then(
          () => {
            this.subscribed = true;
            this.recover();
          },
          (err: Error) => this.degrade(err.message),
        );
      }
    });
    this.sub.on('close', () => opts.onSubscriberClosed());
    this.sub.on('message', (channel: string, raw: string) => opts.onMessage(channel, raw));
  }

  /** Starts connecting, in the background. */
  connect(): void {
    this.cmd.connect().catch(() => {});
    this.sub.connect().catch(() => {});
  }

  /** The command connection is up (it may still hang: the breaker tells). */
  get ready(): boolean {
    return this.cmd.status === 'ready';
  }

  /** Whether both connections are up and subscribed. Only the first uses wait (once, bounded)
   * for the connection being made; afterwards an outage answers at once. */
  async live(): Promise<boolean> {
    if (this.breaker.open) return false;
    const ok = () => this.cmd.status === 'ready' && this.sub.status === 'ready' && this.subscribed;
    if (!ok() && !this.closed) {
      this.firstConnect ??= (async () => {
        const deadline = Date.now() + FIRST_CONNECT_WAIT_MS;
        // Stops early when the attempt already failed (refused, unknown host).
        while (!ok() && !this.degraded && Date.now() < deadline && !this.closed) await new Promise((r) => setTimeout(r, 20));
      })();
      await this.firstConnect;
    }
    return ok();
  }

  async publish(channel: string, message: ToOwner | ToCaller): Promise<number> {
    return this.breaker.watch(this.cmd.publish(channel, this.opts.secretBox.seal(JSON.stringify(message), channel)));
  }

  seal(value: unknown, boundTo: string): string {
    return this.opts.secretBox.seal(JSON.stringify(value), boundTo);
  }

  open<T>(sealed: string, boundTo: string): T | null {
    try {
      return JSON.parse(this.opts.secretBox.open(sealed, boundTo)) as T;
    } catch {
      if (!this.warnedSeal) {
        this.warnedSeal = true;
        this.opts.log.warn('mcp relay: a session binding or message in Redis could not be opened; do all processes share DBQ_SECRET_KEY?');
      }
      return null;
    }
  }

  /** A write whose outcome nobody waits on but close(): a failure degrades the link, a success
   * may end a degradation. */
  track<T>(p: Promise<T>): Promise<T | undefined> {
    const tracked = this.breaker.watch(p).then(
      (v) => {
        this.recover();
        return v;
      },
      (err: Error) => {
        this.degrade(err.message);
        return undefined;
      },
    );
    this.writes.add(tracked);
    void tracked.finally(() => this.writes.delete(tracked));
    return tracked;
  }

  /** The first step of closing: nothing is logged or probed any more. */
  stop(): void {
    this.closed = true;
    this.breaker.stop();
  }

  /** Waits for the tracked writes, then closes both connections. */
  async close(): Promise<void> {
    this.stop();
    await Promise.allSettled([...this.writes]);
    for (const client of [this.cmd, this.sub]) {
      client.removeAllListeners('error');
      client.on('error', () => {});
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    }
  }

  private degrade(reason: string): void {
    if (this.degraded || this.closed) return;
    this.degraded = true;
    this.opts.log.warn({ reason }, 'Redis unreachable: MCP sessions are served only by the process that opened them until it is back');
  }

  private recover(): void {
    if (!this.degraded || this.breaker.open || this.cmd.status !== 'ready' || this.sub.status !== 'ready') return;
    this.degraded = false;
    this.opts.log.info('Redis reachable again: MCP messages are relayed between processes');
    this.opts.onRecovered();
  }
}
