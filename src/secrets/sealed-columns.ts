// Every place in the store a value sealed by secret-box.ts is kept, with what it is bound to,
// and every other table named as holding none. `dbq secret rotate` re-seals the first list and
// refuses to run on a store with a table in neither (test/secret-rotate-tables.test.ts fails
// first): a new feature that seals something must say so here, or a rotation would leave its
// secrets under a key that is about to be thrown away.

export interface SealedColumn {
  table: string;
  column: string;
  /** The row's key column(s), to write the re-sealed value back. */
  key: string[];
  /** The additional data the value was sealed with (secret-box.ts), from its row. */
  boundTo(row: Record<string, unknown>): string;
}

export const SEALED_COLUMNS: readonly SealedColumn[] = [
  // Password, reader password, SSH key or password, TLS client key: src/connections/connection-fields.ts.
  { table: 'connections', column: 'secret', key: ['id'], boundTo: (row) => String(row.id) },
  // The identity provider's client secret: src/sso/sso-settings.ts binds it to `sso:<workspace id>`.
  { table: 'workspace_sso', column: 'client_secret', key: ['workspace_id'], boundTo: (row) => `sso:${String(row.workspace_id)}` },
];

/** Tables that hold no sealed value (hashes, public data, history, bookkeeping). */
export const UNSEALED_TABLES: ReadonlySet<string> = new Set([
  'workspaces',
  'users',
  'api_keys',
  'query_history',
  'web_sessions',
  'web_setup_tokens',
  'password_tokens',
  'connection_grants',
  'curated_tools',
  'audit_log',
  'connection_annotations',
  'sso_identities',
  'async_queries',
  'async_query_parts',
  'running_queries',
  'oauth_artifacts',
  'oauth_grants',
  'dbq_store_changes',
  'dbq_migrations',
  'dbq_migrations_lock',
  'query_history_search_state',
]);

/** Tables of the store in neither list. The SQLite history search index's partitions are
 * FTS5 tables and their shadows, which hold rowids and trigrams only. */
export function unclassifiedTables(tables: readonly string[]): string[] {
  const sealed = new Set(SEALED_COLUMNS.map((c) => c.table));
  return tables.filter((t) => !sealed.has(t) && !UNSEALED_TABLES.has(t) && !t.startsWith('query_history_search_'));
}
