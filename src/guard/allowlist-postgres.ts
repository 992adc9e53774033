// What PostgreSQL's catalog cannot tell us about functions, vetted by hand. The rule itself
// (src/guard/read-policy.ts): a function may run in a read when every overload of its name is
// IMMUTABLE or STABLE in the connection's own pg_proc — the server's promise that it does not
// modify the database — or when it is on the short list of volatile functions below that only
// read. Everything else is refused, so a function nobody listed (a new core function, an
// extension's, a user's) is refused by default rather than allowed by default.
//
// The volatility label is not enough on its own, in both directions:
// - Some STABLE functions run SQL text or read a relation by name, out of the parser's sight:
//   whatever the string holds runs, including every refused function (RUNS_SQL_TEXT).
// - Some STABLE functions still have an effect: txid_current() assigns a transaction id even
//   inside BEGIN READ ONLY (STABLE_WITH_EFFECTS).
// - Whole extensions are built to reach outside a read (remote SQL, raw pages, server files):
//   none of their functions is allowed whatever its label (DISTRUSTED_EXTENSIONS).

/** Volatile core functions (schema pg_catalog only) that read and change nothing: random
 * numbers and clocks, sizes and positions the catalog views use. A user's `public.random()`
 * does not ride on this list. */
export const HARMLESS_VOLATILE_CORE: ReadonlySet<string> = new Set([
  // Random values and clocks: no state but the PRNG's, which dbq reseeds after every read.
  'random',
  'random_normal',
  'clock_timestamp',
  'timeofday',
  'gen_random_uuid',
  // Sizes and positions (pg_relation_size & co. stat files of relations the role can see).
  'pg_relation_size',
  'pg_table_size',
  'pg_indexes_size',
  'pg_total_relation_size',
  'pg_database_size',
  'pg_tablespace_size',
  'pg_current_wal_lsn',
  'pg_current_wal_insert_lsn',
  'pg_current_wal_flush_lsn',
  'pg_last_wal_receive_lsn',
  'pg_last_wal_replay_lsn',
  'pg_last_xact_replay_timestamp',
  'pg_is_in_recovery',
  'pg_is_wal_replay_paused',
  'pg_get_wal_replay_pause_state',
  'pg_jit_available',
  'pg_notification_queue_usage',
  'pg_xact_status',
  'txid_status',
  'pg_xact_commit_timestamp',
  'pg_xact_commit_timestamp_origin',
  'pg_last_committed_xact',
  // What catalog views call: pg_locks, pg_prepared_xacts, pg_sequences, partitions, stats.
  'pg_lock_status',
  'pg_blocking_pids',
  'pg_safe_snapshot_blocking_pids',
  'pg_prepared_xact',
  'pg_sequence_last_value',
  'pg_partition_tree',
  'pg_partition_ancestors',
  'pg_get_multixact_members',
  'pg_stat_have_stats',
  'pg_stat_get_recovery_prefetch',
  'pg_get_backend_memory_contexts',
  'pg_get_shmem_allocations',
  'pg_get_wal_resource_managers',
  'pg_collation_actual_version',
  'pg_database_collation_actual_version',
  'pg_show_replication_origin_status',
  'current_query',
  // TABLESAMPLE methods' handlers: they return the method's callbacks, which only sample.
  'bernoulli',
  'system',
  'pg_stat_get_xact_blocks_fetched',
  'pg_stat_get_xact_blocks_hit',
  'pg_stat_get_xact_function_calls',
  'pg_stat_get_xact_function_self_time',
  'pg_stat_get_xact_function_total_time',
  'pg_stat_get_xact_numscans',
  'pg_stat_get_xact_tuples_deleted',
  'pg_stat_get_xact_tuples_fetched',
  'pg_stat_get_xact_tuples_hot_updated',
  'pg_stat_get_xact_tuples_inserted',
  'pg_stat_get_xact_tuples_returned',
  'pg_stat_get_xact_tuples_updated',
]);

/** Volatile extension functions that only produce values, by extension. */
export const HARMLESS_VOLATILE_EXTENSION: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ['uuid-ossp', new Set(['uuid_generate_v1', 'uuid_generate_v1mc', 'uuid_generate_v4'])],
  ['pgcrypto', new Set(['gen_random_uuid', 'gen_random_bytes', 'gen_salt'])],
  ['tsm_system_rows', new Set(['system_rows'])],
  ['tsm_system_time', new Set(['system_time'])],
]);

/** Functions that run SQL text (or read a relation or cursor named by a string), in any
 * schema, whatever their volatility: the text is out of the parser's sight. Core and
 * extensions (tablefunc, xml2, dblink). Matched by name and by the prefixes below. */
export const RUNS_SQL_TEXT: ReadonlySet<string> = new Set([
  'ts_stat',
  'ts_rewrite',
  'query_to_xml',
  'query_to_xmlschema',
  'query_to_xml_and_xmlschema',
  'cursor_to_xml',
  'cursor_to_xmlschema',
  'table_to_xml',
  'table_to_xmlschema',
  'table_to_xml_and_xmlschema',
  'schema_to_xml',
  'schema_to_xmlschema',
  'schema_to_xml_and_xmlschema',
  'database_to_xml',
  'database_to_xmlschema',
  'database_to_xml_and_xmlschema',
  'crosstab',
  'crosstab2',
  'crosstab3',
  'crosstab4',
  'connectby',
  'xpath_table',
]);
export const RUNS_SQL_TEXT_PREFIXES: readonly string[] = ['dblink', 'crosstab', 'query_to_', 'cursor_to_'];

/** STABLE in pg_catalog, yet not free of effects. */
export const STABLE_WITH_EFFECTS: ReadonlySet<string> = new Set([
  // Assign a transaction id even inside BEGIN READ ONLY (xid consumption is a write).
  'txid_current',
  'pg_current_xact_id',
  // Validators and event-trigger internals: not for SQL callers.
  'fmgr_c_validator',
  'fmgr_internal_validator',
  'fmgr_sql_validator',
  // Reads the server's configuration paths (pg_config) — a server-file read in spirit.
  'pg_config',
]);

/** Extensions whose every function is refused in a read: remote SQL (dblink, postgres_fdw),
 * XSLT/XPath over documents that may load external entities (xml2), server files (adminpack,
 * file_fdw), raw pages and visibility maps (pageinspect, pg_surgery, pg_visibility, amcheck,
 * pg_walinspect), buffer warming (pg_prewarm), large-object triggers (lo). */
export const DISTRUSTED_EXTENSIONS: ReadonlySet<string> = new Set([
  'dblink',
  'postgres_fdw',
  'xml2',
  'adminpack',
  'file_fdw',
  'pageinspect',
  'pg_surgery',
  'pg_visibility',
  'amcheck',
  'pg_walinspect',
  'pg_prewarm',
  'lo',
  'pg_buffercache',
  'pgstattuple',
  'pg_freespacemap',
  'old_snapshot',
]);

export function runsSqlText(name: string): boolean {
  const lower = name.toLowerCase();
  return RUNS_SQL_TEXT.has(lower) || RUNS_SQL_TEXT_PREFIXES.some((prefix) => lower.startsWith(prefix));
}
