// libpg-query's tree as the PostgreSQL guard reads it: nodes are `{ NodeType: fields }`, and a
// statement node's type is named the way the server's command tag (and a refusal) names it.
// Shared by the statement-level classification (guard-postgres.ts) and the walk that collects
// what a read refers to (guard-postgres-references.ts).

export type PgNode = Record<string, unknown>;

export interface PgRawStatement {
  stmt?: PgNode;
  stmt_location?: number;
  stmt_len?: number;
}

const STATEMENT_TYPES: Record<string, string> = {
  SelectStmt: 'SELECT',
  InsertStmt: 'INSERT',
  UpdateStmt: 'UPDATE',
  DeleteStmt: 'DELETE',
  MergeStmt: 'MERGE',
  ExplainStmt: 'EXPLAIN',
  VariableShowStmt: 'SHOW',
  CopyStmt: 'COPY',
  DoStmt: 'DO',
  CallStmt: 'CALL',
  LockStmt: 'LOCK',
  ListenStmt: 'LISTEN',
  UnlistenStmt: 'UNLISTEN',
  NotifyStmt: 'NOTIFY',
  PrepareStmt: 'PREPARE',
  ExecuteStmt: 'EXECUTE',
  DeallocateStmt: 'DEALLOCATE',
  DiscardStmt: 'DISCARD',
  TruncateStmt: 'TRUNCATE',
  CheckPointStmt: 'CHECKPOINT',
  ClosePortalStmt: 'CLOSE',
  FetchStmt: 'FETCH',
  DeclareCursorStmt: 'DECLARE',
  RenameStmt: 'ALTER',
  LoadStmt: 'LOAD',
  RefreshMatViewStmt: 'REFRESH',
  ReassignOwnedStmt: 'REASSIGN',
  ConstraintsSetStmt: 'SET',
  SecLabelStmt: 'SECURITY LABEL',
  CommentStmt: 'COMMENT',
  ReindexStmt: 'REINDEX',
  ClusterStmt: 'CLUSTER',
  ImportForeignSchemaStmt: 'IMPORT',
  DefineStmt: 'CREATE',
  IndexStmt: 'CREATE',
  ViewStmt: 'CREATE',
  RuleStmt: 'CREATE',
  CompositeTypeStmt: 'CREATE',
};

const TRANSACTION_KEYWORDS: Record<string, string> = {
  TRANS_STMT_BEGIN: 'BEGIN',
  TRANS_STMT_START: 'START',
  TRANS_STMT_COMMIT: 'COMMIT',
  TRANS_STMT_ROLLBACK: 'ROLLBACK',
  TRANS_STMT_SAVEPOINT: 'SAVEPOINT',
  TRANS_STMT_RELEASE: 'RELEASE',
  TRANS_STMT_ROLLBACK_TO: 'ROLLBACK',
  TRANS_STMT_PREPARE: 'PREPARE',
  TRANS_STMT_COMMIT_PREPARED: 'COMMIT',
  TRANS_STMT_ROLLBACK_PREPARED: 'ROLLBACK',
};

export function isNode(value: unknown): value is PgNode {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** libpg-query nodes are `{ NodeType: fields }`. */
export function unwrap(node: PgNode): [string, PgNode] | undefined {
  const entries = Object.entries(node);
  if (entries.length !== 1) return undefined;
  const [name, fields] = entries[0];
  return isNode(fields) ? [name, fields] : undefined;
}

export function statementType(name: string, fields: PgNode): string {
  if (name === 'TransactionStmt') return TRANSACTION_KEYWORDS[String(fields.kind)] ?? 'TRANSACTION';
  if (name === 'VariableSetStmt') return String(fields.kind).startsWith('VAR_RESET') ? 'RESET' : 'SET';
  if (name === 'VacuumStmt') return fields.is_vacuumcmd ? 'VACUUM' : 'ANALYZE';
  if (name === 'GrantStmt' || name === 'GrantRoleStmt') return fields.is_grant ? 'GRANT' : 'REVOKE';
  const known = STATEMENT_TYPES[name];
  if (known !== undefined) return known;
  const verb = /^(Create|Drop|Alter)/.exec(name) ?? /^[A-Z][a-z]*/.exec(name);
  return verb === null ? 'UNKNOWN' : verb[0].toUpperCase();
}

export function stringValue(node: unknown): string | undefined {
  return isNode(node) && isNode(node.String) && typeof node.String.sval === 'string' ? node.String.sval : undefined;
}
