// Row types of the metadata store, shared by the SQLite and PostgreSQL backends. Times are
// ISO-8601 UTC strings and booleans are 0/1 integers so one code path serves both dialects.

export interface WorkspaceRow {
  id: string;
  slug: string;
  name: string;
  plan: 'free' | 'professional' | 'enterprise';
  /** Longest lifetime of a new API key in days; null: no limit. */
  max_key_days: number | null;
  created_at: string;
}

export interface UserRow {
  id: string;
  workspace_id: string;
  email: string;
  role: 'admin' | 'read_only';
  password_hash: string | null;
  disabled_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface ApiKeyRow {
  id: string;
  workspace_id: string;
  user_id: string;
  name: string;
  prefix: string;
  hash: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** JSON KeyScope (src/access/scope.ts); null: the key is all of its user. */
  scope: string | null;
  expires_at: string | null;
  /** 1 once `key.expired` is in the audit log. */
  expiry_audited: number;
}

export interface ConnectionRow {
  id: string;
  workspace_id: string;
  name: string;
  engine: 'postgres' | 'mysql' | 'sqlite';
  host: string | null;
  port: number | null;
  database: string;
  username: string | null;
  ssl: number;
  read_only: number;
  max_connections: number;
  /** AES-256-GCM sealed JSON of the secrets ({password, readPassword, sshPrivateKey, sshPassword}); null when there are none. */
  secret: string | null;
  /** Reader credentials' user: every read logs in as it (pool-registry.ts forRead). */
  read_username: string | null;
  /** JSON ReadAccess of the credential reads use, from the last audit; null until known. */
  read_access: string | null;
  /** JSON {host, port, user, hostKey} of the SSH bastion (its key or password is in `secret`);
   * null when the database is dialled directly. */
  ssh: string | null;
  /** 1: every user of the workspace may use it (the default); 0: admins and connection_grants only. */
  grants_everyone: number;
  created_at: string;
  updated_at: string;
}

export interface HistoryRow {
  id: string;
  workspace_id: string;
  query_id: string;
  connection_id: string;
  connection_name: string;
  sql: string;
  statement_type: string;
  /** `running`: a write recorded before its statement was sent and not completed yet — or never,
   * when the process stopped in between (src/query/run.ts openHistory). */
  status: 'succeeded' | 'failed' | 'rejected' | 'timed_out' | 'canceled' | 'running';
  row_count: number | null;
  affected_rows: number | null;
  duration_ms: number;
  error: string | null;
  source: 'api' | 'mcp' | 'ai' | 'ui';
  api_key_id: string | null;
  api_key_name: string | null;
  user_id: string;
  user_email: string;
  created_at: string;
  /** The curated tool this entry ran, if any. */
  tool_name: string | null;
  tool_version: number | null;
}

/** A signed-in browser (src/console/sessions.ts). The cookie carries the token; only its hash is here. */
export interface WebSessionRow {
  id: string;
  workspace_id: string;
  user_id: string;
  token_hash: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
}

/** The one-time token printed by `dbq serve` for creating a workspace's first admin. */
export interface WebSetupTokenRow {
  workspace_id: string;
  token_hash: string;
  created_at: string;
}

/** A one-time link that sets a user's password (`dbq user create` without one, `dbq user
 * reset-link`, the users page's "Reset password"); only the SHA-256 of the token is kept. */
export interface PasswordTokenRow {
  token_hash: string;
  workspace_id: string;
  user_id: string;
  created_at: string;
  expires_at: string;
}

/** A user allowed to use a connection whose grants_everyone is 0. */
export interface ConnectionGrantRow {
  connection_id: string;
  user_id: string;
  workspace_id: string;
  created_at: string;
}

/** One version of a curated tool; the live tool is its newest version without deleted_at. */
export interface CuratedToolRow {
  id: string;
  workspace_id: string;
  name: string;
  version: number;
  description: string;
  connection_id: string;
  sql: string;
  /** JSON ToolParameter[] (src/tools/tools.ts). */
  parameters: string;
  max_rows: number;
  created_by: string | null;
  created_at: string;
  deleted_at: string | null;
}

/** One version of a connection's annotations (src/annotations); the newest is in force. */
export interface ConnectionAnnotationRow {
  id: string;
  workspace_id: string;
  connection_id: string;
  version: number;
  /** JSON Annotations: {tables, examples}. */
  body: string;
  created_by: string | null;
  created_at: string;
}

/** Append-only: who changed who may do what (src/audit/audit.ts). */
export interface AuditRow {
  id: string;
  workspace_id: string;
  action: string;
  actor_user_id: string | null;
  actor_email: string | null;
  actor_key_id: string | null;
  target_type: string;
  target_id: string | null;
  target_name: string | null;
  /** JSON of what changed; never a secret. */
  changes: string | null;
  ip: string | null;
  /** `sso`: written by a single sign-on (the user it created, the session it opened). */
  source: 'api' | 'cli' | 'ui' | 'sso';
  created_at: string;
}

/** A workspace's single sign-on (src/sso/sso-settings.ts); no row: SSO is off. */
export interface WorkspaceSsoRow {
  workspace_id: string;
  issuer: string;
  client_id: string;
  /** Sealed with the secret box, bound to `sso:<workspace_id>`; never returned. */
  client_secret: string;
  /** JSON array of lower-case email domains a sign-in may come from. */
  allowed_domains: string;
  /** Role of a user created by their first SSO sign-in. */
  default_role: 'admin' | 'read_only';
  /** 0: the password sign-in is refused in this workspace. */
  password_sign_in: number;
  created_at: string;
  updated_at: string;
}

/** Which provider identity a user is (src/sso/sso-users.ts): (issuer, sub), one per user and
 * issuer. */
export interface SsoIdentityRow {
  workspace_id: string;
  issuer: string;
  subject: string;
  user_id: string;
  created_at: string;
}

export interface Database {
  workspaces: WorkspaceRow;
  users: UserRow;
  api_keys: ApiKeyRow;
  connections: ConnectionRow;
  query_history: HistoryRow;
  web_sessions: WebSessionRow;
  web_setup_tokens: WebSetupTokenRow;
  password_tokens: PasswordTokenRow;
  connection_grants: ConnectionGrantRow;
  curated_tools: CuratedToolRow;
  audit_log: AuditRow;
  connection_annotations: ConnectionAnnotationRow;
  workspace_sso: WorkspaceSsoRow;
  sso_identities: SsoIdentityRow;
}
