// Read-only guard for PostgreSQL: the server's own grammar via libpg-query (WASM), AST walked
// whole. The caller (guard.ts) must have awaited libpg-query's loadModule() first.
// See guard.ts for what no guard can stop.
import { parseSync } from 'libpg-query';
import { sideEffectFunctionReason } from './function-denylist.ts';
import { countCodeSemicolons, findStatementShape, lexSql, type LexedSql } from './sql-lexer.ts';
import type { Verdict } from './verdict.ts';
import {
  emptyStatementVerdict,
  explainVerdict,
  multipleStatementsVerdict,
  notAReadReason,
  readVerdict,
  unparseableVerdict,
  writeVerdict,
} from './verdict-builders.ts';

type PgNode = Record<string, unknown>;

interface PgRawStatement {
  stmt?: PgNode;
  stmt_location?: number;
  stmt_len?: number;
}

const STATEMENT_TYPES: Record<string, string> = {
  SelectStmt: 'SELECT', InsertStmt: 'INSERT', UpdateStmt: 'UPDATE', DeleteStmt: 'DELETE',
  MergeStmt: 'MERGE', ExplainStmt: 'EXPLAIN', VariableShowStmt: 'SHOW', CopyStmt: 'COPY',
  DoStmt: 'DO', CallStmt: 'CALL', LockStmt: 'LOCK', ListenStmt: 'LISTEN', UnlistenStmt: 'UNLISTEN',
  NotifyStmt: 'NOTIFY', PrepareStmt: 'PREPARE', ExecuteStmt: 'EXECUTE', DeallocateStmt: 'DEALLOCATE',
  DiscardStmt: 'DISCARD', TruncateStmt: 'TRUNCATE', CheckPointStmt: 'CHECKPOINT', ClosePortalStmt: 'CLOSE',
  FetchStmt: 'FETCH', DeclareCursorStmt: 'DECLARE', RenameStmt: 'ALTER', LoadStmt: 'LOAD',
  RefreshMatViewStmt: 'REFRESH', ReassignOwnedStmt: 'REASSIGN', ConstraintsSetStmt: 'SET',
  SecLabelStmt: 'SECURITY LABEL', CommentStmt: 'COMMENT', ReindexStmt: 'REINDEX', ClusterStmt: 'CLUSTER',
  ImportForeignSchemaStmt: 'IMPORT', DefineStmt: 'CREATE', IndexStmt: 'CREATE', ViewStmt: 'CREATE',
  RuleStmt: 'CREATE', CompositeTypeStmt: 'CREATE',
};

const TRANSACTION_KEYWORDS: Record<string, string> = {
  TRANS_STMT_BEGIN: 'BEGIN', TRANS_STMT_START: 'START', TRANS_STMT_COMMIT: 'COMMIT',
  TRANS_STMT_ROLLBACK: 'ROLLBACK', TRANS_STMT_SAVEPOINT: 'SAVEPOINT', TRANS_STMT_RELEASE: 'RELEASE',
  TRANS_STMT_ROLLBACK_TO: 'ROLLBACK', TRANS_STMT_PREPARE: 'PREPARE', TRANS_STMT_COMMIT_PREPARED: 'COMMIT',
  TRANS_STMT_ROLLBACK_PREPARED: 'ROLLBACK',
};

function isNode(value: unknown): value is PgNode {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** libpg-query nodes are `{ NodeType: fields }`. */
function unwrap(node: PgNode): [string, PgNode] | undefined {
  const entries = Object.entries(node);
  if (entries.length !== 1) return undefined;
  const [name, fields] = entries[0];
  return isNode(fields) ? [name, fields] : undefined;
}

function statementType(name: string, fields: PgNode): string {
  if (name === 'TransactionStmt') return TRANSACTION_KEYWORDS[String(fields.kind)] ?? 'TRANSACTION';
  if (name === 'VariableSetStmt') return String(fields.kind).startsWith('VAR_RESET') ? 'RESET' : 'SET';
  if (name === 'VacuumStmt') return fields.is_vacuumcmd ? 'VACUUM' : 'ANALYZE';
  if (name === 'GrantStmt' || name === 'GrantRoleStmt') return fields.is_grant ? 'GRANT' : 'REVOKE';
  const known = STATEMENT_TYPES[name];
  if (known !== undefined) return known;
  const verb = /^(Create|Drop|Alter)/.exec(name) ?? /^[A-Z][a-z]*/.exec(name);
  return verb === null ? 'UNKNOWN' : verb[0].toUpperCase();
}

export function classifyPostgres(sql: string): Verdict {
  const lexed = lexSql(sql, 'postgres');
  if (findStatementShape(lexed).shape === 'empty') return emptyStatementVerdict();
  let statements: PgRawStatement[];
  try {
    statements = (parseSync(sql) as { stmts?: PgRawStatement[] }).stmts ?? [];
  } catch {
    return classifyUnparseable(lexed);
  }
  if (statements.length === 0) return emptyStatementVerdict();
  if (statements.length > 1 || hasEmptyStatements(sql, statements[0])) return multipleStatementsVerdict();
  const statement = statements[0].stmt;
  if (!isNode(statement)) return unparseableVerdict();
  const verdict = classifyStatementNode(statement);
  const ambiguity = lexed.problems.find((problem) => problem.code === 'ambiguous-backslash');
  return verdict.kind === 'read' && ambiguity !== undefined
    ? writeVerdict(verdict.statementType, ambiguity.message)
    : verdict;
}

/** The server would still run `SELECT 1; DROP …` if we call it a syntax error: reject what the
 * lexer sees as several statements, so no key can send it. */
function classifyUnparseable(lexed: LexedSql): Verdict {
  return findStatementShape(lexed).shape === 'multiple' ? multipleStatementsVerdict() : unparseableVerdict();
}

/** libpg-query drops empty statements: `SELECT 1;;` and `;SELECT 1` come back as one. Its
 * byte offsets show them: text before the statement, or a second `;` after it. */
function hasEmptyStatements(sql: string, statement: PgRawStatement): boolean {
  const location = statement.stmt_location ?? 0;
  if (location > 0) return true;
  if (statement.stmt_len === undefined || statement.stmt_len === 0) return false;
  const bytes = new TextEncoder().encode(sql);
  const tail = new TextDecoder().decode(bytes.subarray(location + statement.stmt_len));
  return countCodeSemicolons(lexSql(tail, 'postgres')) > 1;
}

function classifyStatementNode(node: PgNode): Verdict {
  const unwrapped = unwrap(node);
  if (unwrapped === undefined) return unparseableVerdict();
  const [name, fields] = unwrapped;
  const type = statementType(name, fields);
  if (name === 'ExplainStmt') {
    return explainVerdict(isNode(fields.query) ? classifyStatementNode(fields.query) : unparseableVerdict());
  }
  if (name === 'VariableShowStmt') return readVerdict('SHOW');
  if (name !== 'SelectStmt') return writeVerdict(type, notAReadReason(type));
  const reason = findNonReadReason(fields);
  return reason === undefined ? readVerdict('SELECT') : writeVerdict('SELECT', reason);
}

/** Why a SELECT's tree is not a read: any nested statement other than SELECT (a data-modifying
 * CTE), INTO, a locking clause, or a call of a denied function, at any depth. */
function findNonReadReason(node: unknown): string | undefined {
  if (Array.isArray(node)) {
    for (const item of node) {
      const reason = findNonReadReason(item);
      if (reason !== undefined) return reason;
    }
    return undefined;
  }
  if (!isNode(node)) return undefined;
  for (const [key, value] of Object.entries(node)) {
    const reason = keyReason(key, value) ?? findNonReadReason(value);
    if (reason !== undefined) return reason;
  }
  return undefined;
}

function keyReason(key: string, value: unknown): string | undefined {
  if (key === 'FuncCall') return funcCallReason(value);
  if (key === 'intoClause' && value) return 'SELECT … INTO creates a table; not a read';
  if (key === 'lockingClause' && Array.isArray(value) && value.length > 0) {
    return 'Locking clauses (FOR UPDATE / FOR SHARE …) are not reads';
  }
  if (key.endsWith('Stmt') && key !== 'SelectStmt') {
    const type = statementType(key, isNode(value) ? value : {});
    return `${type} inside a read (data-modifying CTE or similar) is not allowed`;
  }
  return undefined;
}

function funcCallReason(value: unknown): string | undefined {
  const funcname = isNode(value) ? value.funcname : undefined;
  const parts = Array.isArray(funcname)
    ? funcname.map((part: unknown) => (isNode(part) && isNode(part.String) ? part.String.sval : undefined))
    : [];
  // A call whose name we cannot read could be anything: deny.
  if (parts.length === 0 || !parts.every((part): part is string => typeof part === 'string')) {
    return 'Function call could not be checked';
  }
  return sideEffectFunctionReason('postgres', parts);
}
