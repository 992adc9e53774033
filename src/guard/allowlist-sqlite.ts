// Functions that a read on SQLite may call, and the keywords that may stand before `(` without
// calling anything. An ALLOWLIST, not a denylist: SQLite has no volatility catalog, and every
// name not listed here is an application-defined or extension function that dbq did not vet
// (load_extension, fileio, eval, …). A false denial only sends the user to an admin key.
//
// Built from what the better-sqlite3 build actually registers (SQLite 3.53:
// `SELECT name, builtin, type, flags FROM pragma_function_list`), each entry judged on its own.
// SQLite resolves function names only against what the connection registered (there are no
// stored functions), so a keyword here is safe unless a registered function of that name has a
// side effect; none has (test/allowlists.test.ts checks the list against the real build).
//
// Left out on purpose:
// - Flagged SQLITE_DIRECTONLY, each for a real reason: load_extension (loads native code),
//   fts3_tokenizer (installs a tokenizer from a raw pointer, CVE-2019-8457 family),
//   geopoly_debug (debugging output).
// - fts5(?) hands the FTS5 C API pointer to a bound pointer parameter: plumbing, not a read.
// - optimize(fts3_table): the FTS3/FTS4 auxiliary function merges the index segments — a write.
// - rtreecheck('name'): runs its own queries against the tables named by its string argument,
//   out of the guard's sight; an integrity check is an administrator's job.
// - sqlite_log(code, msg): writes to the process's SQLite error log.
// - current_date/current_time/current_timestamp are registered, but `current_date(` is a
//   syntax error: they are keywords without parentheses and need no entry.
// - The shell/extension functions readfile, writefile, edit, fsdir, lsdir, eval, sha3_query,
//   zipfile, sqlar_*, sqlite_dbpage, sqlite_dbdata, icu_load_collation: not in this build,
//   and would be refused if a later build had them (not listed).
// - Table-valued PRAGMA functions other than the schema listings below. They run
//   `PRAGMA name = arg`: pragma_optimize runs ANALYZE (seen creating sqlite_stat1 from a
//   SELECT), pragma_integrity_check/quick_check/foreign_key_check scan the whole database, the
//   rest read or set connection settings. NOTE for the call gate: `FROM pragma_optimize`
//   needs no parenthesis, so an `name(` scan alone does not see it; FROM-clause names with the
//   pragma_ prefix must be checked against this list too.
//
// Kept although not pure: random(), randomblob(N) and the clocks (harmlessly volatile);
// changes(), total_changes() and last_insert_rowid() (read the connection's counters, set
// nothing). dbstat is SQLITE_VTAB_DIRECTONLY so that a schema (view, trigger) cannot use it
// behind the user's back; called directly it only reports page usage.

export const SQLITE_FUNCTIONS: ReadonlySet<string> = new Set([
  // Core scalar functions.
  'abs',
  'char',
  'coalesce',
  'concat',
  'concat_ws',
  'format',
  'glob',
  'hex',
  'if',
  'ifnull',
  'iif',
  'instr',
  'length',
  'like',
  'likelihood',
  'likely',
  'lower',
  'ltrim',
  'max',
  'min',
  'nullif',
  'octet_length',
  'printf',
  'quote',
  'random',
  'randomblob',
  'replace',
  'round',
  'rtrim',
  'sign',
  'soundex',
  'substr',
  'substring',
  'subtype',
  'trim',
  'typeof',
  'unhex',
  'unicode',
  'unistr',
  'unistr_quote',
  'unlikely',
  'upper',
  'zeroblob',
  // CAST(x AS type): a keyword-function of the grammar, not in pragma_function_list.
  'cast',
  // Connection counters and build information: reads only.
  'changes',
  'total_changes',
  'last_insert_rowid',
  'sqlite_version',
  'sqlite_source_id',
  'sqlite_compileoption_get',
  'sqlite_compileoption_used',

  // Aggregates (max/min above are also aggregates); median and percentile* come from the
  // build's SQLITE_ENABLE_PERCENTILE.
  'avg',
  'count',
  'group_concat',
  'string_agg',
  'sum',
  'total',
  'median',
  'percentile',
  'percentile_cont',
  'percentile_disc',
  // Window functions.
  'row_number',
  'rank',
  'dense_rank',
  'percent_rank',
  'cume_dist',
  'ntile',
  'lag',
  'lead',
  'first_value',
  'last_value',
  'nth_value',

  // Dates and times.
  'date',
  'time',
  'datetime',
  'julianday',
  'unixepoch',
  'strftime',
  'timediff',

  // Math (SQLITE_ENABLE_MATH_FUNCTIONS).
  'acos',
  'acosh',
  'asin',
  'asinh',
  'atan',
  'atan2',
  'atanh',
  'ceil',
  'ceiling',
  'cos',
  'cosh',
  'degrees',
  'exp',
  'floor',
  'ln',
  'log',
  'log10',
  'log2',
  'mod',
  'pi',
  'pow',
  'power',
  'radians',
  'sin',
  'sinh',
  'sqrt',
  'tan',
  'tanh',
  'trunc',

  // JSON. The json_set/json_insert/… family returns a new document; it writes nothing.
  'json',
  'json_array',
  'json_array_insert',
  'json_array_length',
  'json_error_position',
  'json_extract',
  'json_group_array',
  'json_group_object',
  'json_insert',
  'json_object',
  'json_patch',
  'json_pretty',
  'json_quote',
  'json_remove',
  'json_replace',
  'json_set',
  'json_type',
  'json_valid',
  'jsonb',
  'jsonb_array',
  'jsonb_array_insert',
  'jsonb_extract',
  'jsonb_group_array',
  'jsonb_group_object',
  'jsonb_insert',
  'jsonb_object',
  'jsonb_patch',
  'jsonb_remove',
  'jsonb_replace',
  'jsonb_set',
  // Table-valued JSON functions (eponymous virtual tables: FROM json_each(…)).
  'json_each',
  'json_tree',
  'jsonb_each',
  'jsonb_tree',

  // Full-text search: FTS5 auxiliary functions and helpers, FTS3/FTS4 auxiliary functions
  // (matchinfo, offsets), and match(), the function behind `x MATCH y`. All read the index.
  'bm25',
  'highlight',
  'snippet',
  'fts5_source_id',
  'fts5_locale',
  'fts5_get_locale',
  'fts5_insttoken',
  'match',
  'matchinfo',
  'offsets',

  // R-tree node decoders (pure functions of a blob) and Geopoly (pure geometry).
  'rtreedepth',
  'rtreenode',
  'geopoly_area',
  'geopoly_bbox',
  'geopoly_blob',
  'geopoly_ccw',
  'geopoly_contains_point',
  'geopoly_group_bbox',
  'geopoly_json',
  'geopoly_overlap',
  'geopoly_regular',
  'geopoly_svg',
  'geopoly_within',
  'geopoly_xform',

  // Page-usage statistics (table-valued: FROM dbstat('main')).
  'dbstat',

  // Table-valued PRAGMA functions that only list the schema or the build. Their argument is a
  // table, index or schema name (`PRAGMA table_info = 't'` reads; it sets nothing).
  // pragma_database_list shows the database files' paths.
  'pragma_table_info',
  'pragma_table_xinfo',
  'pragma_table_list',
  'pragma_index_list',
  'pragma_index_info',
  'pragma_index_xinfo',
  'pragma_foreign_key_list',
  'pragma_function_list',
  'pragma_collation_list',
  'pragma_database_list',
  'pragma_module_list',
  'pragma_pragma_list',
  'pragma_compile_options',
]);

// Keywords (and type names) that stand directly before `(` in a SELECT/WITH/EXPLAIN/VALUES
// statement without calling anything; each one was written before `(` in a statement SQLite
// accepts (test/allowlists.test.ts). Left out: UNION/INTERSECT/EXCEPT and EXPLAIN [QUERY PLAN]
// (SQLite rejects a parenthesis after them), PARTITION and WINDOW (followed by BY / a name),
// COLLATE, EXCLUDE, RAISE (triggers only), REGEXP (no regexp() in this build), RETURNING and
// DO (not reads).
export const SQLITE_PAREN_KEYWORDS: ReadonlySet<string> = new Set([
  // Predicates and operators: IN (…), EXISTS (…), NOT (…), x IS (y), LIKE (…) ESCAPE (…).
  // LIKE, GLOB and MATCH are functions too (above).
  'in',
  'exists',
  'not',
  'and',
  'or',
  'is',
  'between',
  'escape',
  // Query structure: SELECT (…), FROM (subquery), JOIN (t), ON (…), USING (…), WHERE (…),
  // ORDER/GROUP/PARTITION BY (…), HAVING (…), LIMIT (…) OFFSET (…).
  'select',
  'distinct',
  'all',
  'from',
  'join',
  'on',
  'using',
  'where',
  'by',
  'having',
  'limit',
  'offset',
  // CTEs and windows: WITH c AS [NOT] MATERIALIZED (…), OVER (…), FILTER (WHERE …),
  // WINDOW w AS (…), ROWS/RANGE/GROUPS (n) PRECEDING.
  'as',
  'materialized',
  'over',
  'filter',
  'rows',
  'range',
  'groups',
  // CASE (x) WHEN (…) THEN (…) ELSE (…), and VALUES (…).
  'case',
  'when',
  'then',
  'else',
  'values',
  // Type names with a size in CAST(x AS VARCHAR(10)): SQLite reads any name there; these are
  // the usual ones. CHAR, DATE and DATETIME are functions (above).
  'varchar',
  'character',
  'nchar',
  'nvarchar',
  'text',
  'clob',
  'blob',
  'int',
  'integer',
  'tinyint',
  'smallint',
  'mediumint',
  'bigint',
  'int2',
  'int8',
  'real',
  'double',
  'float',
  'numeric',
  'decimal',
  'boolean',
]);
