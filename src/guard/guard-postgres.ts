// Read-only guard for PostgreSQL: the server's own grammar via libpg-query (WASM), AST walked
// whole. The caller (guard.ts) must have awaited libpg-query's loadModule() first.
//
// The structure is decided from the tree (one SELECT, no INTO, no locking clause, no nested
// statement); whether the names it calls are free of side effects is not: that depends on the
// connection's own catalog (user functions, extensions, volatility labels), so a read carries
// every name that can run code — calls, `(expr).name` / `alias.name` attribute notation,
// operators, cast targets, relations (views run their query, tables their row-security
// policies) — and src/guard/decide.ts checks them against the connection's allowlist
// (src/guard/read-policy.ts). See guard.ts for what no guard can stop.
//
// This file is the statement-level decision (how many statements, which kind, EXPLAIN with or
// without ANALYZE); the walk that finds a non-read inside a SELECT and collects its names is
// guard-postgres-references.ts, libpg-query's node shapes guard-postgres-nodes.ts.
import { parseSync } from 'libpg-query';
import { isNode, statementType, stringValue, unwrap, type PgNode, type PgRawStatement } from './guard-postgres-nodes.ts';
import { findNonReadReason, ReferenceCollector, relationName } from './guard-postgres-references.ts';
import { countCodeSemicolons, findStatementShape, lexSql, type LexedSql } from './sql-lexer.ts';
import type { Verdict } from './verdict.ts';
import {
  emptyStatementVerdict,
  explainVerdict,
  multipleStatementsVerdict,
  notAReadReason,
  readVerdict,
  invalidVerdict,
  unparseableVerdict,
  writeVerdict,
} from './verdict-builders.ts';

export function classifyPostgres(sql: string): Verdict {
  const lexed = lexSql(sql, 'postgres');
  if (findStatementShape(lexed).shape === 'empty') return emptyStatementVerdict();
  let statements: PgRawStatement[];
  try {
    statements = (parseSync(sql) as { stmts?: PgRawStatement[] }).stmts ?? [];
  } catch (err) {
    return classifyUnparseable(lexed, sql, err);
  }
  if (statements.length === 0) return emptyStatementVerdict();
  if (statements.length > 1 || hasEmptyStatements(sql, statements[0])) return multipleStatementsVerdict();
  const statement = statements[0].stmt;
  if (!isNode(statement)) return unparseableVerdict();
  const verdict = classifyStatementNode(statement);
  const ambiguity = lexed.problems.find((problem) => problem.code === 'ambiguous-backslash');
  return verdict.kind === 'read' && ambiguity !== undefined ? writeVerdict(verdict.statementType, ambiguity.message) : verdict;
}

/** The server would still run `SELECT 1; DROP …` if we call it a syntax error: reject what the
 * lexer sees as several statements, so no key can send it. One statement that libpg-query (the
 * server's own grammar) cannot parse is a syntax error: 422 with the server's wording. */
function classifyUnparseable(lexed: LexedSql, sql: string, err: unknown): Verdict {
  if (findStatementShape(lexed).shape === 'multiple') return multipleStatementsVerdict();
  const details = isNode(err) && isNode(err.sqlDetails) ? err.sqlDetails : undefined;
  const message = typeof details?.message === 'string' ? details.message : undefined;
  if (message === undefined) return unparseableVerdict();
  const offset = typeof details?.cursorPosition === 'number' ? details.cursorPosition : undefined;
  // 42601 is syntax_error: what the server itself would answer.
  return invalidVerdict(message, { sqlState: '42601', position: offset === undefined ? null : characterPosition(sql, offset) });
}

/** libpg-query reports a 0-based byte offset; PostgreSQL reports a 1-based character position. */
function characterPosition(sql: string, byteOffset: number): number {
  const bytes = new TextEncoder().encode(sql);
  return new TextDecoder().decode(bytes.subarray(0, byteOffset)).length + 1;
}

/** libpg-query drops empty statements: `SELECT 1;;` and `;SELECT 1` come back as one. Its
 * byte offsets show them: a `;` in the code before the statement, or a second `;` after it.
 * Text before the statement that is only comments and blanks (`/* app=x *\/ SELECT 1`, the
 * sqlcommenter style) is no statement: libpg-query counts it into the offset all the same. */
function hasEmptyStatements(sql: string, statement: PgRawStatement): boolean {
  const location = statement.stmt_location ?? 0;
  const bytes = location > 0 || (statement.stmt_len ?? 0) > 0 ? new TextEncoder().encode(sql) : undefined;
  if (location > 0 && countCodeSemicolons(lexSql(new TextDecoder().decode(bytes!.subarray(0, location)), 'postgres')) > 0) return true;
  if (statement.stmt_len === undefined || statement.stmt_len === 0) return false;
  const tail = new TextDecoder().decode(bytes!.subarray(location + statement.stmt_len));
  return countCodeSemicolons(lexSql(tail, 'postgres')) > 1;
}

function classifyStatementNode(node: PgNode): Verdict {
  const unwrapped = unwrap(node);
  if (unwrapped === undefined) return unparseableVerdict();
  const [name, fields] = unwrapped;
  const type = statementType(name, fields);
  if (name === 'ExplainStmt') {
    const planned = isNode(fields.query) ? unwrap(fields.query) : undefined;
    // EXPLAIN without ANALYZE plans a write and never runs it (API.md v1.1, "read statement");
    // planning still folds IMMUTABLE calls, so the names are checked as a read's.
    if (planned !== undefined && PLAN_ONLY_WRITES.has(planned[0]) && !explainAnalyzes(fields.options)) {
      const refs = new ReferenceCollector();
      // Planning a write folds the target's defaults and plans its rules (read-policy.ts).
      const target = isNode(planned[1].relation) ? relationName(planned[1].relation) : undefined;
      if (target === undefined) return writeVerdict('EXPLAIN', 'The target of the planned write could not be checked');
      // The target is an inline RangeVar (no `RangeVar` key for the walk to see): it is read too.
      refs.writeTargets.add(target);
      refs.relations.add(target);
      const reason = findNonReadReason(planned[1], refs, true);
      return reason === undefined ? { ...readVerdict('EXPLAIN'), references: refs.result() } : writeVerdict('EXPLAIN', reason);
    }
    return explainVerdict(isNode(fields.query) ? classifyStatementNode(fields.query) : unparseableVerdict());
  }
  if (name === 'VariableShowStmt') return readVerdict('SHOW');
  if (name !== 'SelectStmt') return writeVerdict(type, notAReadReason(type));
  const refs = new ReferenceCollector();
  const reason = findNonReadReason(fields, refs);
  if (reason !== undefined) return writeVerdict('SELECT', reason);
  return { ...readVerdict('SELECT'), references: refs.result() };
}

const PLAN_ONLY_WRITES = new Set(['InsertStmt', 'UpdateStmt', 'DeleteStmt', 'MergeStmt']);
const FALSE_WORDS = new Set(['false', 'off', '0', 'no', 'f', 'n']);

/** EXPLAIN ANALYZE, EXPLAIN (ANALYZE), (ANALYZE true|on|1): the statement runs. */
function explainAnalyzes(options: unknown): boolean {
  if (!Array.isArray(options)) return false;
  return options.some((option) => {
    const element = isNode(option) && isNode(option.DefElem) ? option.DefElem : undefined;
    if (element === undefined || element.defname !== 'analyze') return false;
    const arg =
      stringValue(element.arg) ??
      (isNode(element.arg) && isNode(element.arg.Boolean) ? String(element.arg.Boolean.boolval ?? false) : undefined);
    return arg === undefined || !FALSE_WORDS.has(arg.toLowerCase());
  });
}
