// Built-in functions of MySQL 8.0/8.4 and MariaDB 10.11/11.x that a read may call, and the
// keywords that may stand before `(` without calling anything. An ALLOWLIST, not a denylist:
// neither server has a volatility catalog, a denylist only stops the names someone thought of,
// and every name missing here is a stored function, a loadable function (UDF) or a plugin
// function, any of which can write, lock, sleep or read files. A false denial only sends the
// user to an admin key; a false allowance is a write through a read key.
//
// How the lists were built (see test/allowlists.test.ts, which re-checks this on the servers):
// - MariaDB: every name was called on the real 10.11 server (PREPARE, then sample calls inside
//   START TRANSACTION READ ONLY); candidates came from information_schema.SQL_FUNCTIONS and
//   KEYWORDS, the server's help tables (mysql.help_topic, which also document 11.x additions)
//   and the grammar. Names newer than 10.11 are marked below and were taken from those help
//   tables, not called.
// - MySQL: no MySQL server is available here. MySQL-only names come from the server source
//   (sql/item_create.cc func_array, sql/lex.h function symbols, the sql_yacc.yy function rules)
//   and the 8.0/8.4 manual's built-in function reference; they are marked "MySQL".
//
// Left out on purpose (one line each in the report of the change that added this file):
// - Named locks that take or free a lock: GET_LOCK, RELEASE_LOCK, RELEASE_ALL_LOCKS.
// - Holding or burning the connection: SLEEP, BENCHMARK, KDF (caller-chosen iteration count).
// - Waiting on replication: MASTER_POS_WAIT, SOURCE_POS_WAIT, MASTER_GTID_WAIT,
//   WAIT_FOR_EXECUTED_GTID_SET, WAIT_UNTIL_SQL_THREAD_AFTER_GTIDS, WSREP_SYNC_WAIT_UPTO_GTID.
// - Server files: LOAD_FILE; BINLOG_GTID_POS (opens and scans the binary logs).
// - Session or server state: LAST_INSERT_ID (LAST_INSERT_ID(expr) sets it), NAME_CONST
//   (replication internal with a crash history), NEXTVAL/SETVAL/LASTVAL (MariaDB sequences).
// - DEFAULT(col): evaluates the column's default, which on MariaDB may be NEXT VALUE FOR a
//   sequence; a SELECT DEFAULT(col) was seen advancing one. Not a keyword either.
// - DES_ENCRYPT/DES_DECRYPT: use the server's DES key file (removed in MySQL 8.0).
// - OLD_VALUE: MariaDB, only meaningful in UPDATE … RETURNING.
// - MySQL data-dictionary internals (CAN_ACCESS_*, INTERNAL_*, GET_DD_*, …) and debug-only
//   LIKE_RANGE_MIN/MAX: refused outside system views or absent from release builds.
// - Every loadable/plugin/component function (sys_exec, group_replication_*, keyring_*,
//   version_tokens_*, audit_log_*, firewall_*, …): not built-ins, so never listed.
//
// What a name on this list does NOT guarantee (the call gate must handle these):
// - A name that is built in on one server is a free name on another: MySQL-only names are
//   stored-function names on MariaDB and the other way round, and names newer than the
//   connected server's version likewise. An unqualified call to such a name runs the stored
//   function of the current database (or a UDF). Pair the list with a check of the connected
//   server (information_schema.ROUTINES, mysql.func) or a per-server intersection.
// - A quoted name is not the keyword: `left`(1, 2), `count`(x), `if`(a, b, c) call stored
//   functions named left/count/if (checked on MariaDB). The grammar-level functions below
//   (marked "grammar") are built in only when written bare; native ones (ABS, CONCAT, …) stay
//   built in when quoted. Refuse quoted call names rather than strip the quotes.
// - A schema-qualified name (db.abs(1)) is always a stored function.
// - Without IGNORE_SPACE, `count (x)` (a space before the parenthesis) is a stored-function
//   call for the lex.h function symbols (ADDDATE, BIT_AND/OR/XOR, CAST, COUNT, CURDATE,
//   CURTIME, DATE_ADD, DATE_SUB, EXTRACT, GROUP_CONCAT, MAX, MID, MIN, NOW, POSITION,
//   SESSION_USER, STD*, SUBDATE, SUBSTR, SUBSTRING, SUM, SYSDATE, SYSTEM_USER, TRIM, VAR*,
//   JSON_ARRAYAGG, JSON_OBJECTAGG, window functions). dbq's mysql2 connections set
//   IGNORE_SPACE (a default client flag), where it is the built-in.
// - INSERT(str, pos, len, new) and REPLACE(str, from, to) are pure string functions; the
//   statement-level checks still treat INSERT/REPLACE as statement keywords.
// - JSON_TABLE is a table function only in FROM; written in an expression, json_table(…)
//   is a stored-function call on MariaDB (checked).

export const MYSQL_FUNCTIONS: ReadonlySet<string> = new Set([
  // Control flow and comparison.
  'if', 'ifnull', 'nullif', 'coalesce', 'isnull', 'greatest', 'least', 'interval', 'field',
  'elt', 'nvl', 'nvl2', 'decode_oracle',
  // Cast and conversion (grammar: CAST(x AS t), CONVERT(x, t), CONVERT(x USING cs)).
  'cast', 'convert',

  // Aggregates (grammar) and ANY_VALUE/GROUPING (MySQL).
  'avg', 'count', 'sum', 'min', 'max', 'bit_and', 'bit_or', 'bit_xor', 'group_concat',
  'std', 'stddev', 'stddev_pop', 'stddev_samp', 'variance', 'var_pop', 'var_samp',
  'json_arrayagg', 'json_objectagg', 'any_value', 'grouping',
  // Window functions (grammar); MEDIAN and PERCENTILE_CONT/DISC are MariaDB.
  'row_number', 'rank', 'dense_rank', 'percent_rank', 'cume_dist', 'ntile', 'lag', 'lead',
  'first_value', 'last_value', 'nth_value', 'median', 'percentile_cont', 'percentile_disc',

  // Strings. CHAR/INSERT/LEFT/REPEAT/REPLACE/RIGHT/TRIM/SUBSTR*/MID/POSITION are grammar.
  'ascii', 'bin', 'bit_length', 'char', 'char_length', 'character_length', 'chr', 'concat',
  'concat_ws', 'export_set', 'find_in_set', 'format', 'from_base64', 'hex', 'insert', 'instr',
  'lcase', 'left', 'length', 'lengthb', 'locate', 'lower', 'lpad', 'ltrim', 'make_set', 'mid',
  'natural_sort_key', 'oct', 'octet_length', 'ord', 'position', 'quote', 'repeat', 'replace',
  'reverse', 'right', 'rpad', 'rtrim', 'sformat', 'soundex', 'space', 'strcmp', 'substr',
  'substring', 'substring_index', 'to_base64', 'to_char', 'trim', 'ucase', 'unhex', 'upper',
  'weight_string',
  // MariaDB's Oracle-mode variants (callable in any mode).
  'concat_operator_oracle', 'lpad_oracle', 'ltrim_oracle', 'replace_oracle', 'rpad_oracle',
  'rtrim_oracle', 'substr_oracle', 'trim_oracle',
  // Regular expressions; REGEXP_LIKE is MySQL.
  'regexp_instr', 'regexp_replace', 'regexp_substr', 'regexp_like',
  // XML: both return a value, UPDATEXML returns the changed string and writes nothing.
  'extractvalue', 'updatexml',

  // Numbers.
  'abs', 'acos', 'asin', 'atan', 'atan2', 'ceil', 'ceiling', 'conv', 'cos', 'cot', 'crc32',
  'crc32c', 'degrees', 'exp', 'floor', 'ln', 'log', 'log10', 'log2', 'mod', 'pi', 'pow',
  'power', 'radians', 'rand', 'round', 'sign', 'sin', 'sqrt', 'tan', 'truncate', 'bit_count',

  // Dates and times. Clocks and RAND-like volatility are harmless in a read.
  'adddate', 'addtime', 'add_months', 'convert_tz', 'curdate', 'current_date', 'current_time',
  'current_timestamp', 'curtime', 'date', 'datediff', 'date_add', 'date_format', 'date_sub',
  'day', 'dayname', 'dayofmonth', 'dayofweek', 'dayofyear', 'extract', 'from_days',
  'from_unixtime', 'get_format', 'hour', 'last_day', 'localtime', 'localtimestamp', 'makedate',
  'maketime', 'microsecond', 'minute', 'month', 'monthname', 'now', 'period_add', 'period_diff',
  'quarter', 'second', 'sec_to_time', 'str_to_date', 'subdate', 'subtime', 'sysdate', 'time',
  'timediff', 'timestamp', 'timestampadd', 'timestampdiff', 'time_format', 'time_to_sec',
  'to_days', 'to_seconds', 'unix_timestamp', 'utc_date', 'utc_time', 'utc_timestamp', 'week',
  'weekday', 'weekofyear', 'year', 'yearweek',

  // Hashing, encryption with a caller-supplied key, compression: pure.
  'aes_encrypt', 'aes_decrypt', 'md5', 'sha', 'sha1', 'sha2', 'compress', 'uncompress',
  'uncompressed_length', 'random_bytes',
  // MariaDB legacy: ENCODE/DECODE (caller's password), ENCRYPT (crypt(3)), PASSWORD and
  // OLD_PASSWORD (hash a string; they change no account). Removed from MySQL 8.0.
  'encode', 'decode', 'encrypt', 'password', 'old_password',
  // MySQL: digest of a statement's text (parsed, not run); password-policy score.
  'statement_digest', 'statement_digest_text', 'validate_password_strength',

  // Identifiers and networks. UUID_SHORT advances an in-memory counter only to keep its
  // results unique: nothing persistent, nothing another session waits on.
  'uuid', 'uuid_short', 'sys_guid', 'inet_aton', 'inet_ntoa', 'inet6_aton', 'inet6_ntoa',
  'is_ipv4', 'is_ipv4_compat', 'is_ipv4_mapped', 'is_ipv6',
  // MySQL.
  'bin_to_uuid', 'uuid_to_bin', 'is_uuid',
  // Newer MariaDB (11.x, from the help tables).
  'uuid_v4', 'uuid_v7',

  // Information functions that only read the session or server. ROW_COUNT and FOUND_ROWS
  // read the previous statement's counters; they set nothing.
  'database', 'schema', 'user', 'current_user', 'session_user', 'system_user', 'current_role',
  'version', 'connection_id', 'found_rows', 'row_count', 'charset', 'collation', 'coercibility',
  'rownum', 'decode_histogram', 'wsrep_last_seen_gtid', 'wsrep_last_written_gtid',
  // Named-lock probes: they read the lock table and return at once, neither
  // taking nor waiting for a lock; GET_LOCK beside them is still refused.
  'is_free_lock', 'is_used_lock',
  // MySQL: pure GTID-set arithmetic, performance-schema thread ids, library version, the role
  // graph as GraphML (read from the grant tables), byte/time formatting (also MariaDB 11.x).
  'gtid_subset', 'gtid_subtract', 'ps_current_thread_id', 'ps_thread_id', 'icu_version',
  'roles_graphml', 'format_bytes', 'format_pico_time',

  // JSON. The modifying ones (JSON_SET, JSON_INSERT, …) return a new document; they write
  // nothing. JSON_TABLE is the FROM-clause table function.
  'json_array', 'json_array_append', 'json_array_insert', 'json_compact', 'json_contains',
  'json_contains_path', 'json_depth', 'json_detailed', 'json_equals', 'json_exists',
  'json_extract', 'json_insert', 'json_keys', 'json_length', 'json_loose', 'json_merge',
  'json_merge_patch', 'json_merge_preserve', 'json_normalize', 'json_object', 'json_overlaps',
  'json_pretty', 'json_query', 'json_quote', 'json_remove', 'json_replace', 'json_search',
  'json_set', 'json_table', 'json_type', 'json_unquote', 'json_valid', 'json_value',
  // JSON Schema: MySQL; JSON_SCHEMA_VALID also MariaDB 11.1+.
  'json_schema_valid', 'json_schema_validation_report',
  // MySQL: binary JSON storage sizes.
  'json_storage_free', 'json_storage_size',
  // Newer MariaDB (11.2+, from the help tables).
  'json_array_intersect', 'json_key_value', 'json_object_filter_keys', 'json_object_to_array',

  // MariaDB dynamic columns: functions on a blob value; COLUMN_ADD/CREATE/DELETE return a new
  // blob and write nothing. COLUMN_GET is grammar (COLUMN_GET(blob, name AS type)).
  'column_add', 'column_check', 'column_create', 'column_delete', 'column_exists',
  'column_get', 'column_json', 'column_list',

  // Spatial, ST_ names. ST_TRANSFORM reads spatial reference systems from the dictionary.
  'st_area', 'st_asbinary', 'st_asgeojson', 'st_astext', 'st_aswkb', 'st_aswkt', 'st_boundary',
  'st_buffer', 'st_centroid', 'st_contains', 'st_convexhull', 'st_crosses', 'st_difference',
  'st_dimension', 'st_disjoint', 'st_distance', 'st_distance_sphere', 'st_endpoint',
  'st_envelope', 'st_equals', 'st_exteriorring', 'st_geomcollfromtext', 'st_geomcollfromwkb',
  'st_geometrycollectionfromtext', 'st_geometrycollectionfromwkb', 'st_geometryfromtext',
  'st_geometryfromwkb', 'st_geometryn', 'st_geometrytype', 'st_geomfromgeojson',
  'st_geomfromtext', 'st_geomfromwkb', 'st_interiorringn', 'st_intersection', 'st_intersects',
  'st_isclosed', 'st_isempty', 'st_isring', 'st_issimple', 'st_length', 'st_linefromtext',
  'st_linefromwkb', 'st_linestringfromtext', 'st_linestringfromwkb', 'st_mlinefromtext',
  'st_mlinefromwkb', 'st_mpointfromtext', 'st_mpointfromwkb', 'st_mpolyfromtext',
  'st_mpolyfromwkb', 'st_multilinestringfromtext', 'st_multilinestringfromwkb',
  'st_multipointfromtext', 'st_multipointfromwkb', 'st_multipolygonfromtext',
  'st_multipolygonfromwkb', 'st_numgeometries', 'st_numinteriorrings', 'st_numpoints',
  'st_overlaps', 'st_pointfromtext', 'st_pointfromwkb', 'st_pointn', 'st_pointonsurface',
  'st_polyfromtext', 'st_polyfromwkb', 'st_polygonfromtext', 'st_polygonfromwkb', 'st_relate',
  'st_srid', 'st_startpoint', 'st_symdifference', 'st_touches', 'st_union', 'st_within', 'st_x',
  'st_y',
  // MySQL ST_ names (the geohash/validity/simplify ones, ST_COLLECT and MBRCOVEREDBY are also
  // in newer MariaDB).
  'st_buffer_strategy', 'st_collect', 'st_frechetdistance', 'st_geohash', 'st_geomcollfromtxt',
  'st_hausdorffdistance', 'st_isvalid', 'st_latfromgeohash', 'st_latitude',
  'st_lineinterpolatepoint', 'st_lineinterpolatepoints', 'st_longfromgeohash', 'st_longitude',
  'st_makeenvelope', 'st_numinteriorring', 'st_pointatdistance', 'st_pointfromgeohash',
  'st_simplify', 'st_swapxy', 'st_transform', 'st_validate',
  // Minimum bounding rectangles.
  'mbrcontains', 'mbrdisjoint', 'mbrequal', 'mbrequals', 'mbrintersects', 'mbroverlaps',
  'mbrtouches', 'mbrwithin', 'mbrcoveredby', 'mbrcovers',
  // Constructors (grammar); GEOMCOLLECTION is MySQL's synonym of GEOMETRYCOLLECTION.
  'point', 'linestring', 'polygon', 'multipoint', 'multilinestring', 'multipolygon',
  'geometrycollection', 'geomcollection',
  // MariaDB's names without ST_ (MySQL 8.0 removed them).
  'area', 'asbinary', 'astext', 'aswkb', 'aswkt', 'boundary', 'buffer', 'centroid', 'contains',
  'convexhull', 'crosses', 'dimension', 'disjoint', 'endpoint', 'envelope', 'equals',
  'exteriorring', 'geomcollfromtext', 'geomcollfromwkb', 'geometrycollectionfromtext',
  'geometrycollectionfromwkb', 'geometryfromtext', 'geometryfromwkb', 'geometryn',
  'geometrytype', 'geomfromtext', 'geomfromwkb', 'glength', 'interiorringn', 'intersects',
  'isclosed', 'isempty', 'isring', 'issimple', 'linefromtext', 'linefromwkb',
  'linestringfromtext', 'linestringfromwkb', 'mlinefromtext', 'mlinefromwkb', 'mpointfromtext',
  'mpointfromwkb', 'mpolyfromtext', 'mpolyfromwkb', 'multilinestringfromtext',
  'multilinestringfromwkb', 'multipointfromtext', 'multipointfromwkb', 'multipolygonfromtext',
  'multipolygonfromwkb', 'numgeometries', 'numinteriorrings', 'numpoints', 'overlaps',
  'pointfromtext', 'pointfromwkb', 'pointn', 'pointonsurface', 'polyfromtext', 'polyfromwkb',
  'polygonfromtext', 'polygonfromwkb', 'srid', 'startpoint', 'touches', 'within', 'x', 'y',

  // Newer MariaDB (from the help tables): Oracle-style date/number functions and vectors.
  'months_between', 'to_date', 'to_number', 'trunc', 'vec_distance', 'vec_distance_cosine',
  'vec_distance_euclidean', 'vec_fromtext', 'vec_totext',
]);

// Keywords that stand directly before `(` in a read statement without calling anything.
// Each was written before `(` in a statement the MariaDB parser accepts (test/allowlists.test.ts)
// and is not callable: a stored function created under that name is not reached by an
// unquoted `name(…)` (checked with and without IGNORE_SPACE).
//
// Left out although they precede `(` in some read, because `name(…)` also calls a stored
// function of that name on MariaDB (they are not reserved there): AGAINST (MATCH … AGAINST),
// COLUMNS / NESTED / PATH / ORDINALITY (JSON_TABLE), OF (MEMBER OF, FOR SYSTEM_TIME AS OF),
// ESCAPE, FILTER, LATERAL (MySQL), MINUS, EXTENDED and PARTITIONS (EXPLAIN EXTENDED (…)),
// FIRST, TREE (EXPLAIN FORMAT=TREE). The call gate has to allow those by context (AGAINST right
// after MATCH(…), COLUMNS inside JSON_TABLE(…), OF right after MEMBER or AS) or deny them.
// Also left out: WINDOW (always `WINDOW w AS (`), ENUM and SET (no read position takes their
// parenthesis on MariaDB), VARCHAR2/NUMBER/RAW/CLOB (sql_mode=ORACLE only), DEFAULT (above).
export const MYSQL_PAREN_KEYWORDS: ReadonlySet<string> = new Set([
  // Predicates and operators: IN (…), EXISTS (…), = ANY/SOME/ALL (…), NOT (…), 5 DIV (2).
  'in', 'exists', 'any', 'some', 'all', 'not', 'and', 'or', 'xor', 'like', 'rlike', 'regexp',
  'between', 'div', 'binary',
  // Query structure: SELECT (…), FROM (subquery), JOIN (t), ON (…), USING (…), WHERE (…),
  // GROUP/ORDER/PARTITION BY (…), HAVING (…), UNION/INTERSECT/EXCEPT (SELECT …), AS (CTE body).
  'select', 'distinct', 'distinctrow', 'from', 'join', 'on', 'using', 'where', 'by', 'having',
  'union', 'intersect', 'except', 'as',
  // SELECT options followed by a parenthesized expression: SELECT SQL_NO_CACHE (a) ….
  'straight_join', 'high_priority', 'sql_cache', 'sql_no_cache', 'sql_calc_found_rows',
  'sql_buffer_result', 'sql_small_result', 'sql_big_result',
  // CASE (x) WHEN (…) THEN (…) ELSE (…).
  'case', 'when', 'then', 'else',
  // Row constructors and table value constructors: ROW(1, 2), VALUES (1, 2), VALUE(col).
  'row', 'values', 'value',
  // Windows: OVER (…); WITHIN GROUP (ORDER BY …) for MariaDB's percentiles.
  'over', 'group',
  // Full-text search: MATCH (cols) AGAINST (…) (AGAINST itself is left out, see above).
  'match',
  // Index hints and partition selection: USE INDEX (i), FORCE KEY (k), PARTITION (p0).
  'index', 'key', 'partition',
  // TRIM(BOTH (…) FROM …), FOR SYSTEM_TIME FROM … TO (…).
  'both', 'leading', 'trailing', 'to',
  // EXPLAIN (SELECT …), DESCRIBE (…), EXPLAIN ANALYZE (SELECT …), EXPLAIN FORMAT=JSON (…).
  'explain', 'describe', 'desc', 'analyze', 'json',
  // Type names with a length or precision: CAST(x AS CHAR(10)), CONVERT(x, DECIMAL(10, 2)),
  // COLUMN_GET(b, 'k' AS DECIMAL(10, 2)), JSON_TABLE(… COLUMNS (c VARCHAR(20) PATH '$')),
  // MySQL's JSON_VALUE(… RETURNING DECIMAL(10, 2)). CHAR/TIME/TIMESTAMP/YEAR are also
  // functions (pure); CHARACTER(65) is CHAR(65) to the lexer.
  'char', 'character', 'varchar', 'varcharacter', 'nchar', 'nvarchar', 'varbinary', 'decimal',
  'dec', 'numeric', 'fixed', 'float', 'float4', 'double', 'real', 'int', 'integer', 'int1',
  'int2', 'int3', 'int4', 'int8', 'tinyint', 'smallint', 'mediumint', 'middleint', 'bigint',
  'bit', 'text', 'blob', 'datetime', 'time', 'timestamp', 'year',
]);
