// The function allowlists of MySQL/MariaDB and SQLite (src/guard/allowlist-*.ts), checked against
// the real servers rather than trusted: every listed name must exist (MariaDB 10.11 here, the
// better-sqlite3 build), run inside a read-only transaction, and every keyword must really take
// a parenthesis in a read without being callable. Names of MySQL or of newer MariaDB versions
// cannot be called here; they are listed below with where they come from, and the test insists
// that they are exactly the names this server lacks, so the list cannot drift silently.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MYSQL_FUNCTIONS, MYSQL_PAREN_KEYWORDS } from '../src/guard/allowlist-mysql.ts';
import { SQLITE_FUNCTIONS, SQLITE_PAREN_KEYWORDS } from '../src/guard/allowlist-sqlite.ts';
import { MYSQL_URL } from './support/databases.ts';

// ---------------------------------------------------------------------------------------------
// Names that must never be allowed, with the reason (the report of allowlist-*.ts lists them).

const MYSQL_EXCLUDED: Record<string, string> = {
  get_lock: 'named lock outlives the statement, blocks other sessions',
  release_lock: 'named locks',
  release_all_locks: 'named locks',
  sleep: 'holds the connection',
  benchmark: 'burns CPU on a loop',
  kdf: 'caller-chosen iteration count, a BENCHMARK in disguise',
  load_file: 'reads server files',
  binlog_gtid_pos: 'opens and scans the binary logs',
  master_pos_wait: 'waits on replication',
  source_pos_wait: 'waits on replication',
  master_gtid_wait: 'waits on replication',
  wait_for_executed_gtid_set: 'waits on replication',
  wait_until_sql_thread_after_gtids: 'waits on replication',
  wsrep_sync_wait_upto_gtid: 'waits on Galera replication',
  name_const: 'replication internal with a crash history',
  last_insert_id: 'LAST_INSERT_ID(expr) sets session state',
  nextval: 'advances a sequence',
  setval: 'sets a sequence',
  lastval: 'sequence family',
  default: 'DEFAULT(col) evaluates the column default, which may advance a sequence',
  des_encrypt: 'uses the server DES key file',
  des_decrypt: 'uses the server DES key file',
  old_value: 'only meaningful in UPDATE … RETURNING',
  schemas: 'listed by information_schema.SQL_FUNCTIONS, but SCHEMAS() is a syntax error',
  like_range_min: 'debug builds only',
  like_range_max: 'debug builds only',
  can_access_database: 'data-dictionary internal',
  can_access_table: 'data-dictionary internal',
  internal_table_rows: 'data-dictionary internal',
  get_dd_create_options: 'data-dictionary internal',
  sys_exec: 'lib_mysqludf_sys: shell commands',
  sys_eval: 'lib_mysqludf_sys: shell commands',
  load_rewrite_rules: 'plugin function changing server configuration',
  set_firewall_mode: 'plugin function changing server configuration',
  audit_api_message_emit_udf: 'plugin function',
  against: 'keyword callable as a stored function on MariaDB',
  columns: 'keyword callable as a stored function on MariaDB',
  nested: 'keyword callable as a stored function on MariaDB',
  path: 'keyword callable as a stored function on MariaDB',
  of: 'keyword callable as a stored function on MariaDB',
  filter: 'not a MariaDB keyword: callable as a stored function',
  lateral: 'not a MariaDB keyword: callable as a stored function',
};
const MYSQL_EXCLUDED_PREFIXES = [
  'group_replication_',
  'keyring_',
  'version_tokens_',
  'audit_log_',
  'firewall_',
  'mysql_firewall_',
  'asynchronous_connection_failover_',
  'can_access_',
  'internal_',
  'get_dd_',
];

const SQLITE_EXCLUDED: Record<string, string> = {
  load_extension: 'loads native code (SQLITE_DIRECTONLY)',
  fts3_tokenizer: 'installs a tokenizer from a raw pointer (SQLITE_DIRECTONLY)',
  geopoly_debug: 'debugging output (SQLITE_DIRECTONLY)',
  fts5: 'hands out the FTS5 C API pointer',
  optimize: 'FTS3/FTS4 optimize() merges index segments: a write',
  rtreecheck: 'runs its own queries on tables named by a string',
  sqlite_log: 'writes to the SQLite error log',
  current_date: 'keyword without parentheses',
  current_time: 'keyword without parentheses',
  current_timestamp: 'keyword without parentheses',
  readfile: 'fileio: server files',
  writefile: 'fileio: server files',
  edit: 'shell: runs an editor',
  fsdir: 'fileio: lists server directories',
  lsdir: 'fileio: lists server directories',
  eval: "runs SQL text out of the guard's sight",
  sha3_query: "runs SQL text out of the guard's sight",
  zipfile: 'zipfile extension: server files',
  sqlite_dbpage: 'raw page access (writable)',
  sqlite_dbdata: 'raw page access',
  icu_load_collation: "changes the connection's collations",
  pragma_optimize: 'runs ANALYZE: writes sqlite_stat1',
  pragma_integrity_check: 'scans the whole database',
  pragma_quick_check: 'scans the whole database',
  pragma_foreign_key_check: 'scans the whole database',
  pragma_journal_mode: 'connection setting',
  pragma_query_only: 'connection setting',
  pragma_writable_schema: 'connection setting',
  raise: 'trigger programs only',
};

// ---------------------------------------------------------------------------------------------
// MySQL/MariaDB.

/** Listed names that MariaDB 10.11 does not have: MySQL's own (sql/item_create.cc, the 8.0/8.4
 * manual) and newer MariaDB's (its help tables, mysql.help_topic). */
const NOT_IN_MARIADB_10_11 = new Set([
  // MySQL only.
  'any_value',
  'grouping',
  'regexp_like',
  'statement_digest',
  'statement_digest_text',
  'validate_password_strength',
  'bin_to_uuid',
  'uuid_to_bin',
  'is_uuid',
  'gtid_subset',
  'gtid_subtract',
  'ps_current_thread_id',
  'ps_thread_id',
  'icu_version',
  'roles_graphml',
  'json_schema_validation_report',
  'json_storage_free',
  'json_storage_size',
  'st_buffer_strategy',
  'st_frechetdistance',
  'st_geomcollfromtxt',
  'st_hausdorffdistance',
  'st_latitude',
  'st_lineinterpolatepoint',
  'st_lineinterpolatepoints',
  'st_longitude',
  'st_makeenvelope',
  'st_numinteriorring',
  'st_pointatdistance',
  'st_swapxy',
  'st_transform',
  'mbrcovers',
  'geomcollection',
  // MySQL and newer MariaDB.
  'format_bytes',
  'format_pico_time',
  'json_schema_valid',
  'st_collect',
  'st_geohash',
  'st_isvalid',
  'st_latfromgeohash',
  'st_longfromgeohash',
  'st_pointfromgeohash',
  'st_simplify',
  'st_validate',
  'mbrcoveredby',
  // Newer MariaDB only.
  'uuid_v4',
  'uuid_v7',
  'json_array_intersect',
  'json_key_value',
  'json_object_filter_keys',
  'json_object_to_array',
  'months_between',
  'to_date',
  'to_number',
  'trunc',
  'vec_distance',
  'vec_distance_cosine',
  'vec_distance_euclidean',
  'vec_fromtext',
  'vec_totext',
]);

/** Calls with the grammar's own syntax, and a few that need particular arguments. */
const MYSQL_SAMPLES: Record<string, string> = {
  cast: 'SELECT CAST(1 AS CHAR)',
  convert: "SELECT CONVERT('a' USING utf8mb4)",
  row_number: 'SELECT ROW_NUMBER() OVER ()',
  rank: 'SELECT RANK() OVER (ORDER BY 1)',
  dense_rank: 'SELECT DENSE_RANK() OVER (ORDER BY 1)',
  percent_rank: 'SELECT PERCENT_RANK() OVER (ORDER BY 1)',
  cume_dist: 'SELECT CUME_DIST() OVER (ORDER BY 1)',
  ntile: 'SELECT NTILE(2) OVER (ORDER BY 1)',
  lag: 'SELECT LAG(1) OVER (ORDER BY 1)',
  lead: 'SELECT LEAD(1, 1) OVER (ORDER BY 1)',
  first_value: 'SELECT FIRST_VALUE(1) OVER (ORDER BY 1)',
  nth_value: 'SELECT NTH_VALUE(1, 1) OVER (ORDER BY 1)',
  median: 'SELECT MEDIAN(1) OVER ()',
  percentile_cont: 'SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY 1) OVER ()',
  percentile_disc: 'SELECT PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY 1) OVER ()',
  position: "SELECT POSITION('b' IN 'abc')",
  date_add: "SELECT DATE_ADD('2020-01-01', INTERVAL 1 DAY)",
  date_sub: "SELECT DATE_SUB('2020-01-01', INTERVAL 1 DAY)",
  extract: "SELECT EXTRACT(YEAR FROM '2020-01-01')",
  get_format: "SELECT GET_FORMAT(DATE, 'ISO')",
  timestampadd: "SELECT TIMESTAMPADD(DAY, 1, '2020-01-01')",
  timestampdiff: "SELECT TIMESTAMPDIFF(DAY, '2020-01-01', '2020-02-01')",
  column_get: "SELECT COLUMN_GET(COLUMN_CREATE('a', 1), 'a' AS INT)",
  column_add: "SELECT COLUMN_JSON(COLUMN_ADD(COLUMN_CREATE('a', 1), 'b', 2))",
  json_table: "SELECT * FROM JSON_TABLE('[1, 2]', '$[*]' COLUMNS (x INT PATH '$')) AS jt",
  st_relate: "SELECT ST_RELATE(POINT(1, 1), POINT(1, 1), 'T*F**FFF2')",
  // Well-known functions, written out so that the read-only run below is easy to audit.
  if: 'SELECT IF(1, 2, 3)',
  ifnull: 'SELECT IFNULL(NULL, 1)',
  coalesce: 'SELECT COALESCE(NULL, 1)',
  nullif: 'SELECT NULLIF(1, 1)',
  insert: "SELECT INSERT('abcdef', 2, 3, 'XY')",
  replace: "SELECT REPLACE('abc', 'b', 'x')",
  left: "SELECT LEFT('abc', 2)",
  right: "SELECT RIGHT('abc', 2)",
  char: 'SELECT CHAR(65, 66)',
  trim: "SELECT TRIM(LEADING 'x' FROM 'xxa')",
  substring: "SELECT SUBSTRING('abc' FROM 2 FOR 1)",
  group_concat: "SELECT GROUP_CONCAT(x ORDER BY x SEPARATOR ',') FROM (SELECT 1 AS x UNION SELECT 2) t",
  count: 'SELECT COUNT(DISTINCT 1)',
  json_arrayagg: 'SELECT JSON_ARRAYAGG(1)',
  json_objectagg: "SELECT JSON_OBJECTAGG('k', 1)",
  json_value: "SELECT JSON_VALUE('{\"a\": 1}', '$.a')",
  json_extract: "SELECT JSON_EXTRACT('{\"a\": 1}', '$.a')",
  json_set: "SELECT JSON_SET('{\"a\": 1}', '$.b', 2)",
  json_detailed: 'SELECT JSON_DETAILED(\'{"a": 1}\')',
  regexp_replace: "SELECT REGEXP_REPLACE('abc', 'b', 'x')",
  regexp_substr: "SELECT REGEXP_SUBSTR('abc', 'b')",
  md5: "SELECT MD5('a')",
  sha2: "SELECT SHA2('a', 256)",
  aes_encrypt: "SELECT AES_DECRYPT(AES_ENCRYPT('a', 'key'), 'key')",
  random_bytes: 'SELECT RANDOM_BYTES(8)',
  uuid: 'SELECT UUID()',
  uuid_short: 'SELECT UUID_SHORT()',
  rand: 'SELECT RAND()',
  now: 'SELECT NOW(6)',
  sysdate: 'SELECT SYSDATE()',
  database: 'SELECT DATABASE()',
  current_user: 'SELECT CURRENT_USER()',
  version: 'SELECT VERSION()',
  connection_id: 'SELECT CONNECTION_ID()',
  found_rows: 'SELECT FOUND_ROWS()',
  row_count: 'SELECT ROW_COUNT()',
  charset: "SELECT CHARSET('a')",
  collation: "SELECT COLLATION('a')",
  coercibility: "SELECT COERCIBILITY('a')",
  convert_tz: "SELECT CONVERT_TZ('2020-01-01 00:00:00', '+00:00', '+01:00')",
  st_astext: 'SELECT ST_ASTEXT(POINT(1, 2))',
  st_distance: 'SELECT ST_DISTANCE(POINT(0, 0), POINT(3, 4))',
  st_geomfromtext: "SELECT ST_GEOMFROMTEXT('POINT(1 1)')",
  column_json: "SELECT COLUMN_JSON(COLUMN_CREATE('a', 1))",
  nvl2: 'SELECT NVL2(NULL, 1, 2)',
  sformat: "SELECT SFORMAT('{} {}', 1, 2)",
  natural_sort_key: "SELECT NATURAL_SORT_KEY('a10')",
  weight_string: "SELECT WEIGHT_STRING('a')",
  format: 'SELECT FORMAT(1234.5, 2)',
  interval: 'SELECT INTERVAL(5, 1, 10)',
};

/** Arguments tried in turn on the remaining functions until one call is accepted. */
const GEOMETRIES = [
  'POINT(1, 1)',
  "ST_GEOMFROMTEXT('LINESTRING(0 0, 1 1)')",
  "ST_GEOMFROMTEXT('POLYGON((0 0, 1 0, 1 1, 0 0))')",
  "ST_GEOMFROMTEXT('MULTIPOINT(0 0, 1 1)')",
  "ST_GEOMFROMTEXT('GEOMETRYCOLLECTION(POINT(1 1))')",
];
const MYSQL_ARGUMENT_LISTS = [
  '',
  '1',
  "'a'",
  '1, 1',
  "'a', 'b'",
  "'a', 1",
  '1, 1, 1',
  "'a', 1, 1",
  "'a', 'b', 'c'",
  "'a', 1, 'b'",
  '1, 1, 1, 1',
  "'a', 1, 1, 'b'",
  ...GEOMETRIES.flatMap((g) => [g, `${g}, 1`, `${g}, ${g}`]),
  "'POINT(1 1)'",
  'ST_ASWKB(POINT(1, 1))',
  `'{"a": 1}'`,
  `'{"a": 1}', '$.a'`,
  `'[1]', '$[0]', 2`,
  `'{"a": 1}', 'one', '$.a'`,
  "'[1]', '[1]'",
  'NOW()',
  'NOW(), NOW()',
  "'2020-01-01'",
  "'2020-01-01', 1",
  "'2020-01-01', '2020-02-01'",
  "'10:00:00', '01:00:00'",
  "'1.2.3.4'",
  "'::1'",
  "INET6_ATON('::1')",
  "'2020-01-01', '%Y-%m-%d'",
];
const PROBE_ARGUMENT_LISTS = ['', '1', '1, 1', '1, 1, 1', '1, 1, 1, 1', "'a'", "'a', 'b'"];

/** The keyword before `(` in a statement MariaDB accepts. */
const MYSQL_KEYWORD_STATEMENTS: Record<string, string> = {
  in: 'SELECT 1 IN(1, 2)',
  exists: 'SELECT EXISTS(SELECT 1)',
  any: 'SELECT 1 = ANY(SELECT 1)',
  some: 'SELECT 1 = SOME(SELECT 1)',
  all: 'SELECT 1 = ALL(SELECT 1)',
  not: 'SELECT NOT(0)',
  and: 'SELECT 1 AND(1)',
  or: 'SELECT 0 OR(1)',
  xor: 'SELECT 1 XOR(0)',
  like: "SELECT 'a' LIKE('a')",
  rlike: "SELECT 'a' RLIKE('a')",
  regexp: "SELECT 'a' REGEXP('a')",
  between: 'SELECT 1 BETWEEN(0) AND 2',
  div: 'SELECT 5 DIV(2)',
  binary: "SELECT BINARY('a')",
  select: 'SELECT(1)',
  distinct: 'SELECT DISTINCT(a) FROM u',
  distinctrow: 'SELECT DISTINCTROW(a) FROM u',
  from: 'SELECT * FROM(SELECT 1) AS x',
  join: 'SELECT * FROM u JOIN(tp) ON 1',
  on: 'SELECT * FROM u JOIN tp ON(u.a = tp.a)',
  using: 'SELECT * FROM u JOIN tp USING(a)',
  where: 'SELECT * FROM u WHERE(a > 0)',
  by: 'SELECT a FROM u ORDER BY(a)',
  having: 'SELECT a FROM u GROUP BY a HAVING(a > 0)',
  union: 'SELECT 1 UNION(SELECT 2)',
  intersect: 'SELECT 1 INTERSECT(SELECT 1)',
  except: 'SELECT 1 EXCEPT(SELECT 2)',
  as: 'WITH c AS(SELECT 1) SELECT * FROM c',
  straight_join: 'SELECT STRAIGHT_JOIN(1)',
  high_priority: 'SELECT HIGH_PRIORITY(1)',
  sql_cache: 'SELECT SQL_CACHE(1)',
  sql_no_cache: 'SELECT SQL_NO_CACHE(1)',
  sql_calc_found_rows: 'SELECT SQL_CALC_FOUND_ROWS(1)',
  sql_buffer_result: 'SELECT SQL_BUFFER_RESULT(1)',
  sql_small_result: 'SELECT SQL_SMALL_RESULT(1)',
  sql_big_result: 'SELECT SQL_BIG_RESULT(1)',
  case: 'SELECT CASE(1) WHEN 1 THEN 2 END',
  when: 'SELECT CASE WHEN(1) THEN 2 END',
  then: 'SELECT CASE WHEN 1 THEN(2) END',
  else: 'SELECT CASE WHEN 0 THEN 1 ELSE(2) END',
  row: 'SELECT ROW(1, 2) = ROW(1, 2)',
  values: 'VALUES(1, 2)',
  value: 'SELECT VALUE(a) FROM u',
  over: 'SELECT ROW_NUMBER() OVER(ORDER BY a) FROM u',
  group: 'SELECT PERCENTILE_CONT(0.5) WITHIN GROUP(ORDER BY a) OVER () FROM u',
  match: "SELECT MATCH(b) AGAINST('x') FROM tf",
  index: 'SELECT * FROM u USE INDEX(ka)',
  key: 'SELECT * FROM u FORCE KEY(ka)',
  partition: 'SELECT * FROM tp PARTITION(p0)',
  both: "SELECT TRIM(BOTH('x') FROM 'xax')",
  leading: "SELECT TRIM(LEADING('x') FROM 'xax')",
  trailing: "SELECT TRIM(TRAILING('x') FROM 'xax')",
  to: "SELECT * FROM tv FOR SYSTEM_TIME FROM '2000-01-01' TO(NOW())",
  explain: 'EXPLAIN(SELECT 1)',
  describe: 'DESCRIBE(SELECT 1)',
  desc: 'DESC(SELECT 1)',
  analyze: 'ANALYZE(SELECT 1)',
  json: 'EXPLAIN FORMAT=JSON(SELECT 1)',
  char: 'SELECT CAST(1 AS CHAR(10))',
  character: 'SELECT CAST(1 AS CHARACTER(10))',
  varchar: 'SELECT CAST(1 AS VARCHAR(10))',
  varcharacter: 'SELECT CAST(1 AS VARCHARACTER(10))',
  nchar: 'SELECT CAST(1 AS NCHAR(10))',
  decimal: 'SELECT CAST(1 AS DECIMAL(10, 2))',
  dec: 'SELECT CAST(1 AS DEC(10, 2))',
  double: 'SELECT CAST(1 AS DOUBLE(10, 2))',
  datetime: 'SELECT CAST(NOW() AS DATETIME(6))',
  time: 'SELECT CAST(NOW() AS TIME(6))',
};
// The remaining type names, as JSON_TABLE column types.
for (const [type, size] of Object.entries({
  nvarchar: '4',
  varbinary: '4',
  numeric: '10, 2',
  fixed: '10, 2',
  float: '4',
  float4: '4',
  real: '10, 2',
  int: '4',
  integer: '4',
  int1: '4',
  int2: '4',
  int3: '4',
  int4: '4',
  int8: '4',
  tinyint: '4',
  smallint: '4',
  mediumint: '4',
  middleint: '4',
  bigint: '4',
  bit: '4',
  text: '4',
  blob: '4',
  timestamp: '4',
  year: '4',
})) {
  MYSQL_KEYWORD_STATEMENTS[type] = `SELECT * FROM JSON_TABLE('[1]', '$[*]' COLUMNS (x ${type.toUpperCase()}(${size}) PATH '$')) AS jt`;
}

/** Error numbers meaning "no built-in of that name": a stored function was looked for
 * (1305, 1630) or the name cannot be followed by this argument list at all (1064). */
const NOT_BUILT_IN = new Set([1305, 1630, 1064]);

function errno(error: unknown): number | undefined {
  return (error as { errno?: number }).errno;
}

describe('MySQL/MariaDB allowlist on the real MariaDB', () => {
  const schema = `dbq_allowlists_${process.pid}`;
  let conn: mysql.Connection;
  let serverVersion = '';

  beforeAll(async () => {
    const admin = await mysql.createConnection(MYSQL_URL);
    await admin.query(`DROP DATABASE IF EXISTS ${schema}`);
    await admin.query(`CREATE DATABASE ${schema}`);
    await admin.end();
    // mysql2's default client flags include IGNORE_SPACE, as on dbq's own connections.
    conn = await mysql.createConnection({ uri: MYSQL_URL, database: schema });
    await conn.query('CREATE TABLE u (a INT, b VARCHAR(20), KEY ka (a))');
    await conn.query('CREATE TABLE tp (a INT) PARTITION BY HASH (a) PARTITIONS 2');
    await conn.query('CREATE TABLE tv (a INT) WITH SYSTEM VERSIONING');
    await conn.query('CREATE TABLE tf (b VARCHAR(20), FULLTEXT (b)) ENGINE=InnoDB');
    const [rows] = await conn.query('SELECT VERSION() AS v');
    serverVersion = String((rows as Array<{ v: string }>)[0].v);
  });

  afterAll(async () => {
    await conn?.end();
    const admin = await mysql.createConnection(MYSQL_URL);
    await admin.query(`DROP DATABASE IF EXISTS ${schema}`);
    await admin.end();
  });

  /** Whether the server parses `name(…)` as its own function: prepared, never executed, in an
   * empty schema, so no stored function can answer for it. */
  async function isBuiltIn(name: string): Promise<boolean> {
    const statements =
      MYSQL_SAMPLES[name] !== undefined ? [MYSQL_SAMPLES[name]] : PROBE_ARGUMENT_LISTS.map((args) => `SELECT ${name}(${args})`);
    for (const sql of statements) {
      try {
        await conn.query(`PREPARE allowlist_probe FROM ${conn.escape(sql)}`);
        return true;
      } catch (error) {
        const code = errno(error);
        if (code !== undefined && !NOT_BUILT_IN.has(code)) return true; // e.g. a wrong argument type
      }
    }
    return false;
  }

  it('lists lower-case names only, and no name in both sets that is not also a function', () => {
    for (const name of [...MYSQL_FUNCTIONS, ...MYSQL_PAREN_KEYWORDS]) expect(name).toMatch(/^[a-z_][a-z0-9_]*$/);
    const both = [...MYSQL_PAREN_KEYWORDS].filter((name) => MYSQL_FUNCTIONS.has(name)).sort();
    expect(both).toEqual(['char', 'time', 'timestamp', 'year']);
  });

  it('finds every listed function built into this server, except the names documented as absent', async () => {
    const absent: string[] = [];
    for (const name of MYSQL_FUNCTIONS) {
      if (!(await isBuiltIn(name))) absent.push(name);
    }
    for (const name of NOT_IN_MARIADB_10_11) expect(MYSQL_FUNCTIONS.has(name), name).toBe(true);
    const undocumented = absent.filter((name) => !NOT_IN_MARIADB_10_11.has(name));
    expect(undocumented, 'listed but not built in, and not documented as MySQL-only/newer').toEqual([]);
    if (serverVersion.startsWith('10.11.')) expect(absent.sort()).toEqual([...NOT_IN_MARIADB_10_11].sort());
  });

  it('classifies every function of information_schema.SQL_FUNCTIONS as allowed or excluded', async () => {
    const [rows] = await conn.query('SELECT FUNCTION AS name FROM information_schema.SQL_FUNCTIONS');
    const unclassified = (rows as Array<{ name: string }>)
      .map((row) => row.name.toLowerCase())
      .filter((name) => !MYSQL_FUNCTIONS.has(name) && MYSQL_EXCLUDED[name] === undefined);
    expect(unclassified).toEqual([]);
  });

  it('runs every listed function this server has inside START TRANSACTION READ ONLY', async () => {
    const samples = Object.keys(MYSQL_SAMPLES);
    expect(samples.length).toBeGreaterThanOrEqual(40);
    for (const name of samples) expect(MYSQL_FUNCTIONS.has(name), name).toBe(true);

    await conn.query('START TRANSACTION READ ONLY');
    const failed: string[] = [];
    let ran = 0;
    try {
      for (const name of MYSQL_FUNCTIONS) {
        if (NOT_IN_MARIADB_10_11.has(name)) continue;
        const statements =
          MYSQL_SAMPLES[name] !== undefined ? [MYSQL_SAMPLES[name]] : MYSQL_ARGUMENT_LISTS.map((args) => `SELECT ${name}(${args})`);
        let ok = false;
        for (const sql of statements) {
          try {
            await conn.query(sql);
            ok = true;
            break;
          } catch {
            // Try the next argument list.
          }
        }
        if (ok) ran++;
        else failed.push(name);
      }
      // Still the same read-only transaction: nothing above ended or escaped it.
      await expect(conn.query('INSERT INTO u VALUES (1, NULL)')).rejects.toMatchObject({ errno: 1792 });
    } finally {
      await conn.query('ROLLBACK');
    }
    expect(failed).toEqual([]);
    expect(ran).toBe(MYSQL_FUNCTIONS.size - NOT_IN_MARIADB_10_11.size);
  });

  it('accepts each keyword directly before a parenthesis in a read statement', async () => {
    expect(Object.keys(MYSQL_KEYWORD_STATEMENTS).sort()).toEqual([...MYSQL_PAREN_KEYWORDS].sort());
    const rejected: string[] = [];
    for (const [keyword, sql] of Object.entries(MYSQL_KEYWORD_STATEMENTS)) {
      expect(sql.toLowerCase(), keyword).toMatch(new RegExp(`\\b${keyword}\\(`));
      try {
        await conn.query(`PREPARE allowlist_probe FROM ${conn.escape(sql)}`);
      } catch (error) {
        rejected.push(`${keyword}: ${(error as Error).message}`);
      }
    }
    expect(rejected).toEqual([]);
  });

  it('reaches no stored function through a keyword, with or without IGNORE_SPACE', async () => {
    const names = [...MYSQL_PAREN_KEYWORDS];
    for (const name of names) {
      await conn.query(`CREATE FUNCTION \`${name}\`(x INT) RETURNS INT DETERMINISTIC RETURN 7777`);
    }
    const reached: string[] = [];
    const plain = await mysql.createConnection({ uri: MYSQL_URL, database: schema });
    try {
      await plain.query("SET SESSION sql_mode = REPLACE(@@sql_mode, 'IGNORE_SPACE', '')");
      for (const session of [conn, plain]) {
        for (const name of names) {
          for (const sql of [`SELECT ${name}(1) AS r`, `SELECT ${name} (1) AS r`]) {
            try {
              const [rows] = await session.query(sql);
              if (JSON.stringify(rows).includes('7777')) reached.push(sql);
            } catch {
              // A syntax error: the keyword is not a function name.
            }
          }
        }
      }
      // The same check sees a stored function where there is one: quoted, it is reached.
      const [rows] = await conn.query('SELECT `over`(1) AS r');
      expect((rows as Array<{ r: number }>)[0].r).toBe(7777);
    } finally {
      await plain.end();
      for (const name of names) await conn.query(`DROP FUNCTION IF EXISTS \`${name}\``);
    }
    expect(reached).toEqual([]);
  });

  it('pins why the call gate must refuse quoted and qualified names (stored functions win)', async () => {
    await conn.query('CREATE FUNCTION `left`(x INT, y INT) RETURNS INT DETERMINISTIC RETURN 2000');
    await conn.query('CREATE FUNCTION `abs`(x INT) RETURNS INT DETERMINISTIC RETURN 3000');
    await conn.query('CREATE FUNCTION `json_table`(x INT) RETURNS INT DETERMINISTIC RETURN 4000');
    try {
      const [rows] = await conn.query(
        `SELECT LEFT('abc', 2) AS bare, \`left\`(1, 2) AS quoted, \`abs\`(-1) AS quoted_native,
                ${schema}.abs(-1) AS qualified, json_table(1) AS expression_json_table`,
      );
      expect((rows as Array<Record<string, unknown>>)[0]).toEqual({
        bare: 'ab',
        quoted: 2000,
        quoted_native: 1,
        qualified: 3000,
        expression_json_table: 4000,
      });
    } finally {
      for (const name of ['left', 'abs', 'json_table']) await conn.query(`DROP FUNCTION \`${name}\``);
    }
  });

  it('pins why DEFAULT(col) is excluded: it can advance a sequence', async () => {
    await conn.query('CREATE SEQUENCE seq_default');
    await conn.query('CREATE TABLE with_default (id INT, n BIGINT DEFAULT (NEXT VALUE FOR seq_default))');
    await conn.query('INSERT INTO with_default (id) VALUES (1)');
    const next = async () => {
      const [rows] = await conn.query('SELECT NEXTVAL(seq_default) AS n');
      return Number((rows as Array<{ n: number }>)[0].n);
    };
    const before = await next();
    await conn.query('SELECT DEFAULT(n) FROM with_default');
    expect(await next()).toBe(before + 2);
  });

  it('allows none of the excluded names', () => {
    for (const name of Object.keys(MYSQL_EXCLUDED)) {
      expect(MYSQL_FUNCTIONS.has(name), name).toBe(false);
      expect(MYSQL_PAREN_KEYWORDS.has(name), name).toBe(false);
    }
    for (const name of [...MYSQL_FUNCTIONS, ...MYSQL_PAREN_KEYWORDS]) {
      for (const prefix of MYSQL_EXCLUDED_PREFIXES) expect(name.startsWith(prefix), name).toBe(false);
      expect(name.endsWith('_udf'), name).toBe(false);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// SQLite.

/** Allowlisted names that pragma_function_list does not show: table-valued functions
 * (eponymous virtual tables) and the CAST keyword-function. */
const SQLITE_NOT_IN_FUNCTION_LIST: Record<string, string> = {
  cast: 'SELECT CAST(1 AS TEXT)',
  json_each: "SELECT * FROM json_each('[1, 2]')",
  json_tree: "SELECT * FROM json_tree('[1, 2]')",
  jsonb_each: "SELECT * FROM jsonb_each('[1, 2]')",
  jsonb_tree: "SELECT * FROM jsonb_tree('[1, 2]')",
  dbstat: "SELECT * FROM dbstat('main')",
  pragma_table_info: "SELECT * FROM pragma_table_info('t')",
  pragma_table_xinfo: "SELECT * FROM pragma_table_xinfo('t')",
  pragma_table_list: "SELECT * FROM pragma_table_list('t')",
  pragma_index_list: "SELECT * FROM pragma_index_list('t')",
  pragma_index_info: "SELECT * FROM pragma_index_info('ti')",
  pragma_index_xinfo: "SELECT * FROM pragma_index_xinfo('ti')",
  pragma_foreign_key_list: "SELECT * FROM pragma_foreign_key_list('c')",
  pragma_function_list: 'SELECT * FROM pragma_function_list()',
  pragma_collation_list: 'SELECT * FROM pragma_collation_list()',
  pragma_database_list: 'SELECT * FROM pragma_database_list()',
  pragma_module_list: 'SELECT * FROM pragma_module_list()',
  pragma_pragma_list: 'SELECT * FROM pragma_pragma_list()',
  pragma_compile_options: 'SELECT * FROM pragma_compile_options()',
};

const SQLITE_SAMPLES: Record<string, string> = {
  ...SQLITE_NOT_IN_FUNCTION_LIST,
  likelihood: 'SELECT likelihood(1, 0.5)',
  row_number: 'SELECT row_number() OVER () FROM t',
  rank: 'SELECT rank() OVER (ORDER BY a) FROM t',
  dense_rank: 'SELECT dense_rank() OVER (ORDER BY a) FROM t',
  percent_rank: 'SELECT percent_rank() OVER (ORDER BY a) FROM t',
  cume_dist: 'SELECT cume_dist() OVER (ORDER BY a) FROM t',
  ntile: 'SELECT ntile(2) OVER (ORDER BY a) FROM t',
  lag: 'SELECT lag(a) OVER (ORDER BY a) FROM t',
  lead: 'SELECT lead(a, 1, 0) OVER (ORDER BY a) FROM t',
  first_value: 'SELECT first_value(a) OVER (ORDER BY a) FROM t',
  last_value: 'SELECT last_value(a) OVER (ORDER BY a) FROM t',
  nth_value: 'SELECT nth_value(a, 1) OVER (ORDER BY a) FROM t',
  bm25: "SELECT bm25(ft) FROM ft WHERE ft MATCH 'hello'",
  highlight: "SELECT highlight(ft, 0, '[', ']') FROM ft WHERE ft MATCH 'hello'",
  snippet: "SELECT snippet(ft, 0, '[', ']', '…', 5) FROM ft WHERE ft MATCH 'hello'",
  fts5_get_locale: "SELECT fts5_get_locale(ft, 0) FROM ft WHERE ft MATCH 'hello'",
  match: "SELECT count(*) FROM ft3 WHERE match('hello', ft3)",
  matchinfo: "SELECT matchinfo(ft3) FROM ft3 WHERE ft3 MATCH 'hello'",
  offsets: "SELECT offsets(ft3) FROM ft3 WHERE ft3 MATCH 'hello'",
  rtreedepth: 'SELECT rtreedepth(data) FROM rt_node',
  rtreenode: 'SELECT rtreenode(1, data) FROM rt_node',
  geopoly_regular: 'SELECT geopoly_regular(0, 0, 1, 4)',
  geopoly_xform: "SELECT geopoly_xform('[[0,0],[1,0],[1,1],[0,0]]', 1, 0, 0, 1, 0, 0)",
  json_group_object: "SELECT json_group_object('k', a) FROM t",
  strftime: "SELECT strftime('%Y', '2020-01-01')",
  timediff: "SELECT timediff('2020-01-02', '2020-01-01')",
  printf: "SELECT printf('%d-%s', 1, 'a')",
  percentile: 'SELECT percentile(a, 50) FROM t',
  random: 'SELECT random()',
  changes: 'SELECT changes(), total_changes(), last_insert_rowid()',
};
const SQLITE_ARGUMENT_LISTS = [
  '',
  '1',
  "'a'",
  '1, 1',
  "'a', 'b'",
  "'a', 1",
  "'a', 1, 1",
  "'a', 'b', 'c'",
  '1, 1, 1',
  "'[1]'",
  "'[1]', '$[0]'",
  "'[1]', '$[0]', 2",
  `'{"a":1}', '{"b":2}'`,
  "'2020-01-01'",
  "x'0000'",
];

const SQLITE_KEYWORD_STATEMENTS: Record<string, string> = {
  in: 'SELECT 1 WHERE 1 IN(1, 2)',
  exists: 'SELECT EXISTS(SELECT 1)',
  not: 'SELECT NOT(0)',
  and: 'SELECT 1 AND(1)',
  or: 'SELECT 0 OR(1)',
  is: 'SELECT 1 IS(1)',
  between: 'SELECT 1 BETWEEN(0) AND 2',
  escape: "SELECT 'a' LIKE 'a' ESCAPE('!')",
  select: 'SELECT(1)',
  distinct: 'SELECT DISTINCT(a) FROM t',
  all: 'SELECT ALL(a) FROM t',
  from: 'SELECT * FROM(SELECT 1)',
  join: 'SELECT * FROM t JOIN(u) ON 1',
  on: 'SELECT * FROM t JOIN u ON(t.a = u.a)',
  using: 'SELECT * FROM t JOIN u USING(a)',
  where: 'SELECT * FROM t WHERE(a > 0)',
  by: 'SELECT * FROM t ORDER BY(a)',
  having: 'SELECT count(*) FROM t GROUP BY a HAVING(count(*) > 0)',
  limit: 'SELECT 1 LIMIT(1)',
  offset: 'SELECT 1 LIMIT 1 OFFSET(0)',
  as: 'WITH c AS(SELECT 1) SELECT * FROM c',
  materialized: 'WITH c AS MATERIALIZED(SELECT 1) SELECT * FROM c',
  over: 'SELECT row_number() OVER(ORDER BY a) FROM t',
  filter: 'SELECT count(*) FILTER(WHERE a > 0) FROM t',
  rows: 'SELECT sum(a) OVER (ORDER BY a ROWS(1) PRECEDING) FROM t',
  range: 'SELECT sum(a) OVER (ORDER BY a RANGE(1) PRECEDING) FROM t',
  groups: 'SELECT sum(a) OVER (ORDER BY a GROUPS(1) PRECEDING) FROM t',
  case: 'SELECT CASE(1) WHEN 1 THEN 2 END',
  when: 'SELECT CASE WHEN(1) THEN 2 END',
  then: 'SELECT CASE WHEN 1 THEN(2) END',
  else: 'SELECT CASE WHEN 0 THEN 1 ELSE(2) END',
  values: 'VALUES(1, 2)',
};
for (const type of [
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
]) {
  SQLITE_KEYWORD_STATEMENTS[type] = `SELECT CAST(1 AS ${type.toUpperCase()}(10))`;
}

const SQLITE_DIRECTONLY = 0x80000;

describe('SQLite allowlist on the better-sqlite3 build', () => {
  let db: Database.Database;
  let registered: Map<string, number[]>;

  beforeAll(() => {
    db = new Database(':memory:');
    db.exec(`
      CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT);
      CREATE INDEX ti ON t (b);
      CREATE TABLE u (a INTEGER, c TEXT);
      CREATE TABLE c (x REFERENCES t (a));
      INSERT INTO t (b) VALUES ('x'), ('y');
      CREATE VIRTUAL TABLE ft USING fts5 (body);
      INSERT INTO ft VALUES ('hello world');
      CREATE VIRTUAL TABLE ft3 USING fts4 (body);
      INSERT INTO ft3 VALUES ('hello world');
      CREATE VIRTUAL TABLE rt USING rtree (id, x0, x1);
      INSERT INTO rt VALUES (1, 0, 1);
    `);
    registered = new Map();
    const rows = db.prepare('SELECT name, flags FROM pragma_function_list').all() as Array<{ name: string; flags: number }>;
    for (const row of rows) registered.set(row.name, [...(registered.get(row.name) ?? []), row.flags]);
  });

  afterAll(() => db?.close());

  it('lists lower-case names only, each in one set', () => {
    for (const name of [...SQLITE_FUNCTIONS, ...SQLITE_PAREN_KEYWORDS]) expect(name).toMatch(/^[a-z_][a-z0-9_]*$/);
    expect([...SQLITE_PAREN_KEYWORDS].filter((name) => SQLITE_FUNCTIONS.has(name))).toEqual([]);
  });

  it('finds every listed function in pragma_function_list, or as a table-valued or keyword function', () => {
    const missing = [...SQLITE_FUNCTIONS].filter((name) => !registered.has(name) && SQLITE_NOT_IN_FUNCTION_LIST[name] === undefined);
    expect(missing).toEqual([]);
    for (const [name, sql] of Object.entries(SQLITE_NOT_IN_FUNCTION_LIST)) {
      expect(SQLITE_FUNCTIONS.has(name), name).toBe(true);
      expect(registered.has(name), `${name} is in pragma_function_list after all`).toBe(false);
      expect(() => db.prepare(sql).all(), name).not.toThrow();
    }
  });

  it('classifies every function the build registers as allowed or excluded', () => {
    const unclassified = [...registered.keys()]
      .filter((name) => /^[a-z_][a-z0-9_]*$/.test(name)) // not the -> and ->> operators
      .filter((name) => !SQLITE_FUNCTIONS.has(name) && SQLITE_EXCLUDED[name] === undefined);
    expect(unclassified).toEqual([]);
  });

  it('allows no function the build flags SQLITE_DIRECTONLY', () => {
    const direct = [...SQLITE_FUNCTIONS].filter((name) => (registered.get(name) ?? []).some((f) => (f & SQLITE_DIRECTONLY) !== 0));
    expect(direct).toEqual([]);
    for (const name of ['load_extension', 'fts3_tokenizer', 'geopoly_debug']) {
      expect(
        registered.get(name)?.every((f) => (f & SQLITE_DIRECTONLY) !== 0),
        name,
      ).toBe(true);
    }
  });

  it('runs every listed function with query_only set', () => {
    db.pragma('query_only = 1');
    const failed: string[] = [];
    try {
      for (const name of SQLITE_FUNCTIONS) {
        const statements =
          SQLITE_SAMPLES[name] !== undefined ? [SQLITE_SAMPLES[name]] : SQLITE_ARGUMENT_LISTS.map((args) => `SELECT ${name}(${args})`);
        if (
          !statements.some((sql) => {
            try {
              db.prepare(sql).all();
              return true;
            } catch {
              return false;
            }
          })
        )
          failed.push(name);
      }
      expect(() => db.exec("INSERT INTO t (b) VALUES ('z')")).toThrow(/readonly|query_only/i);
    } finally {
      db.pragma('query_only = 0');
    }
    expect(failed).toEqual([]);
  });

  it('accepts each keyword directly before a parenthesis, and no keyword is a function outside the list', () => {
    expect(Object.keys(SQLITE_KEYWORD_STATEMENTS).sort()).toEqual([...SQLITE_PAREN_KEYWORDS].sort());
    const rejected: string[] = [];
    for (const [keyword, sql] of Object.entries(SQLITE_KEYWORD_STATEMENTS)) {
      expect(sql.toLowerCase(), keyword).toMatch(new RegExp(`\\b${keyword}\\(`));
      try {
        db.prepare(sql);
      } catch (error) {
        rejected.push(`${keyword}: ${(error as Error).message}`);
      }
    }
    expect(rejected).toEqual([]);
    expect([...SQLITE_PAREN_KEYWORDS].filter((name) => registered.has(name))).toEqual([]);
  });

  it('pins why table-valued pragmas are listed one by one: pragma_optimize writes, without parentheses', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dbq-allowlists-'));
    const file = new Database(path.join(dir, 'optimize.db'));
    try {
      file.exec("CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT); CREATE INDEX tb ON t (b); INSERT INTO t (b) VALUES ('x'), ('y');");
      const tables = () =>
        (file.prepare("SELECT name FROM sqlite_schema WHERE name LIKE 'sqlite_stat%'").all() as Array<{ name: string }>).map((r) => r.name);
      expect(tables()).toEqual([]);
      file.prepare('SELECT * FROM pragma_optimize').all();
      expect(tables()).toContain('sqlite_stat1');
    } finally {
      file.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('allows none of the excluded names', () => {
    for (const name of Object.keys(SQLITE_EXCLUDED)) {
      expect(SQLITE_FUNCTIONS.has(name), name).toBe(false);
      expect(SQLITE_PAREN_KEYWORDS.has(name), name).toBe(false);
    }
    for (const name of SQLITE_FUNCTIONS) {
      if (name.startsWith('pragma_')) expect(SQLITE_NOT_IN_FUNCTION_LIST[name], name).toBeDefined();
    }
  });
});
