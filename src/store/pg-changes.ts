// The PostgreSQL store's change signal, so several processes can cache key and
// connection look-ups the way one process on SQLite does (change-epoch.ts) without ever serving
// an answer staler than the staleness bound:
//  - triggers (migration 0008_store_change_notify) on every table those look-ups read bump the
//    one-row counter `dbq_store_changes` and NOTIFY `dbq_store_change`, in the writer's
//    transaction, so the signal goes out when (and only if) the change commits;
//  - each process LISTENs on a connection of its own (application_name `dbq-listen`) and
//    counts notifications; every 500 ms that connection also reads the counter (a lost
//    notification is made up for; an unanswered heartbeat replaces the connection, and while
//    the last answer is over 1 s old nothing is cached); it reconnects by itself, and a
//    reconnect invalidates everything (notifications sent while it was away are lost);
//  - while that connection is down, the counter row is read every 500 ms and is part of the
//    epoch: look-ups keep being cached, at most ~0.5 s stale; until the first read answers,
//    nothing is cached;
//  - this process's own writes invalidate at once (the OwnWrites Kysely plugin), so a change
//    made through this process applies to its very next request, notification or not.
import pg from 'pg';
import { OwnWrites } from './change-epoch.ts';

const CHANGE_CHANNEL = 'dbq_store_change';
export const LISTEN_APPLICATION_NAME = 'dbq-listen';
/** How often the counter row is read while the notification connection is down. */
const FALLBACK_POLL_MS = 500;
/** A heartbeat on the listening connection reads the counter too: a notification lost in any
 * way is still seen within HEARTBEAT_MS, and a connection that stopped answering (a dead peer
 * TCP does not report) is dropped and replaced, the fallback taking over meanwhile. While the
 * last answer is older than STALE_MS nothing is cached. */
const HEARTBEAT_MS = 500;
const HEARTBEAT_TIMEOUT_MS = 1_500;
const STALE_MS = 1_000;

export interface PgChangeFeedOptions {
  url: string;
  /** Reads the counter (through the store's pool). */
  readCounter(): Promise<number>;
  onStateChange?(state: 'listening' | 'fallback', err?: unknown): void;
}

export class PgChangeFeed {
  readonly ownWrites = new OwnWrites();
  private generation = 0;
  private notifications = 0;
  private client: pg.Client | null = null;
  private listening = false;
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private polling = false;
  private counter: number | null = null;
  private backoff = 50;
  private lastState: 'listening' | 'fallback' | null = null;
  /** The counter as the listening connection's heartbeat last read it, and when. */
  private heartbeatCounter = 0;
  private heartbeatAt = 0;

  constructor(private readonly opts: PgChangeFeedOptions) {}

  /** Connects the listener; resolves when it listens or, failing that, when the fallback runs. */
  async start(): Promise<void> {
    this.startPolling();
    await this.connect();
  }

  /** The epoch (store.epoch()): null when nothing may be cached. */
  current(): string | null {
    const own = this.ownWrites.count;
    if (this.listening) {
      if (Date.now() - this.heartbeatAt > STALE_MS) return null;
      return `L${this.generation}:${this.notifications}:${this.heartbeatCounter}:${own}`;
    }
    if (this.counter === null) return null;
    return `P${this.generation}:${this.counter}:${own}`;
  }

  /** Whether the notification connection is up (tests). */
  get isListening(): boolean {
    return this.listening;
  }

  /** The backend pid of the listening connection, if any (tests). */
  get listenerPid(): number | null {
    return this.listening ? ((this.client as unknown as { processID?: number })?.processID ?? null) : null;
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({
      connectionString: this.opts.url,
      application_name: LISTEN_APPLICATION_NAME,
      keepAlive: true,
      connectionTimeoutMillis: 5_000,
    });
    this.client = client;
    let failed = false;
    const fail = (err?: unknown) => {
      if (failed) return;
      failed = true;
      if (this.client === client) this.client = null;
      this.down(err);
      client.removeAllListeners('notification');
      // Never unlistened: an 'error' after this point must not crash the process.
      client.end().catch(() => {});
      this.scheduleReconnect();
    };
    client.on('error', fail);
    client.on('end', () => fail(new Error('listen connection ended')));
    client.on('notification', (msg) => {
      if (msg.channel === CHANGE_CHANNEL) this.notifications++;
    });
    const readCounter = async () => {
      const { rows } = await client.query<{ counter: string }>('select counter from dbq_store_changes where id = 1');
      this.heartbeatCounter = Number(rows[0]?.counter ?? 0);
      this.heartbeatAt = Date.now();
    };
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANGE_CHANNEL}`);
      await readCounter();
    } catch (err) {
      fail(err);
      return;
    }
    if (failed || this.closed) {
      if (this.closed) client.end().catch(() => {});
      return;
    }
    // Whatever committed before LISTEN took effect was never notified: start a new generation,
    // so everything cached before is reloaded.
    this.generation++;
    this.listening = true;
    this.backoff = 50;
    this.stopPolling();
    this.state('listening');
    let inFlight = false;
    this.heartbeatTimer = setInterval(() => {
      if (!this.listening || this.client !== client || inFlight) return;
      inFlight = true;
      const timer = setTimeout(() => {
        if (inFlight) fail(new Error('listen connection heartbeat timed out'));
      }, HEARTBEAT_TIMEOUT_MS);
      timer.unref();
      readCounter().then(
        () => {
          inFlight = false;
          clearTimeout(timer);
        },
        (err) => {
          inFlight = false;
          clearTimeout(timer);
          fail(err);
        },
      );
    }, HEARTBEAT_MS);
    this.heartbeatTimer.unref();
  }

  private down(err?: unknown): void {
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
    if (this.listening) {
      this.listening = false;
      // Notifications may have been missed since the connection died: drop every cached
      // entry, and cache again only on counter reads from now on.
      this.generation++;
      this.counter = null;
    }
    if (this.closed) return;
    this.startPolling();
    this.state('fallback', err);
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer) return;
    const delay = this.backoff;
    this.backoff = Math.min(this.backoff * 2, 2_000);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      void this.connect();
    }, delay);
    this.reconnectTimer.unref();
  }

  private startPolling(): void {
    if (this.pollTimer || this.closed) return;
    const poll = () => {
      if (this.polling || this.listening) return;
      this.polling = true;
      this.opts.readCounter().then(
        (value) => {
          this.polling = false;
          if (!this.listening) this.counter = value;
        },
        () => {
          this.polling = false;
          // The store itself is unreachable: cache nothing until it answers again.
          this.counter = null;
        },
      );
    };
    poll();
    this.pollTimer = setInterval(poll, FALLBACK_POLL_MS);
    this.pollTimer.unref();
  }

  private stopPolling(): void {
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = null;
    this.counter = null;
  }

  private state(s: 'listening' | 'fallback', err?: unknown): void {
    if (this.lastState === s) return;
    this.lastState = s;
    this.opts.onStateChange?.(s, err);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listening = false;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.stopPolling();
    const client = this.client;
    this.client = null;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => {});
    }
  }
}
