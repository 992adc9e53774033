// The PostgreSQL store's connection pool, as Kysely and the history writer use it, built to
// survive the store going away:
//  - Every client gets an 'error' listener the moment it connects. pg-pool listens only to idle
//    clients; one checked out (a request between two store queries, a transaction) whose
//    connection the server dropped emitted an unlistened 'error' and killed dbq about 100 ms
//    after the store stopped (node-postgres #2386). Now that client's query fails, and release
//    hands it back as broken so the pool destroys it.
//  - A failure that means the store is not there (store-errors.ts) reaches the caller as
//    StoreUnavailableError: 503 store_unavailable with Retry-After, not 500 internal_error.
//  - Failing fast: when a connection cannot be opened, the store is down from then on and every
//    checkout fails at once, instead of each request waiting for its own connect attempt (up to
//    the connect timeout when the host does not answer). Meanwhile one probe at a time connects
//    in the background, every PROBE_MIN_MS growing to PROBE_MAX_MS; the first that gets an
//    answer brings the store back for the very next request. A query that loses its
//    connection fails on its own without tripping this: one terminated backend is not an
//    outage, and the next checkout's connect attempt tells which it was.
import pg from 'pg';
import { StoreUnavailableError } from '../errors.ts';
import { classifyStoreError, isStoreUnavailable } from './store-errors.ts';

const PROBE_MIN_MS = 100;
const PROBE_MAX_MS = 1_000;
/** A probe's own connect timeout: the probe is alone and in the background, so it may wait. */
const PROBE_CONNECT_TIMEOUT_MS = 2_000;

export interface StorePoolLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

type QueryArgs = [text: string | pg.QueryConfig | pg.Submittable | object, values?: readonly unknown[]];

/** A checked-out store connection: the query and release Kysely's PostgresDialect calls. */
export class StoreClient {
  private broken: unknown = null;

  constructor(
    private readonly raw: pg.PoolClient,
    private readonly pool: StorePool,
  ) {}

  query(...args: QueryArgs): any {
    const [first] = args;
    // A cursor (Submittable) is returned as is: it reports through its own reads.
    if (typeof first === 'object' && first !== null && typeof (first as pg.Submittable).submit === 'function') {
      return (this.raw.query as (q: unknown) => unknown)(first);
    }
    return (this.raw.query as (...a: unknown[]) => Promise<unknown>)(...args).catch((err: unknown) => {
      if (isStoreUnavailable(err)) this.broken = err;
      throw this.pool.classify(err);
    });
  }

  release(): void {
    const broken = this.broken;
    this.broken = null;
    this.raw.release(broken ? (broken as Error) : undefined);
  }
}

export class StorePool {
  readonly raw: pg.Pool;
  private readonly clients = new WeakMap<pg.PoolClient, StoreClient>();
  private downSince: number | null = null;
  private lastError: unknown = null;
  private probeTimer: NodeJS.Timeout | null = null;
  private probeDelay = PROBE_MIN_MS;
  private closed = false;

  constructor(
    private readonly config: pg.PoolConfig,
    private readonly logger?: StorePoolLogger,
  ) {
    this.raw = new pg.Pool(config);
    // An idle client dropped by the server: pg-pool has removed it already.
    this.raw.on('error', () => {});
    this.raw.on('connect', (client) => {
      client.on('error', () => {});
    });
  }

  /** When the store was last found unreachable, while it still is; null when it is up. */
  get unavailableSince(): number | null {
    return this.downSince;
  }

  async connect(): Promise<StoreClient> {
    if (this.downSince !== null) throw new StoreUnavailableError(undefined, this.lastError);
    let raw: pg.PoolClient;
    try {
      raw = await this.raw.connect();
    } catch (err) {
      if (isStoreUnavailable(err)) this.markDown(err);
      throw this.classify(err);
    }
    let client = this.clients.get(raw);
    if (!client) {
      client = new StoreClient(raw, this);
      this.clients.set(raw, client);
    }
    return client;
  }

  /** pg.Pool#query's shape, for the history writer's named statements. */
  async query(config: pg.QueryConfig): Promise<pg.QueryResult> {
    const client = await this.connect();
    try {
      return (await client.query(config)) as pg.QueryResult;
    } finally {
      client.release();
    }
  }

  classify(err: unknown): unknown {
    return classifyStoreError(err);
  }

  async end(): Promise<void> {
    this.closed = true;
    if (this.probeTimer) clearTimeout(this.probeTimer);
    this.probeTimer = null;
    await this.raw.end();
  }

  private markDown(err: unknown): void {
    this.lastError = err;
    if (this.downSince !== null || this.closed) return;
    this.downSince = Date.now();
    this.probeDelay = PROBE_MIN_MS;
    this.logger?.warn({ err }, 'store unavailable: requests that need it answer 503 store_unavailable until a probe reaches it');
    this.scheduleProbe();
  }

  private scheduleProbe(): void {
    if (this.closed || this.probeTimer) return;
    const delay = this.probeDelay;
    this.probeDelay = Math.min(this.probeDelay * 2, PROBE_MAX_MS);
    this.probeTimer = setTimeout(() => {
      this.probeTimer = null;
      void this.probe();
    }, delay);
    this.probeTimer.unref();
  }

  private async probe(): Promise<void> {
    const client = new pg.Client({ ...this.config, connectionTimeoutMillis: PROBE_CONNECT_TIMEOUT_MS });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('select 1');
    } catch (err) {
      this.lastError = err;
      this.scheduleProbe();
      return;
    } finally {
      client.end().catch(() => {});
    }
    if (this.closed || this.downSince === null) return;
    const downMs = Date.now() - this.downSince;
    this.downSince = null;
    this.lastError = null;
    this.logger?.info({ downMs }, 'store available again');
  }
}
