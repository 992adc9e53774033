// The one contract every database adapter implements. Driver imports stop at the adapter
// files beside this one (postgres.ts, mysql.ts, sqlite.ts); everything above talks to `Engine`.
// Engine differences are named as capabilities rather than `if (engine === …)` elsewhere.

import type { Deadline } from './deadline.ts';
import type { MysqlExpressionRow, MysqlViews } from './mysql/mysql-catalog.ts';
import type { CatalogSnapshot } from './postgres/postgres-catalog.ts';
import type { CatalogReference } from './postgres/postgres-catalog-freshness.ts';
import type { StopSignal } from './stop.ts';

export type EngineName = 'postgres' | 'mysql' | 'sqlite';

/** A statement's timeout when the request names none. Adapters may make it the session's own
 * default so the common case needs no per-statement SET. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;
export const ENGINE_NAMES: readonly EngineName[] = ['postgres', 'mysql', 'sqlite'];

/** Validated, decrypted settings an adapter needs to open connections. Built only from
 * validated record fields: no free-form driver `options`, no client key/cert paths, no
 * LOCAL INFILE, whatever the user sent. */
import type { SshSettings } from './ssh/ssh-tunnel.ts';

export interface EngineConfig {
  engine: EngineName;
  host: string | null;
  port: number | null;
  /** Database name; for sqlite the absolute, already-checked file path. */
  database: string;
  user: string | null;
  password: string | null;
  ssl: boolean;
  /** With ssl: PEM text of the CA the server's certificate must chain to (instead of the
   * system's CAs), and a client certificate and key; the host name is checked all the same. */
  tls?: { ca: string | null; cert: string | null; key: string | null } | null;
  /** Pool size cap (concurrent statements on this database). */
  maxConnections: number;
  /** How long a request may wait for a free pooled connection before DatabaseBusyError. */
  acquireTimeoutMs: number;
  /** Bound on establishing a new connection. */
  connectTimeoutMs: number;
  /** Reach host:port through this SSH bastion (ssh-tunnel.ts); postgres and mysql only. */
  ssh?: SshSettings | null;
}

export interface Column {
  name: string;
  /** The engine's own type name: int8, numeric, timestamptz, VARCHAR, INTEGER, … */
  type: string;
}

export interface ExecuteOptions {
  sql: string;
  params: readonly unknown[];
  /** Run inside the engine's read-only mode (BEGIN READ ONLY / START TRANSACTION READ ONLY /
   * query_only + read-only handle). The parser guard decided; this is the backstop. */
  readOnly: boolean;
  /** With readOnly, MySQL/MariaDB: the read decision (src/guard/decide.ts) found an EXPLAIN
   * without ANALYZE of a write that reaches no code. Set only by that decision: without it the
   * statement stays in the read-only transaction, where the server refuses it (error 1792). */
  planOnly?: PlanOnlyRun;
  /** With readOnly, PostgreSQL: the read decision found the statement cannot leave session
   * state that outlives ROLLBACK (advisory locks, the random() seed), so the hand-back is a
   * plain ROLLBACK. Set only by that decision: without it every read is followed by the
   * advisory unlock and the reseed, whatever ran. */
  sessionUntouched?: boolean;
  /** Enforced by the database (statement_timeout, max_execution_time/max_statement_time,
   * process kill for sqlite); on expiry the statement is cancelled on the server and
   * QueryTimeoutError is thrown. */
  timeoutMs: number;
  /** Stop reading after this many rows and report truncated. */
  maxRows: number;
  /** Stop adding rows once the encoded result passes this many bytes (approximate). */
  maxBytes: number;
  /** Aborting cancels the statement on the server and throws QueryCanceledError. */
  signal?: StopSignal;
  /** The request's deadline (its start + timeoutMs, src/engines/deadline.ts). PostgreSQL: the
   * pool slot, the connect and the cancel wait at most until then, and the statement gets what
   * is left; default: timeoutMs from the call. */
  deadline?: Deadline;
}

/** How a plan-only EXPLAIN of a write runs: in an ordinary transaction that is always rolled
 * back (the server refuses it inside a read-only one), on whichever login reads use. */
export interface PlanOnlyRun {
  /** The server checks the explained write's privileges (errno 1142, 1143): such a refusal is
   * answered 403 with this reason. */
  privilegeRefusal: string;
}

export interface ExecuteResult {
  columns: Column[];
  /** Rows as arrays, already encoded to JSON-safe values per the contract's table. */
  rows: unknown[][];
  rowCount: number;
  truncated: boolean;
  /** Rows changed by a write; null for statements that return rows. */
  affectedRows: number | null;
}

export interface StreamOptions extends Omit<ExecuteOptions, 'maxRows' | 'maxBytes'> {
  maxRows: number;
}

/** A cursor-backed result for exports: rows are pulled, never all held in memory. */
export interface RowStream {
  columns: Column[];
  /** Iterate to the end, or stop early with `break` / `return()`: the pooled connection is
   * held until then. `timeoutMs` bounds the whole stream; a consumer that stalls past it gets
   * QueryTimeoutError from its next read and the connection is freed. */
  rows: AsyncIterable<unknown[]>;
}

export interface TestResult {
  serverVersion: string;
}

/** What the credential an engine logs in with can do beyond reading (POST /connections/test,
 * connection records). `read_only`: nothing found; `can_write`: each finding says what else;
 * `superuser`: everything, the findings say so. */
export type ReadAccessLevel = 'read_only' | 'can_write' | 'superuser';
export interface ReadAccess {
  level: ReadAccessLevel;
  /** Short sentences, one per privilege beyond reading; empty when read_only. */
  findings: string[];
}

export interface SchemaColumn {
  name: string;
  type: string;
  nullable: boolean;
  primaryKey: boolean;
  /** The database's own comment (COMMENT ON / MySQL COMMENT), when it has one; an admin's
   * annotation replaces it (src/annotations). */
  description?: string;
  /** Other words people use for it; annotations only. */
  synonyms?: string[];
}

export interface ForeignKey {
  columns: string[];
  refTable: string;
  refSchema: string | null;
  refColumns: string[];
}

export interface SchemaTable {
  schema: string | null;
  name: string;
  kind: 'table' | 'view';
  columns: SchemaColumn[];
  foreignKeys: ForeignKey[];
  /** As on SchemaColumn: the database's comment, or the annotation that replaces it. */
  description?: string;
  synonyms?: string[];
}

export type SchemaObjectKind = 'table' | 'view' | 'column' | 'index' | 'function';

/** search_objects / GET /connections/{id}/objects: which catalog objects to look for.
 * `like` is a lower-case LIKE pattern with `!` as its escape character, bound as a parameter. */
export interface ObjectSearch {
  kind: SchemaObjectKind;
  like: string;
}

/** One catalog object found by searchObjects. `table` names the owner of a column or index;
 * the other fields are filled where they mean something for the kind. */
export interface SchemaObject {
  kind: SchemaObjectKind;
  schema: string | null;
  name: string;
  table?: string;
  /** Tables and views: how many columns. */
  columnCount?: number;
  /** Columns: the engine's type spelling; functions: what they return. */
  type?: string;
  nullable?: boolean;
  primaryKey?: boolean;
  /** Indexes. */
  columns?: string[];
  unique?: boolean;
  /** Functions: the argument list as the engine prints it; and function/procedure/aggregate. */
  arguments?: string;
  routineType?: string;
}

/** An engine's own word on a statement, from compiling it without running it. */
export interface StatementInfo {
  /** True when the engine knows it only reads; false when it knows it writes; null when it
   * cannot tell (MySQL prepares writes as readily as reads). */
  readOnly: boolean | null;
}

export interface Capabilities {
  /** Parameter placeholder style the driver expects. */
  placeholder: '$n' | '?';
  /** Schemas are meaningful (postgres); mysql treats a "schema" as a database. */
  hasSchemas: boolean;
}

export interface Engine {
  readonly name: EngineName;
  readonly capabilities: Capabilities;
  execute(opts: ExecuteOptions): Promise<ExecuteResult>;
  /** Cursor-backed streaming for exports: rows are pulled, never all held in memory. */
  stream?(opts: StreamOptions): Promise<RowStream>;
  /** Plan the statement without running it (EXPLAIN / prepare); throws QueryFailedError. */
  validate(sql: string): Promise<void>;
  /** Open a fresh connection (not from the pool), ask the server version, close. */
  test(timeoutMs: number): Promise<TestResult>;
  listTables(schema?: string): Promise<SchemaTable[]>;
  /** Catalog objects of one kind whose name matches, in every non-system schema (read-only). */
  searchObjects(search: ObjectSearch): Promise<SchemaObject[]>;
  /** PostgreSQL: the catalog rows the read allowlist is judged from, with the change stamp
   * read before them, in one read-only REPEATABLE READ transaction of this login
   * (postgres-catalog.ts). The guard judges and caches them (src/guard/postgres-catalog-cache.ts). */
  readCatalogRows?(): Promise<CatalogSnapshot>;
  /** PostgreSQL: null when the catalog may have changed since `stamp`, else the newer stamp
   * (postgres-catalog-freshness.ts). */
  checkCatalogStamp?(stamp: CatalogReference): Promise<CatalogReference | null>;
  /** MySQL: which of these called names would run a stored or loadable function. */
  findStoredFunctions?(names: readonly string[]): Promise<string[]>;
  /** MySQL: the definitions of every view this login can see, and its default database. */
  readViews?(): Promise<MysqlViews>;
  /** MySQL: the defaults and generated columns of every table named like one of `tableNames`. */
  readColumnExpressions?(tableNames: readonly string[]): Promise<MysqlExpressionRow[]>;
  /** Compile the statement without running it (SQLite prepare, MySQL PREPARE in a read-only
   * transaction); throws QueryFailedError when the engine cannot compile it. */
  inspect?(sql: string): Promise<StatementInfo>;
  /** Audit the credential on a fresh connection (not from the pool): what it can do beyond
   * reading (src/engines/postgres/postgres-privileges.ts, mysql-privileges.ts). */
  readAccess?(): Promise<ReadAccess>;
  /** Close the pool; in-flight statements are cancelled. */
  close(): Promise<void>;
}

export type EngineFactory = (config: EngineConfig) => Engine;
