// What the read-only guard decides about one request's SQL text. Pure data: the guard
// modules (guard-postgres.ts, guard-mysql.ts, guard-sqlite.ts) never do I/O. What needs the
// connection (PostgreSQL's catalog, an engine's own compiler) is src/guard/decide.ts's job.

export type VerdictKind =
  /** A single read statement: may run for any key, always inside the engine's read-only mode. */
  | 'read'
  /** A single statement that is not a read (or could not be proven one): admins only. */
  | 'write'
  /** Never runs for anyone: more than one statement, empty text. */
  | 'rejected'
  /** Not valid SQL for the engine: answered 422 with the syntax error, for every role. */
  | 'invalid';

/** Why a statement is not a read, for code that acts on it; `reason` says it in words, and
 * callers never match those words. */
export type RefusalKind =
  /** rejected: more than one statement. */
  | 'multiple_statements'
  /** rejected: no statement (empty text or only comments). */
  | 'empty_statement'
  /** rejected: a NUL character (an engine would see other text than the guard). */
  | 'nul_character'
  /** rejected: SQLite ATTACH, DETACH, VACUUM INTO (another file than the connection's). */
  | 'other_files'
  /** invalid: the engine cannot compile it. */
  | 'syntax'
  /** write: the parser could not read it as a read (or not within its deadline). */
  | 'unparseable'
  /** write: a statement or construct that is not a read. */
  | 'not_a_read'
  /** write: a read reaching a function, operator, type, relation, view or column not known to
   * be free of side effects (`details` names it). */
  | 'refused_name'
  /** write: MySQL/MariaDB plan-only EXPLAIN of a write that reaches code. */
  | 'plan_reach'
  /** write: MySQL/MariaDB plan-only EXPLAIN of a write where reads log in as a read-only
   * user (the server checks the write's privileges); `reason` is the one to answer with. */
  | 'plan_login';

/** Names a PostgreSQL read refers to that only the connection's catalog can judge: the
 * allowlist is decided per connection from pg_proc, pg_operator, pg_cast and pg_depend. */
export interface PostgresReferences {
  /** Called functions as written: `name` or `schema.name` (identifier case as PostgreSQL folds it). */
  functions: readonly string[];
  /** Field names in `(expr).name` and `alias.name`: calls when `name` is a function of one argument. */
  attributes: readonly string[];
  /** Operator names (`+`, `@@`, `schema.~~`): each runs its pg_operator.oprcode function. */
  operators: readonly string[];
  /** Target types of explicit casts of an expression: a cast function into it may run. */
  types: readonly string[];
  /** Target types of explicit casts of a literal (`'x'::t`, `NULL::t`): only the type's input
   * function and a domain's checks run. */
  literalTypes: readonly string[];
  /** Relations read: a view runs its query, a table its row-level security policies. */
  relations: readonly string[];
  /** Functions and operators called with untyped arguments alone (`'a' = 'b'`, `f($1)`, `f()`):
   * PostgreSQL may resolve those to an overload of any argument types. */
  untypedCalls?: readonly string[];
  /** A plan-only write's target: planning it folds its defaults and plans its rules. */
  writeTargets?: readonly string[];
}

/** A name a MySQL/MariaDB statement could read as a relation: every word and quoted identifier
 * of its text, with the word before a `.` when there is one. */
export interface MysqlName {
  name: string;
  qualifier?: string;
}

export interface Verdict {
  kind: VerdictKind;
  /** Upper-case statement keyword for history/results: SELECT, INSERT, SHOW, EXPLAIN, … ;
   * UNKNOWN when the text did not parse. */
  statementType: string;
  /** Why a statement is not a read / was rejected / is invalid; shown in 403/400/422. */
  reason?: string;
  /** The same, as a kind: set on every verdict but a read. */
  refusal?: RefusalKind;
  /** Extra facts for the error's `details` (the refused function's name, a syntax error's position). */
  details?: Readonly<Record<string, unknown>>;
  /** PostgreSQL reads: what decide.ts checks against the connection's catalog. */
  references?: PostgresReferences;
  /** MySQL reads: every function name called. Each must be the server's built-in, not a
   * stored function that happens to carry a name built in elsewhere (decide.ts asks). */
  calledFunctions?: readonly string[];
  /** The JavaScript parser could not read valid-looking text: decide.ts asks the engine
   * itself (SQLite's prepared statement, MySQL's PREPARE inside a read-only transaction). */
  askEngine?: boolean;
  /** MySQL/MariaDB: a read that is EXPLAIN without ANALYZE of INSERT/UPDATE/DELETE/REPLACE.
   * The server refuses it inside a read-only transaction (error 1792), so once decide.ts has
   * found it reaches no code the engine is told to run it in an ordinary transaction that is
   * always rolled back (ExecuteOptions.planOnly, src/engines/mysql/mysql.ts). */
  planOnlyWrite?: boolean;
  /** MySQL reads that can read relations (all but SHOW and DESCRIBE of a table): a view among
   * these names runs its definition, so decide.ts follows them (src/guard/read-policy-mysql.ts). */
  relationNames?: readonly MysqlName[];
  /** PostgreSQL, set per connection by the read decision: the read cannot leave state in its
   * session that outlives ROLLBACK (read-policy.ts, mayTouchSession), so handing the session
   * back needs no advisory unlock and no reseed. */
  sessionUntouched?: true;
}

export type Classifier = (sql: string) => Verdict;
