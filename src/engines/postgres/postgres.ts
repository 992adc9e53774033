// PostgreSQL adapter (node-postgres). Owns: the pool and its error listeners, read-only mode,
// statement timeout and cancel, session reset, error classification, value encoding.
//
// Every statement goes through a portal (pg-query-stream's cursor = extended protocol), so
// `SELECT 1; DROP TABLE t` is refused by the server ("cannot insert multiple commands into a
// prepared statement") whatever the parser guard decided, and maxRows is read with a row
// limit rather than by fetching everything.
//
// Past 400 lines on purpose: what is left is the session life cycle (slot, connect, begin,
// release, cancel, classify) every method shares through private state; the pipelined read,
// cursors, catalog queries, privileges, values and errors are already in postgres-*.ts.

import pg from 'pg';
import { ConnectionFailedError, DatabaseBusyError, QueryTimeoutError, type DbqError } from '../../errors.ts';
import {
  DEFAULT_STATEMENT_TIMEOUT_MS,
  type Engine,
  type EngineConfig,
  type ExecuteOptions,
  type ExecuteResult,
  type RowStream,
  type SchemaTable,
  type ObjectSearch,
  type SchemaObject,
  type StreamOptions,
  type TestResult,
} from '../engine.ts';
import { classifyPostgresConnectError, classifyPostgresError, lostWhileRunning, sqlStateOf } from './postgres-errors.ts';
import {
  TEXT_TYPES,
  batchSize,
  closeCursor,
  columnsOf,
  decodeRow,
  openCursor,
  readCursor,
  readRows,
  type Cursor,
  type RawRow,
} from './postgres-cursor.ts';
import { PipelinedStatement, type Step } from './postgres-batch.ts';
import { isBindRefused, parameterCountError } from './postgres-parameters.ts';
import { readCatalogSnapshot, type CatalogSnapshot } from './postgres-catalog.ts';
import { checkFingerprint, type CatalogReference, type CatalogStateQuery } from './postgres-catalog-freshness.ts';
import { Deadline } from '../deadline.ts';
import { closePooledEngine } from '../pool-close.ts';
import { readTables } from './postgres-introspect.ts';
import { searchPostgresObjects } from './postgres-search.ts';
import { readPostgresAccess } from './postgres-privileges.ts';
import type { ReadAccess } from '../engine.ts';
import { PostgresTypes } from './postgres-types.ts';
import type { PgType } from './postgres-values.ts';
import { createRowIterable } from '../row-stream.ts';
import { Slots } from '../slots.ts';
import { SshTunnel } from '../ssh/ssh-tunnel.ts';
import { StatementWatch } from '../statement-watch.ts';
import type { StopSignal } from '../stop.ts';

// Startup parameters, so they are the session's defaults: DISCARD ALL / RESET ALL return to
// them, and the value decoder can rely on the text formats (UTC timestamptz, ISO dates, hex
// bytea, shortest-exact floats). The default statement timeout is one of them, so a read with
// the default needs no SET LOCAL of its own (one statement fewer on the server per request).
const SESSION_OPTIONS =
  '-c TimeZone=UTC -c DateStyle=ISO,MDY -c IntervalStyle=postgres -c bytea_output=hex -c extra_float_digits=1 ' +
  `-c statement_timeout=${DEFAULT_STATEMENT_TIMEOUT_MS}`;

// setseed() state lives in the backend and survives ROLLBACK and DISCARD ALL: a statement that
// seeded the PRNG would make the next request's random() predictable on the same pooled
// backend. Every hand-back reseeds it from pg_strong_random (gen_random_uuid, PostgreSQL 13+),
// never from random() itself, whose sequence the seeder would know.
export const RESEED = "setseed(('x' || substr(gen_random_uuid()::text, 1, 8))::bit(32)::int / 2147483648.0)";

/** DISCARD ALL cannot run inside a transaction block, not even after ROLLBACK in the same
 * simple query; its documented equivalent can, saving a round trip, and takes the reseed. */
const ROLLBACK_AND_DISCARD =
  'ROLLBACK; CLOSE ALL; SET SESSION AUTHORIZATION DEFAULT; RESET ALL; DEALLOCATE ALL; UNLISTEN *; ' +
  `SELECT pg_advisory_unlock_all(), ${RESEED}; DISCARD PLANS; DISCARD TEMP; DISCARD SEQUENCES`;

// The fixed statements of every read, prepared once per connection (named, so the server
// neither parses nor plans them again). A reset (DISCARD ALL, DEALLOCATE ALL) drops them, and
// the engine forgets a connection's prepared state whenever it resets one.
const BEGIN_READ_ONLY: Step = { name: 'dbq_begin_read_only', text: 'BEGIN READ ONLY' };
// Advisory locks and the PRNG seed are session-level and survive ROLLBACK; a user-defined
// function could have set either. Releasing them in the pipeline leaves nothing to reset.
const ROLLBACK: Step = { name: 'dbq_rollback', text: 'ROLLBACK' };
const READ_TEARDOWN: readonly Step[] = [{ name: 'dbq_unlock_reseed', text: `SELECT pg_advisory_unlock_all(), ${RESEED}` }, ROLLBACK];
// For a read the decision found cannot touch either (ExecuteOptions.sessionUntouched): one
// statement fewer for the server to run per request. Only on a connection that has prepared
// every named step already (the first pipeline on a connection sends the full teardown).
const ROLLBACK_ONLY: readonly Step[] = [ROLLBACK];

const BACKSTOP_MS = 250;
const CANCEL_GRACE_MS = 2_000;
const RESET_TIMEOUT_MS = 5_000;
const CATALOG_TIMEOUT_MS = 15_000;

interface Session {
  client: pg.PoolClient;
  watch: StatementWatch;
  /** The statement's own timeout: what is left of the deadline (see statementMs). */
  timeoutMs: number;
  /** The timeout a timeout error names: the request's own. */
  reportMs: number;
  /** Runs after the watch abandoned the connection (a stream ends its iterator here). */
  onAbandon: (() => void) | null;
  /** Set when the statement's own pipeline already rolled back and released advisory locks,
   * so the connection is known clean and needs no reset round trip. */
  clean: boolean;
  /** Reset and return the connection, then free the slot; idempotent. */
  end(): Promise<void>;
  ended: Promise<void>;
  /** end() in the background: the answer does not wait for the session reset, the next
   * request does (the slot is freed only after it). */
  release(): void;
}

interface SessionOptions {
  readOnly: boolean;
  timeoutMs: number;
  signal?: StopSignal;
  /** The request's; else one of timeoutMs from now. The slot, the connect and the statement
   * all end there. */
  deadline?: Deadline;
  /** Answer a timeout at once, leaving the cancel to finish behind (StatementWatch). */
  answerAtTimeout?: boolean;
  /** Appended to the session's BEGIN (not pipelined sessions only). */
  setup?: string;
}

/** The statement's own timeout on the server: what is left of the deadline, or the whole
 * timeout when less than BACKSTOP_MS of it went before the statement (a request's round number
 * keeps the session default usable; the watch answers at the deadline plus BACKSTOP_MS anyway). */
function statementMs(deadline: Deadline): number {
  const left = deadline.remaining();
  return deadline.timeoutMs - left < BACKSTOP_MS ? deadline.timeoutMs : Math.max(1, Math.floor(left));
}

export function createPostgresEngine(config: EngineConfig): Engine {
  return new PostgresEngine(config);
}

class PostgresEngine implements Engine {
  readonly name = 'postgres' as const;
  readonly capabilities = { placeholder: '$n', hasSchemas: true } as const;
  private readonly config: EngineConfig;
  private readonly slots: Slots;
  private readonly types = new PostgresTypes();
  private readonly sessions = new Set<Session>();
  private readonly broken = new WeakSet<pg.ClientBase>();
  /** Connections holding the named read statements (BEGIN_READ_ONLY, READ_TEARDOWN). */
  private readonly prepared = new WeakSet<pg.ClientBase>();
  private pool: pg.Pool | null = null;
  private closing: Promise<void> | null = null;
  /** The bastion every session (and cancel request) goes through; opened on first use. */
  private readonly tunnel: SshTunnel | null;

  constructor(config: EngineConfig) {
    this.config = config;
    this.slots = new Slots(config.maxConnections);
    this.tunnel = config.ssh ? new SshTunnel(config.ssh, config.connectTimeoutMs) : null;
  }

  readCatalogRows(): Promise<CatalogSnapshot> {
    return this.withCatalogSession(readCatalogSnapshot);
  }

  checkCatalogStamp(stamp: CatalogReference): Promise<CatalogReference | null> {
    return this.withCatalogSession((query) => checkFingerprint(query, stamp));
  }

  /** A load or check of the guard's catalog cache: shared by every decision waiting on it, so
   * bound by its own timeout, not by any one request's deadline (each waits for it only until
   * its own). */
  private async withCatalogSession<T>(work: (query: CatalogStateQuery) => Promise<T>): Promise<T> {
    // One snapshot for the whole load or check (the change check's two statements need it). An
    // empty search_path puts pg_catalog first for functions and operators, whatever the login's
    // or database's default (a schema of look-alike operators ahead of pg_catalog would blind
    // the check); the queries are costed high enough to JIT-compile for nothing.
    // Answered at its timeout like a request: a load or check lost to a dead network fails its
    // waiters then (each has given up at its own deadline anyway), and the next one can start.
    const session = await this.open({
      readOnly: true,
      timeoutMs: CATALOG_TIMEOUT_MS,
      answerAtTimeout: true,
      setup: "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ; SET LOCAL search_path = ''; SET LOCAL jit = off",
    });
    try {
      return await session.watch.run(work((text, values) => session.client.query(text, values)));
    } catch (err) {
      throw this.classify(err, session);
    } finally {
      session.release();
    }
  }

  async execute(opts: ExecuteOptions): Promise<ExecuteResult> {
    // Reads go out as one pipeline (postgres-batch.ts): BEGIN READ ONLY, a SET LOCAL
    // statement_timeout unless the session default applies, the statement, the advisory unlock
    // and ROLLBACK in a single round trip. Writes keep a separate SET:
    // in a pipeline they would share an implicit transaction, which VACUUM, CREATE INDEX
    // CONCURRENTLY and friends refuse.
    const deadline = opts.deadline ?? new Deadline(opts.timeoutMs);
    for (let attempt = 1; ; attempt++) {
      const session = await this.open(
        { readOnly: opts.readOnly, timeoutMs: opts.timeoutMs, signal: opts.signal, deadline, answerAtTimeout: true },
        opts.readOnly,
      );
      // Set while the read's pipeline is the one in flight: what it knows decides a re-send.
      let pipeline: PipelinedStatement | null = null;
      try {
        // A cancel that came while the session was being opened found no statement to stop:
        // honour it here, before the statement is sent (the send is synchronous from here).
        if (session.watch.reason) throw session.watch.error();
        let raw: { fields: pg.FieldDef[]; rows: RawRow[]; truncated: boolean; rowCount: number | null };
        if (opts.readOnly) {
          const statement = new PipelinedStatement(
            session.timeoutMs === DEFAULT_STATEMENT_TIMEOUT_MS
              ? [BEGIN_READ_ONLY]
              : [BEGIN_READ_ONLY, `SET LOCAL statement_timeout = ${session.timeoutMs}`],
            opts.sql,
            opts.params,
            opts.maxRows,
            opts.maxBytes,
            opts.sessionUntouched === true && this.prepared.has(session.client) ? ROLLBACK_ONLY : READ_TEARDOWN,
            !this.prepared.has(session.client),
          );
          pipeline = statement;
          // pg returns a submittable itself, not a promise (the cast only picks an overload);
          // its errors reach statement.done through handleError.
          void session.client.query(statement as unknown as pg.QueryConfig);
          raw = await session.watch.run(statement.done);
          pipeline = null;
          // Only a pipeline that ran to its end surely prepared every named step; any other
          // outcome resets the connection, which drops them.
          this.prepared.add(session.client);
          session.clean = true;
        } else {
          raw = await session.watch.run(readRows(session.client, opts));
        }
        const types =
          this.types.known(raw.fields) ??
          (await session.watch.run(this.types.resolve(raw.fields, (text, values) => session.client.query(text, values))));
        if (session.watch.reason) throw session.watch.error();
        const returnsRows = raw.fields.length > 0;
        return {
          columns: columnsOf(raw.fields, types),
          rows: raw.rows.map((row) => decodeRow(row, types)),
          rowCount: raw.rows.length,
          truncated: raw.truncated,
          affectedRows: returnsRows ? null : (raw.rowCount ?? 0),
        };
      } catch (err) {
        if (isBindRefused(err) && !session.watch.reason) throw await this.parameterCountError(session, opts, err);
        const classified = this.classify(err, session);
        if (pipeline && classified instanceof ConnectionFailedError && !session.watch.reason) {
          // A pooled connection the server dropped while idle fails the pipeline before any of
          // it ran: sent once more on a fresh connection. One the server answered had started
          // the statement (it flushes pending replies before its FATAL), and one that died
          // unanswered on a transport error may have run it too (a crash or a failover loses
          // unsent replies): never run twice what a DBA killed, nor give it a second timeout.
          if (attempt === 1 && neverStarted(pipeline, err)) {
            await session.end();
            continue;
          }
          throw lostWhileRunning(err);
        }
        throw classified;
      } finally {
        session.release();
      }
    }
  }

  async stream(opts: StreamOptions): Promise<RowStream> {
    const session = await this.open(opts);
    let cursor: Cursor;
    let first: RawRow[];
    let types: PgType[];
    let fields: pg.FieldDef[];
    try {
      // As in execute(): a cancel during open() must not be lost.
      if (session.watch.reason) throw session.watch.error();
      const open = openCursor(session.client, opts.sql, opts.params);
      cursor = open.cursor;
      first = await session.watch.run(readCursor(cursor, batchSize(opts.maxRows)));
      fields = open.result().fields;
      // The session's connection is busy with the open portal: unknown OIDs are looked up on a
      // short-lived side connection (once per pool per OID).
      types = await session.watch.run(this.types.resolve(fields, (text, values) => this.withSideClient((c) => c.query(text, values))));
    } catch (err) {
      const refused = isBindRefused(err) && !session.watch.reason ? await this.parameterCountError(session, opts, err) : null;
      await session.end();
      throw refused ?? this.classify(err, session);
    }
    const size = batchSize(opts.maxRows);
    let pending: RawRow[] | null = first;
    // One batch is fetched ahead while the consumer works on the current one: without it every
    // batch waits a full round trip plus the server producing it, and a 1M-row export spent
    // half its time idle. At most two batches are held.
    let ahead: Promise<RawRow[]> | null = null;
    const fetchAhead = (previous: RawRow[]) => {
      if (previous.length < size || cursor.state === 'done') return;
      ahead = session.watch.run(readCursor(cursor, size));
      ahead.catch(() => {});
    };
    const { rows, abort } = createRowIterable(
      {
        pull: async () => {
          if (pending) {
            const batch = pending;
            pending = null;
            fetchAhead(batch);
            return batch.length ? batch.map((row) => decodeRow(row, types)) : null;
          }
          if (!ahead) return null;
          try {
            const batch = await ahead;
            ahead = null;
            if (session.watch.reason) throw session.watch.error();
            fetchAhead(batch);
            return batch.length ? batch.map((row) => decodeRow(row, types)) : null;
          } catch (err) {
            throw this.classify(err, session);
          }
        },
        cleanup: async () => {
          // A read still in flight is answered before the portal Close (the protocol is in
          // order); wait for it so close() finds the cursor idle.
          if (ahead) await (ahead as Promise<RawRow[]>).catch(() => {});
          // An abandoned connection would never answer the portal Close.
          if (!session.watch.abandoned) await closeCursor(cursor).catch(() => {});
          await session.end();
        },
      },
      opts.maxRows,
    );
    // A consumer that stops pulling still gets its timeout: the watch abandons the connection,
    // and the stream ends with the timeout error instead of holding the slot forever.
    session.onAbandon = () => abort(session.watch.error());
    return { columns: columnsOf(fields, types), rows };
  }

  async validate(sql: string): Promise<void> {
    const prefix = 'EXPLAIN ';
    const session = await this.open({ readOnly: true, timeoutMs: CATALOG_TIMEOUT_MS });
    try {
      // EXPLAIN plans without running; the read-only transaction and the portal (one
      // statement only) keep `EXPLAIN ANALYZE DELETE …` or a second statement harmless.
      await session.watch.run(readRows(session.client, { sql: prefix + sql, params: [], maxRows: 1000, maxBytes: Infinity }));
    } catch (err) {
      const classified = this.classify(err, session);
      const position = classified.details?.position;
      if (typeof position === 'number' && classified.details) {
        (classified.details as Record<string, unknown>).position = position > prefix.length ? position - prefix.length : null;
      }
      throw classified;
    } finally {
      session.release();
    }
  }

  async test(timeoutMs: number): Promise<TestResult> {
    let client: pg.Client | null = null;
    let timer: NodeJS.Timeout | undefined;
    try {
      client = new pg.Client({ ...this.clientConfig(), connectionTimeoutMillis: timeoutMs });
      const c = client;
      c.on('error', () => {});
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          destroyClient(c);
          reject(new ConnectionFailedError(`timed out after ${timeoutMs} ms`));
        }, timeoutMs);
      });
      const work = (async () => {
        await c.connect();
        const result = await c.query<{ version: string }>('SELECT version() AS version');
        return { serverVersion: shortVersion(result.rows[0]?.version ?? '') };
      })();
      work.catch(() => {});
      return await Promise.race([work, deadline]);
    } catch (err) {
      throw classifyPostgresConnectError(err);
    } finally {
      clearTimeout(timer);
      client?.end().catch(() => {});
    }
  }

  async listTables(schema?: string): Promise<SchemaTable[]> {
    const session = await this.open({ readOnly: true, timeoutMs: CATALOG_TIMEOUT_MS });
    try {
      return await session.watch.run(readTables((text, values) => session.client.query(text, values), schema ?? null));
    } catch (err) {
      throw this.classify(err, session);
    } finally {
      session.release();
    }
  }

  async searchObjects(search: ObjectSearch): Promise<SchemaObject[]> {
    const session = await this.open({ readOnly: true, timeoutMs: CATALOG_TIMEOUT_MS });
    try {
      return await session.watch.run(searchPostgresObjects((text, values) => session.client.query(text, values), search));
    } catch (err) {
      throw this.classify(err, session);
    } finally {
      session.release();
    }
  }

  close(): Promise<void> {
    const pool = this.pool;
    this.closing ??= closePooledEngine(this.slots, this.sessions, pool ? () => pool.end() : null, {
      sessionsMs: CANCEL_GRACE_MS + RESET_TIMEOUT_MS,
      poolMs: RESET_TIMEOUT_MS,
    }).then(() => this.tunnel?.close());
    return this.closing;
  }

  private clientConfig(): pg.ClientConfig {
    const { host, port, database, user, password, ssl, tls } = this.config;
    if (!user) throw new ConnectionFailedError('no user given');
    const tunnel = this.tunnel;
    return {
      ...(tunnel ? { stream: () => tunnel.socket(host || 'localhost', port ?? 5432) } : {}),
      // Every field explicit: node-postgres falls back to PG* environment variables and
      // ~/.pgpass for missing or empty ones, which would hand the operator's credentials to
      // whatever host a connection record names. The password is a function so an empty one
      // stays empty.
      host: host || 'localhost',
      port: port ?? 5432,
      database,
      user,
      password: () => password ?? '',
      // ssl: verify the certificate chain and host name (libpq's verify-full) against the
      // connection's own CA when it has one, else the system CAs; PEM text from the sealed
      // record, never a file path.
      ssl: ssl
        ? {
            rejectUnauthorized: true,
            servername: host && !/^[\d.:]+$/.test(host) ? host : undefined,
            ...(tls?.ca ? { ca: tls.ca } : {}),
            ...(tls?.cert && tls.key ? { cert: tls.cert, key: tls.key } : {}),
          }
        : false,
      sslnegotiation: 'postgres',
      application_name: 'dbq',
      client_encoding: 'UTF8',
      options: SESSION_OPTIONS,
      connectionTimeoutMillis: this.config.connectTimeoutMs,
      keepAlive: true,
      types: TEXT_TYPES,
    };
  }

  private getPool(): pg.Pool {
    if (this.closing) throw new ConnectionFailedError('the connection was closed');
    if (this.pool) return this.pool;
    const pool = new pg.Pool({
      ...this.clientConfig(),
      max: this.config.maxConnections,
      idleTimeoutMillis: 30_000,
      allowExitOnIdle: true,
    });
    // node-postgres re-emits an idle client's socket error on the pool; unlistened, it kills the
    // process (node-postgres #2386, dbhub #422). pg-pool already dropped the client.
    pool.on('error', () => {});
    // A checked-out client has no pool listener at all; mark it so release destroys it.
    pool.on('connect', (client) => {
      client.on('error', () => this.broken.add(client));
    });
    this.pool = pool;
    return pool;
  }

  /** `pipelined`: the caller sends the session set-up itself, in the statement's pipeline. */
  private async open(opts: SessionOptions, pipelined = false): Promise<Session> {
    const deadline = opts.deadline ?? new Deadline(opts.timeoutMs);
    const releaseSlot = await this.acquireSlot(deadline, opts.signal);
    for (let attempt = 1; ; attempt++) {
      const client = await this.connectWithin(deadline, releaseSlot);
      const session = this.startSession(client, opts, deadline);
      if (pipelined) {
        session.ended.then(releaseSlot, releaseSlot);
        return session;
      }
      try {
        // The database enforces the timeout; SET LOCAL dies with the transaction, the session
        // SET is undone by DISCARD ALL on release.
        const begin = opts.readOnly
          ? `BEGIN READ ONLY; SET LOCAL statement_timeout = ${session.timeoutMs}`
          : `SET statement_timeout = ${session.timeoutMs}`;
        await session.watch.run(client.query(opts.setup ? `${begin}; ${opts.setup}` : begin));
        session.ended.then(releaseSlot, releaseSlot);
        return session;
      } catch (err) {
        const classified = this.classify(err, session);
        if (session.watch.reason) {
          // Stopped (its deadline, a cancel): answer now; the connection is settled or
          // abandoned behind, and frees the slot then.
          session.ended.then(releaseSlot, releaseSlot);
          session.release();
          throw classified;
        }
        await session.end();
        // A pooled connection the server dropped while idle, before its error event arrived:
        // nothing has run yet, so one more try on a new connection is safe.
        if (attempt === 1 && classified instanceof ConnectionFailedError) continue;
        releaseSlot();
        throw classified;
      }
    }
  }

  /** A slot, waiting at most until the deadline: a wait the deadline ends answers as the
   * statement timeout would (504), one the pool's own acquire timeout ends as busy (503). */
  private async acquireSlot(deadline: Deadline, signal?: StopSignal): Promise<() => void> {
    const left = deadline.remaining();
    try {
      return await this.slots.acquire(Math.min(this.config.acquireTimeoutMs, left), signal);
    } catch (err) {
      if (err instanceof DatabaseBusyError && left < this.config.acquireTimeoutMs) throw deadline.error();
      throw err;
    }
  }

  /** A pooled connection by the deadline. On failure the slot is released; when the deadline
   * came first, only once the connect under way settles (its connection then goes back to the
   * pool): node-postgres' pool must never hold more connections than there are slots, or it
   * would queue behind our back (slots.ts). */
  private async connectWithin(deadline: Deadline, releaseSlot: () => void): Promise<pg.PoolClient> {
    let connecting: Promise<pg.PoolClient>;
    try {
      connecting = this.getPool().connect();
    } catch (err) {
      releaseSlot();
      throw classifyPostgresConnectError(err);
    }
    let settled = false;
    connecting.then(
      () => (settled = true),
      () => (settled = true),
    );
    try {
      return await deadline.race(connecting);
    } catch (err) {
      if (settled) {
        releaseSlot();
        throw classifyPostgresConnectError(err);
      }
      connecting
        .then(
          (client) => client.release(),
          () => {},
        )
        .finally(releaseSlot);
      throw err;
    }
  }

  private startSession(client: pg.PoolClient, opts: SessionOptions, deadline: Deadline): Session {
    const timeoutMs = statementMs(deadline);
    let finished: () => void = () => {};
    const session: Session = {
      client,
      timeoutMs,
      reportMs: deadline.timeoutMs,
      onAbandon: null,
      clean: false,
      watch: new StatementWatch({
        // The watch ends at the deadline (plus the backstop), whatever the server was told.
        timeoutMs: deadline.remaining(),
        reportMs: deadline.timeoutMs,
        answerAtTimeout: opts.answerAtTimeout,
        backstopMs: BACKSTOP_MS,
        graceMs: CANCEL_GRACE_MS,
        signal: opts.signal,
        cancel: () => this.cancelBackend(backendPid(client)),
        abandon: () => {
          destroyClient(client);
          session.onAbandon?.();
        },
      }),
      ended: new Promise<void>((resolve) => (finished = resolve)),
      release: () => {
        session.end().catch(() => {});
      },
      end: async () => {
        if (!this.sessions.delete(session)) return session.ended;
        await session.watch.finish();
        await this.release(client, session.watch.abandoned, session.clean);
        finished();
      },
    };
    this.sessions.add(session);
    return session;
  }

  /** Hands the client back clean: a failed or read-only transaction is rolled back and the
   * session state (SET, SET ROLE, temp tables, advisory locks, prepared statements, LISTEN) is
   * discarded before anyone else can get it; a client that cannot be reset is destroyed. */
  private async release(client: pg.PoolClient, abandoned: boolean, clean = false): Promise<void> {
    let destroy = abandoned || this.broken.has(client);
    // A read pipeline that completed ended with ROLLBACK + pg_advisory_unlock_all(): inside a
    // READ ONLY transaction nothing else can outlive the rollback (SET reverts, temp tables
    // and holdable cursors cannot be created, LISTEN is transactional).
    if (!destroy && clean && client.getTransactionStatus() === 'I') {
      client.release();
      return;
    }
    // Reset or destroyed from here on: either way the named read statements are gone.
    this.prepared.delete(client);
    if (!destroy) {
      // The DISCARD ALL equivalent in every state: DISCARD ALL itself would leave the seed.
      const reset = ROLLBACK_AND_DISCARD;
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          client.query(reset),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error('session reset timed out')), RESET_TIMEOUT_MS);
          }),
        ]);
      } catch {
        destroy = true;
        destroyClient(client);
      } finally {
        clearTimeout(timer);
      }
    }
    client.release(destroy || this.broken.has(client));
  }

  /** Asked on the failed statement's own connection: the refused Bind left it usable. */
  private parameterCountError(
    session: Session,
    opts: { sql: string; params: readonly unknown[] },
    err: pg.DatabaseError,
  ): Promise<DbqError> {
    return session.watch
      .run(parameterCountError(session.client, opts.sql, opts.params.length, err))
      .catch((e: unknown) => this.classify(e, session));
  }

  private classify(err: unknown, session: Session): DbqError {
    if (session.watch.reason) return session.watch.error();
    if (sqlStateOf(err) === '57014') return new QueryTimeoutError(session.reportMs);
    return classifyPostgresError(err);
  }

  /** pg_cancel_backend from a separate connection: the pool may be exhausted, and the busy
   * connection cannot take another statement until the current one ends. */
  private async cancelBackend(pid: number): Promise<void> {
    // A cancel that cannot connect within the grace is moot: the connection is abandoned then.
    await this.withSideClient(
      (c) => c.query('SELECT pg_cancel_backend($1)', [pid]),
      Math.min(this.config.connectTimeoutMs, CANCEL_GRACE_MS),
    );
  }

  private async withSideClient<T>(work: (client: pg.Client) => Promise<T>, connectTimeoutMs = this.config.connectTimeoutMs): Promise<T> {
    const client = new pg.Client({ ...this.clientConfig(), connectionTimeoutMillis: connectTimeoutMs });
    client.on('error', () => {});
    try {
      await client.connect();
      return await work(client);
    } finally {
      client.end().catch(() => {});
    }
  }

  /** The privilege audit of this engine's login, on a side connection: it takes no pool slot. */
  async readAccess(): Promise<ReadAccess> {
    try {
      return await this.withSideClient((c) => readPostgresAccess(async (text) => (await c.query<Record<string, unknown>>(text)).rows));
    } catch (err) {
      throw classifyPostgresError(err);
    }
  }
}

/** Nothing of the pipeline ran: it never reached an open socket, or the server ended the session
 * (an ErrorResponse, sent after every pending reply) before answering any of it. */
function neverStarted(pipeline: PipelinedStatement, err: unknown): boolean {
  return !pipeline.written || (!pipeline.answered && err instanceof pg.DatabaseError);
}

/** `PostgreSQL 15.20 (Debian 15.20-0+deb12u1) on x86_64-pc-linux-gnu, …` → `PostgreSQL 15.20`. */
function shortVersion(version: string): string {
  const m = /^(\S+) (\d+(?:\.\d+)*\w*)/.exec(version);
  return m ? `${m[1]} ${m[2]}` : version.split(',')[0];
}

function backendPid(client: pg.ClientBase): number {
  return (client as unknown as { processID: number }).processID;
}

/** node-postgres has no public "drop this connection now": end() waits for the server. */
function destroyClient(client: pg.ClientBase): void {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}
