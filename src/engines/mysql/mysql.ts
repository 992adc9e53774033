// MySQL / MariaDB adapter (mysql2, callback API). Owns: the pool and its error listeners,
// read-only mode, statement timeout and KILL QUERY, session reset (COM_RESET_CONNECTION),
// error classification by errno, value encoding.
//
// Statements without parameters use the text protocol; with parameters, a server-side
// prepared statement (COM_STMT_PREPARE/EXECUTE), so values are bound by the server rather
// than spliced into the text by a client-side formatter. Either way multipleStatements is
// off: `SELECT 1; DROP TABLE t` is a syntax error at the server.
//
// Past 400 lines on purpose: what is left is the session life cycle (open, begin, release,
// kill, classify) every method shares through private state; statements, streams, catalog
// queries, privileges and errors are already in mysql-*.ts.

import { isIP } from 'node:net';
import mysql from 'mysql2';
import type { PoolConnection, PoolOptions } from 'mysql2';
import { ConnectionFailedError, DbqError, InsufficientPermissionsError, QueryTimeoutError } from '../../errors.ts';
import type {
  Engine,
  EngineConfig,
  ExecuteOptions,
  ExecuteResult,
  RowStream,
  ObjectSearch,
  SchemaObject,
  SchemaTable,
  StatementInfo,
  StreamOptions,
  TestResult,
} from '../engine.ts';
import { STATEMENT_TIMEOUT_ERRNOS, classifyMysqlConnectError, classifyMysqlError, errnoOf } from './mysql-errors.ts';
import { readExpressionRows, readViewRows, type MysqlCatalogQuery, type MysqlExpressionRow, type MysqlViews } from './mysql-catalog.ts';
import { COLUMNS_SQL, FOREIGN_KEYS_SQL, TABLES_SQL, assembleTables } from './mysql-introspect.ts';
import { searchMysqlObjects } from './mysql-search.ts';
import { checkParameterCount, execute, query, runStatement } from './mysql-statement.ts';
import { readMysqlAccess } from './mysql-privileges.ts';
import { SshTunnel } from '../ssh/ssh-tunnel.ts';
import type { ReadAccess } from '../engine.ts';
import { openStatementStream } from './mysql-stream.ts';
import { closePooledEngine } from '../pool-close.ts';
import { Slots } from '../slots.ts';
import { StatementWatch } from '../statement-watch.ts';
import type { StopSignal } from '../stop.ts';

const BACKSTOP_MS = 250;
const CANCEL_GRACE_MS = 2_000;
const RESET_TIMEOUT_MS = 5_000;
const CATALOG_TIMEOUT_MS = 15_000;

type Flavour = 'mariadb' | 'mysql';

/** "Cannot execute statement in a READ ONLY transaction." */
const ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION = 1792;
/** "INSERT/UPDATE/DELETE command denied to user …" (table, column): EXPLAIN of a write is
 * checked for the write's privileges. */
const PLAN_PRIVILEGE_ERRNOS: ReadonlySet<number> = new Set([1142, 1143]);

export interface MysqlSession {
  conn: PoolConnection;
  watch: StatementWatch;
  timeoutMs: number;
  /** A plan-only EXPLAIN of a write in a rolled-back transaction (SessionOptions.rollback): a
   * write-privilege refusal is answered 403 with this reason. */
  planPrivilegeRefusal: string | null;
  /** Runs after the watch abandoned the connection (a stream ends its iterator here). */
  onAbandon: (() => void) | null;
  ended: Promise<void>;
  /** end() in the background: the answer does not wait for the session reset, the next
   * request does (the slot is freed only after it). */
  release(): void;
  /** Kill the running statement (a truncated result); awaited before the connection is reused. */
  kill(): void;
  /** Destroy the connection on end instead of resetting it. */
  discard(): void;
  end(): Promise<void>;
}

interface SessionOptions {
  readOnly: boolean;
  /** A plan-only EXPLAIN of a write: START TRANSACTION (not read-only), always rolled back. */
  rollback?: boolean;
  /** With rollback: the reason a write-privilege refusal (1142, 1143) is answered with. */
  planPrivilegeRefusal?: string;
  timeoutMs: number;
  signal?: StopSignal;
}

/** A read runs in a read-only session, except a plan-only EXPLAIN of a write the read decision
 * let through (opts.planOnly), which runs in a rolled-back transaction on whichever login reads
 * use: never the owner's when the connection has reader credentials (the pool registry picked
 * this engine). The rollback cannot undo a MyISAM/Aria/MEMORY write or a sequence step, and
 * MariaDB runs subqueries, derived tables and views while planning; so src/guard/decide.ts
 * lets the plan leave the read-only transaction only when nothing it reaches can run code.
 * Without its word the plan stays there, where the server refuses it (1792). */
function sessionOptions(opts: ExecuteOptions | StreamOptions): SessionOptions {
  if (!opts.readOnly || opts.planOnly === undefined) return opts;
  return { ...opts, readOnly: false, rollback: true, planPrivilegeRefusal: opts.planOnly.privilegeRefusal };
}

export function createMysqlEngine(config: EngineConfig): Engine {
  return new MysqlEngine(config);
}

class MysqlEngine implements Engine {
  readonly name = 'mysql' as const;
  readonly capabilities = { placeholder: '?', hasSchemas: false } as const;
  private readonly config: EngineConfig;
  private readonly slots: Slots;
  private readonly sessions = new Set<MysqlSession>();
  private readonly broken = new WeakSet<PoolConnection>();
  private pool: mysql.Pool | null = null;
  private flavour: Flavour | null = null;
  private natives: Promise<ReadonlySet<string>> | null = null;
  private closing: Promise<void> | null = null;
  /** The bastion every session (and KILL side connection) goes through; opened on first use. */
  private readonly tunnel: SshTunnel | null;

  constructor(config: EngineConfig) {
    this.config = config;
    this.slots = new Slots(config.maxConnections);
    this.tunnel = config.ssh ? new SshTunnel(config.ssh, config.connectTimeoutMs) : null;
  }

  async execute(opts: ExecuteOptions): Promise<ExecuteResult> {
    const session = await this.open(sessionOptions(opts));
    try {
      // A cancel that came while the session was being opened found no statement to stop:
      // honour it here, before the statement is sent (the send is synchronous from here).
      if (session.watch.reason) throw session.watch.error();
      if (opts.params.length > 0) await session.watch.run(checkParameterCount(session.conn, opts.sql, opts.params.length));
      if (session.watch.reason) throw session.watch.error();
      const result = await session.watch.run(runStatement(session, opts));
      if (session.watch.reason) throw session.watch.error();
      return result;
    } catch (err) {
      throw this.classify(err, session);
    } finally {
      session.release();
    }
  }

  async stream(opts: StreamOptions): Promise<RowStream> {
    const session = await this.open(sessionOptions(opts));
    try {
      // As in execute(): a cancel during open() must not be lost.
      if (session.watch.reason) throw session.watch.error();
      if (opts.params.length > 0) await session.watch.run(checkParameterCount(session.conn, opts.sql, opts.params.length));
      return await openStatementStream(session, opts, (err) => this.classify(err, session));
    } catch (err) {
      await session.end();
      throw this.classify(err, session);
    }
  }

  /** The views this login can see: what its reads can reach (src/guard/mysql-view-cache.ts). */
  async readViews(): Promise<MysqlViews> {
    return { database: this.config.database || null, views: await this.catalogQuery(readViewRows) };
  }

  async readColumnExpressions(tableNames: readonly string[]): Promise<MysqlExpressionRow[]> {
    return this.catalogQuery((query) => readExpressionRows(query, tableNames, this.flavour === 'mariadb'));
  }

  /** Catalog queries on a read-only session of this engine's login: what that login can see is
   * what its reads can reach. */
  private async catalogQuery<T>(work: (query: MysqlCatalogQuery) => Promise<T>): Promise<T> {
    const session = await this.open({ readOnly: true, timeoutMs: CATALOG_TIMEOUT_MS });
    try {
      return await work((sql, params) => session.watch.run(execute(session.conn, sql, params)));
    } catch (err) {
      throw this.classify(err, session);
    } finally {
      session.release();
    }
  }

  /** COM_STMT_PREPARE inside START TRANSACTION READ ONLY: MariaDB refuses even to prepare a
   * write there (ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION), so a statement that prepares is
   * one it will run as a read; MySQL prepares writes too, so a success there says nothing. */
  async inspect(sql: string): Promise<StatementInfo> {
    try {
      await this.prepareOnly(sql, true);
      return { readOnly: this.flavour === 'mariadb' ? true : null };
    } catch (err) {
      if (err instanceof DbqError && errnoOf(err.cause) === ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION) return { readOnly: false };
      throw err;
    }
  }

  async validate(sql: string): Promise<void> {
    // Not in a read-only session: MariaDB refuses even to prepare a write there, and a valid
    // INSERT must validate.
    await this.prepareOnly(sql, false);
  }

  /** COM_STMT_PREPARE parses and resolves names without running anything (EXPLAIN covers only
   * SELECT/DML) and accepts exactly one statement. */
  private async prepareOnly(sql: string, readOnly: boolean): Promise<void> {
    const session = await this.open({ readOnly, timeoutMs: CATALOG_TIMEOUT_MS });
    try {
      await session.watch.run(
        new Promise<void>((resolve, reject) =>
          session.conn.prepare(sql, (err, statement) => {
            if (err) return reject(err);
            statement.close();
            resolve();
          }),
        ),
      );
    } catch (err) {
      throw this.classify(err, session);
    } finally {
      session.release();
    }
  }

  async test(timeoutMs: number): Promise<TestResult> {
    let conn: mysql.Connection | null = null;
    let timer: NodeJS.Timeout | undefined;
    try {
      conn = mysql.createConnection({ ...this.connectionOptions(), connectTimeout: timeoutMs });
      const c = conn;
      c.on('error', () => {});
      const work = query(c, 'SELECT VERSION()').then((rows) => ({ serverVersion: shortVersion(String((rows as unknown[][])[0][0])) }));
      work.catch(() => {});
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          c.destroy();
          reject(new ConnectionFailedError(`timed out after ${timeoutMs} ms`));
        }, timeoutMs);
      });
      return await Promise.race([work, deadline]);
    } catch (err) {
      throw classifyMysqlConnectError(err);
    } finally {
      clearTimeout(timer);
      conn?.end(() => {});
    }
  }

  /** Which of `names` (called in a read, lower-case) would run a stored or loadable function
   * here rather than a built-in. Asked per statement, in the server's own collation:
   * routine names compare accent-insensitively (`bín_to_uuid` answers `bin_to_uuid(…)`), and
   * a function created a moment ago counts at once. Names native to the server are skipped:
   * a built-in always wins over a stored function of the same name. */
  async findStoredFunctions(names: readonly string[]): Promise<string[]> {
    const natives = await this.nativeFunctionNames();
    const candidates = names.filter((name) => !natives.has(name));
    if (candidates.length === 0) return [];
    const marks = candidates.map(() => '?').join(', ');
    const session = await this.open({ readOnly: true, timeoutMs: CATALOG_TIMEOUT_MS });
    try {
      const found = new Set<string>();
      const routines = await session.watch.run(
        execute(
          session.conn,
          `SELECT LOWER(ROUTINE_NAME) FROM information_schema.ROUTINES WHERE ROUTINE_TYPE = 'FUNCTION' AND ROUTINE_NAME IN (${marks})`,
          candidates,
        ),
      );
      for (const row of routines) found.add(String(row[0]));
      // Loadable functions (CREATE FUNCTION … SONAME) are global; mysql.func is readable only
      // with privileges on the mysql schema, so a reader login may not see them.
      const loadable = await session.watch
        .run(execute(session.conn, `SELECT LOWER(name) FROM mysql.func WHERE name IN (${marks})`, candidates))
        .catch(() => []);
      for (const row of loadable) found.add(String(row[0]));
      return [...found];
    } catch (err) {
      throw this.classify(err, session);
    } finally {
      session.release();
    }
  }

  /** MariaDB lists its native functions (information_schema.SQL_FUNCTIONS); MySQL does not, and
   * there every called name is asked about. Read once per engine. */
  private nativeFunctionNames(): Promise<ReadonlySet<string>> {
    this.natives ??= (async () => {
      const session = await this.open({ readOnly: true, timeoutMs: CATALOG_TIMEOUT_MS });
      try {
        const rows = await session.watch
          .run(execute(session.conn, 'SELECT LOWER(FUNCTION) FROM information_schema.SQL_FUNCTIONS', []))
          .catch(() => []);
        return new Set(rows.map((row) => String(row[0])));
      } finally {
        session.release();
      }
    })().catch((err: unknown) => {
      this.natives = null;
      throw err;
    });
    return this.natives;
  }

  async listTables(schema?: string): Promise<SchemaTable[]> {
    const session = await this.open({ readOnly: true, timeoutMs: CATALOG_TIMEOUT_MS });
    try {
      const run = (sql: string) => session.watch.run(execute(session.conn, sql, [schema ?? null]));
      const tables = await run(TABLES_SQL);
      const columns = await run(COLUMNS_SQL);
      const keys = await run(FOREIGN_KEYS_SQL);
      return assembleTables(tables, columns, keys);
    } catch (err) {
      throw this.classify(err, session);
    } finally {
      session.release();
    }
  }

  async searchObjects(search: ObjectSearch): Promise<SchemaObject[]> {
    const session = await this.open({ readOnly: true, timeoutMs: CATALOG_TIMEOUT_MS });
    try {
      return await searchMysqlObjects((sql, params) => session.watch.run(execute(session.conn, sql, params)), search);
    } catch (err) {
      throw this.classify(err, session);
    } finally {
      session.release();
    }
  }

  close(): Promise<void> {
    const pool = this.pool;
    const endPool = pool ? () => new Promise<void>((resolve) => pool.end(() => resolve())) : null;
    this.closing ??= closePooledEngine(this.slots, this.sessions, endPool, {
      sessionsMs: CANCEL_GRACE_MS + RESET_TIMEOUT_MS,
      poolMs: RESET_TIMEOUT_MS,
    }).then(() => this.tunnel?.close());
    return this.closing;
  }

  private connectionOptions(): PoolOptions {
    const { host, port, database, user, password, ssl, tls } = this.config;
    // mysql2 checks a certificate's host name only for a name: dialling an IP address it checks
    // nothing (Node falls back to matching "localhost"), so verify-full cannot hold. Refused
    // rather than accepted unchecked.
    if (ssl && host && isIP(host)) {
      throw new ConnectionFailedError(
        `TLS to MySQL needs the host name its certificate is issued for, not the address ${host}: the driver cannot check a certificate against an IP address`,
      );
    }
    const tunnel = this.tunnel;
    return {
      ...(tunnel ? { stream: () => tunnel.socket(host || 'localhost', port ?? 3306) } : {}),
      host: host || 'localhost',
      port: port ?? 3306,
      user: user ?? '',
      password: password ?? '',
      database,
      // ssl: verify the chain and host name (VERIFY_IDENTITY) against the connection's own CA
      // when it has one, else the system CAs; PEM text from the sealed record, never a path.
      // mysql2 checks the host name only when told to (verifyIdentity): without it any
      // certificate from a trusted CA was accepted for any host, which a private CA shared by
      // several servers (or any public CA) turns into a way to stand in for the database.
      ssl: ssl
        ? {
            rejectUnauthorized: true,
            verifyIdentity: true,
            minVersion: 'TLSv1.2',
            ...(tls?.ca ? { ca: tls.ca } : {}),
            ...(tls?.cert && tls.key ? { cert: tls.cert, key: tls.key } : {}),
          }
        : undefined,
      connectTimeout: this.config.connectTimeoutMs,
      charset: 'UTF8MB4_UNICODE_CI',
      multipleStatements: false,
      // No LOAD DATA LOCAL INFILE: a hostile server could otherwise ask for any local file.
      flags: ['-LOCAL_FILES'],
      infileStreamFactory: undefined,
      supportBigNumbers: true,
      bigNumberStrings: true,
      decimalNumbers: false,
      dateStrings: true,
      rowsAsArray: true,
      enableKeepAlive: true,
    };
  }

  private getPool(): mysql.Pool {
    if (this.closing) throw new ConnectionFailedError('the connection was closed');
    if (this.pool) return this.pool;
    const pool = mysql.createPool({
      ...this.connectionOptions(),
      connectionLimit: this.config.maxConnections,
      maxIdle: this.config.maxConnections,
      idleTimeout: 30_000,
      waitForConnections: true,
      queueLimit: 0,
    });
    // mysql2's PoolConnection listens with once('error'): a second error on a dropped idle
    // connection would be unhandled and end the process. Listen for good, and mark the
    // connection so it is destroyed rather than reused.
    pool.on('error', () => {});
    pool.on('connection', (conn) => {
      conn.on('error', () => this.broken.add(conn));
    });
    this.pool = pool;
    return pool;
  }

  private async open(opts: SessionOptions): Promise<MysqlSession> {
    const releaseSlot = await this.slots.acquire(this.config.acquireTimeoutMs, opts.signal);
    for (let attempt = 1; ; attempt++) {
      let conn: PoolConnection;
      try {
        conn = await new Promise<PoolConnection>((resolve, reject) =>
          this.getPool().getConnection((err, c) => (err ? reject(err) : resolve(c))),
        );
      } catch (err) {
        releaseSlot();
        throw classifyMysqlConnectError(err);
      }
      const session = this.startSession(conn, opts);
      try {
        await session.watch.run(this.beginSession(conn, session.timeoutMs, opts));
        session.ended.then(releaseSlot, releaseSlot);
        return session;
      } catch (err) {
        await session.end();
        const classified = this.classify(err, session);
        // A pooled connection the server dropped while idle, before its error event arrived:
        // nothing has run yet, so one more try on a new connection is safe.
        if (attempt === 1 && classified instanceof ConnectionFailedError && !session.watch.reason) continue;
        releaseSlot();
        throw classified;
      }
    }
  }

  private startSession(conn: PoolConnection, opts: SessionOptions): MysqlSession {
    const timeoutMs = Math.max(1, Math.floor(opts.timeoutMs));
    let pendingKill: Promise<void> = Promise.resolve();
    let discarded = false;
    let finished: () => void = () => {};
    const session: MysqlSession = {
      conn,
      timeoutMs,
      onAbandon: null,
      watch: new StatementWatch({
        timeoutMs,
        backstopMs: BACKSTOP_MS,
        graceMs: CANCEL_GRACE_MS,
        signal: opts.signal,
        cancel: () => this.killQuery(conn.threadId),
        abandon: () => {
          conn.destroy();
          session.onAbandon?.();
        },
      }),
      planPrivilegeRefusal: opts.rollback === true ? (opts.planPrivilegeRefusal ?? null) : null,
      ended: new Promise<void>((resolve) => (finished = resolve)),
      release: () => {
        session.end().catch(() => {});
      },
      kill: () => {
        pendingKill = this.killQuery(conn.threadId).catch(() => {});
      },
      discard: () => {
        discarded = true;
        conn.destroy();
      },
      end: async () => {
        if (!this.sessions.delete(session)) return session.ended;
        await session.watch.finish();
        await pendingKill;
        await this.release(conn, opts.readOnly || opts.rollback === true, session.watch.abandoned || discarded);
        finished();
      },
    };
    this.sessions.add(session);
    return session;
  }

  private async beginSession(conn: PoolConnection, timeoutMs: number, opts: SessionOptions): Promise<void> {
    const { readOnly } = opts;
    if (!this.flavour) {
      const rows = (await query(conn, 'SELECT VERSION()')) as unknown[][];
      this.flavour = /mariadb/i.test(String(rows[0][0])) ? 'mariadb' : 'mysql';
    }
    // One SET for the session: UTC for TIMESTAMP, the server-side timeout (MariaDB:
    // max_statement_time in seconds, any statement; MySQL: max_execution_time in ms, SELECT
    // only, the KILL QUERY backstop covers the rest) and, for reads, a read-only session:
    // START TRANSACTION READ ONLY alone lets DDL through on MariaDB, whose implicit commit
    // ends the read-only transaction before the DDL runs.
    const mariadb = this.flavour === 'mariadb';
    const parts = ['NAMES utf8mb4 COLLATE utf8mb4_unicode_ci', "time_zone = '+00:00'"];
    parts.push(mariadb ? `SESSION max_statement_time = ${(timeoutMs / 1000).toFixed(3)}` : `SESSION max_execution_time = ${timeoutMs}`);
    if (readOnly) parts.push(mariadb ? 'SESSION tx_read_only = 1' : 'SESSION transaction_read_only = 1');
    await query(conn, `SET ${parts.join(', ')}`);
    if (readOnly) await query(conn, 'START TRANSACTION READ ONLY');
    // A plan-only EXPLAIN of a write: MariaDB refuses it in a read-only transaction (1792).
    // The guard decided it only plans; this transaction is rolled back whatever happens
    // (release), and never committed.
    else if (opts.rollback) await query(conn, 'START TRANSACTION');
  }

  /** Rolls back a read-only (or plan-only) transaction and resets the session (COM_RESET_CONNECTION: user
   * variables, SET SESSION, temporary tables, GET_LOCK locks, prepared statements, open
   * transactions) before the connection is reused; a connection that cannot be reset is
   * destroyed. */
  private async release(conn: PoolConnection, readOnly: boolean, abandoned: boolean): Promise<void> {
    let destroy = abandoned || this.broken.has(conn);
    if (!destroy) {
      let timer: NodeJS.Timeout | undefined;
      try {
        const rollback = readOnly ? query(conn, 'ROLLBACK') : Promise.resolve();
        const reset = new Promise<void>((resolve, reject) => conn.reset((err) => (err ? reject(err) : resolve())));
        rollback.catch(() => {});
        reset.catch(() => {});
        await Promise.race([
          Promise.all([rollback, reset]),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error('session reset timed out')), RESET_TIMEOUT_MS);
          }),
        ]);
      } catch {
        destroy = true;
      } finally {
        clearTimeout(timer);
      }
    }
    if (destroy || this.broken.has(conn)) conn.destroy();
    else conn.release();
  }

  private classify(err: unknown, session: MysqlSession): DbqError {
    if (session.watch.reason) return session.watch.error();
    const errno = errnoOf(err);
    if (errno !== null && STATEMENT_TIMEOUT_ERRNOS.has(errno)) return new QueryTimeoutError(session.timeoutMs);
    if (errno !== null && session.planPrivilegeRefusal !== null && PLAN_PRIVILEGE_ERRNOS.has(errno)) {
      return new InsufficientPermissionsError({ reason: session.planPrivilegeRefusal, statementType: 'EXPLAIN', errno });
    }
    return classifyMysqlError(err);
  }

  /** KILL QUERY from a separate connection: the pool may be exhausted, and the busy
   * connection cannot take another command until the current one ends. */
  private killQuery(threadId: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const side = mysql.createConnection(this.connectionOptions());
      side.on('error', () => {});
      side.query(`KILL QUERY ${Math.floor(Number(threadId))}`, (err) => {
        side.end(() => {});
        if (err) reject(err);
        else resolve();
      });
    });
  }

  /** The privilege audit of this engine's account, on a side connection: it takes no pool slot. */
  async readAccess(): Promise<ReadAccess> {
    const conn = mysql.createConnection(this.connectionOptions());
    conn.on('error', () => {});
    try {
      return await readMysqlAccess(async (whom) =>
        ((await query(conn, `SHOW GRANTS FOR ${whom}`)) as unknown[][]).map((row) => String(row[0])),
      );
    } catch (err) {
      throw classifyMysqlError(err);
    } finally {
      conn.end(() => {});
    }
  }
}

/** `10.11.19-MariaDB-0+deb12u1` → `MariaDB 10.11.19`; `8.0.36` → `MySQL 8.0.36`. */
function shortVersion(version: string): string {
  const number = /^\d+(?:\.\d+)*/.exec(version)?.[0] ?? version;
  return `${/mariadb/i.test(version) ? 'MariaDB' : 'MySQL'} ${number}`;
}
