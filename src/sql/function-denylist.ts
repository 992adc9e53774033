// Functions that make a SELECT something other than a read. A read-only transaction does not
// stop most of these: PostgreSQL lets `BEGIN READ ONLY` run pg_terminate_backend, set_config,
// pg_advisory_lock, pg_read_file and dblink (whose remote side is not read-only); MySQL's
// START TRANSACTION READ ONLY still runs GET_LOCK, SLEEP and LOAD_FILE; SQLite's query_only
// still runs load_extension and readfile. So this list is the only barrier for them.
//
// Matching is on the bare function name, case-insensitive, schema qualification stripped: the
// attacker picks `pg_catalog.pg_sleep`, `"PG_SLEEP"` or `` `SLEEP` `` spellings. A quoted
// upper-case name is a different function in PostgreSQL, but denying it too costs nothing.
// Prefixes cover whole families so a new variant (pg_try_advisory_xact_lock_shared, …) is
// denied without an edit here. Be generous: a false denial only sends the user to an admin key.

import type { EngineName } from '../engines/engine.ts';

interface Denylist {
  exact: ReadonlySet<string>;
  prefixes: readonly string[];
}

const POSTGRES: Denylist = {
  exact: new Set([
    // Other sessions and server state.
    'pg_terminate_backend', 'pg_cancel_backend', 'pg_reload_conf', 'pg_rotate_logfile',
    'pg_rotate_logfile_old', 'pg_log_backend_memory_contexts', 'pg_promote',
    'pg_switch_wal', 'pg_switch_xlog', 'pg_wal_replay_pause', 'pg_wal_replay_resume',
    'pg_xlog_replay_pause', 'pg_xlog_replay_resume', 'pg_import_system_collations',
    'pg_log_standby_snapshot', 'pg_sync_replication_slots', 'pg_replication_slot_advance',
    'pg_drop_replication_slot', 'pg_logical_emit_message', 'pg_stat_force_next_flush',
    'pg_prewarm', 'pg_truncate_visibility_map', 'pg_export_snapshot',
    // Session settings that outlive the statement (set_config(…, false) persists).
    'set_config', 'setseed',
    // Backups and restore points.
    'pg_start_backup', 'pg_stop_backup', 'pg_backup_start', 'pg_backup_stop',
    // Sequences write even inside a read-only transaction's snapshot rules.
    'nextval', 'setval',
    // Assigning a transaction id is a write to the xid space.
    'txid_current', 'pg_current_xact_id',
    // Notifications reach other sessions.
    'pg_notify',
    // Server files (adminpack and core).
    'pg_read_file', 'pg_read_file_old', 'pg_read_binary_file', 'pg_stat_file', 'pg_logdir_ls',
    // Sleeping holds a connection and its snapshot: a cheap denial of service.
    'pg_sleep', 'pg_sleep_for', 'pg_sleep_until',
    // Large objects (lo_* by prefix): lo_import/lo_export touch server files, the rest write
    // pg_largeobject or hold descriptors open.
    'lowrite', 'loread',
    // Run arbitrary SQL text given as a string argument, out of the parser's sight.
    'query_to_xml', 'query_to_xmlschema', 'query_to_xml_and_xmlschema', 'cursor_to_xml',
    'cursor_to_xmlschema', 'table_to_xml', 'table_to_xmlschema', 'table_to_xml_and_xmlschema',
    'schema_to_xml', 'schema_to_xmlschema', 'schema_to_xml_and_xmlschema', 'database_to_xml',
    'database_to_xmlschema', 'database_to_xml_and_xmlschema',
    // pg_stat_statements and friends.
    'pg_stat_statements_reset', 'pg_stat_clear_snapshot',
  ]),
  // Families: advisory locks, large objects, dblink (remote SQL), statistics resets, directory
  // listings, restore points and replication slots, adminpack file writes.
  prefixes: [
    'pg_advisory_', 'pg_try_advisory_', 'lo_', 'dblink', 'pg_stat_reset', 'pg_ls_',
    'pg_create_', 'pg_copy_', 'pg_replication_origin_', 'pg_logical_slot_', 'binary_upgrade_',
    'pg_file_',
  ],
};

const MYSQL: Denylist = {
  exact: new Set([
    // Named locks live beyond the statement and block other sessions.
    'get_lock', 'release_lock', 'release_all_locks', 'is_free_lock', 'is_used_lock',
    // Server files.
    'load_file',
    // Holding a connection: a cheap denial of service.
    'sleep', 'benchmark', 'master_pos_wait', 'source_pos_wait', 'master_gtid_wait',
    'wait_for_executed_gtid_set', 'wait_until_sql_thread_after_gtids',
    // NAME_CONST has a history of crashing servers; LAST_INSERT_ID(expr) sets session state.
    'name_const', 'last_insert_id',
    // MariaDB sequences advance on read.
    'nextval', 'setval',
    // lib_mysqludf_sys: shell commands from SQL.
    'sys_exec', 'sys_eval', 'sys_get', 'sys_set',
    // Plugin/component UDFs that change server configuration.
    'load_rewrite_rules', 'set_firewall_mode', 'normalize_statement',
    'audit_api_message_emit_udf',
  ]),
  prefixes: [
    'asynchronous_connection_failover_', 'group_replication_', 'keyring_', 'version_tokens_',
    'service_get_', 'service_release_', 'audit_log_', 'mysql_firewall_', 'firewall_',
    'read_firewall_', 'gen_dictionary_', 'masking_dictionary_', 'spider_', 'lib_mysqludf_',
  ],
};

const SQLITE: Denylist = {
  exact: new Set([
    // Loading native code is game over.
    'load_extension',
    // fileio / shell extensions: server files.
    'readfile', 'writefile', 'edit', 'fsdir', 'lsdir', 'sqlar_compress',
    // fts3_tokenizer(name, pointer) installs a tokenizer from a raw pointer (CVE-2019-8457 family).
    'fts3_tokenizer',
    // Run SQL text given as a string, out of the parser's sight.
    'eval', 'sha3_query',
    // ICU: changes the connection's collations.
    'icu_load_collation',
  ]),
  prefixes: ['zipfile', 'sqlite_dbpage'],
};

const DENYLISTS: Record<EngineName, Denylist> = { postgres: POSTGRES, mysql: MYSQL, sqlite: SQLITE };

/** The bare, lower-case name of a possibly schema-qualified, possibly quoted function name. */
export function normalizeFunctionName(qualifiedName: string | readonly string[]): string {
  const parts = typeof qualifiedName === 'string' ? qualifiedName.split('.') : qualifiedName;
  const last = parts.length > 0 ? parts[parts.length - 1] : '';
  return stripIdentifierQuotes(last.trim()).toLowerCase();
}

function stripIdentifierQuotes(name: string): string {
  const first = name[0];
  const last = name[name.length - 1];
  const quoted = (first === '"' && last === '"') || (first === '`' && last === '`')
    || (first === '[' && last === ']');
  return quoted && name.length >= 2 ? name.slice(1, -1) : name;
}

export function isSideEffectFunction(
  engine: EngineName,
  qualifiedName: string | readonly string[],
): boolean {
  const name = normalizeFunctionName(qualifiedName);
  const denylist = DENYLISTS[engine];
  return denylist.exact.has(name) || denylist.prefixes.some((prefix) => name.startsWith(prefix));
}

/** A verdict reason for a denied function, or undefined when the function may run in a read. */
export function sideEffectFunctionReason(
  engine: EngineName,
  qualifiedName: string | readonly string[],
): string | undefined {
  if (!isSideEffectFunction(engine, qualifiedName)) return undefined;
  return `Function ${normalizeFunctionName(qualifiedName)}() has side effects and is not allowed in a read`;
}
