// Reading node-sql-parser ASTs (MySQL/MariaDB and SQLite) for a statement's structure: one
// SELECT, no INTO, no locking clause, no statement nested in it. The tree is walked whole: a
// write hides as easily in ORDER BY, a LATERAL subquery or a CASE branch as in the select
// list. Function calls are not judged here but on the text (call-gate.ts), where a call the
// parser misreads cannot hide.
import { createRequire } from 'node:module';
import type { Verdict } from './verdict.ts';
import { notAReadReason, readVerdict, writeVerdict } from './verdict-builders.ts';

export type NodeSqlDatabase = 'mysql' | 'mariadb' | 'sqlite';

type AstNode = Record<string, unknown>;

/** Statement node types that must never appear below a read, whatever the dialect allows. */
const NESTED_WRITE_TYPES = new Set([
  'insert',
  'update',
  'delete',
  'replace',
  'create',
  'drop',
  'alter',
  'truncate',
  'rename',
  'set',
  'transaction',
  'call',
  'load_data',
  'lock',
  'unlock',
  'grant',
  'revoke',
  'use',
  'attach',
  'detach',
  'exec',
  'execute',
  'declare',
  'merge',
  'if',
  'proc',
]);

const TOP_LEVEL_TYPES: Record<string, string> = {
  select: 'SELECT',
  show: 'SHOW',
  desc: 'DESCRIBE',
  explain: 'EXPLAIN',
  load_data: 'LOAD',
};

/** The one statement in `text`, or undefined when no listed grammar parses it as exactly one. */
// One grammar build per dialect, loaded on first use: the package's default entry bundles
// every dialect's grammar (~100 MiB of heap for grammars dbq never uses).
const requireBuild = createRequire(import.meta.url);
type DialectParser = { astify(text: string, opts: { database: string }): unknown };
const parsers = new Map<NodeSqlDatabase, DialectParser>();

function parserFor(database: NodeSqlDatabase): DialectParser {
  let parser = parsers.get(database);
  if (!parser) {
    const { Parser } = requireBuild(`node-sql-parser/build/${database}`) as { Parser: new () => DialectParser };
    parser = new Parser();
    parsers.set(database, parser);
  }
  return parser;
}

export function parseOneStatement(text: string, databases: readonly NodeSqlDatabase[]): AstNode | undefined {
  for (const database of databases) {
    let ast: unknown;
    try {
      ast = parserFor(database).astify(text, { database });
    } catch {
      continue;
    }
    const statements = Array.isArray(ast) ? ast : [ast];
    if (statements.length === 1 && isNode(statements[0])) return statements[0];
  }
  return undefined;
}

function isNode(value: unknown): value is AstNode {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function statementTypeOf(ast: AstNode): string {
  const type = typeof ast.type === 'string' ? ast.type : 'unknown';
  if (type === 'transaction') return transactionKeyword(ast);
  return TOP_LEVEL_TYPES[type] ?? type.toUpperCase().replace(/_/g, ' ');
}

function transactionKeyword(ast: AstNode): string {
  const expr = isNode(ast.expr) ? ast.expr : {};
  const action = isNode(expr.action) ? expr.action.value : undefined;
  return typeof action === 'string' ? action.toUpperCase() : 'TRANSACTION';
}

export function classifyAst(ast: AstNode): Verdict {
  const statementType = statementTypeOf(ast);
  if (ast.type === 'explain') return classifyExplainAst(ast);
  if (ast.type !== 'select' && ast.type !== 'show' && ast.type !== 'desc') {
    return writeVerdict(statementType, notAReadReason(statementType));
  }
  const reason = findNonReadReason(ast);
  return reason === undefined ? readVerdict(statementType) : writeVerdict(statementType, reason);
}

function classifyExplainAst(ast: AstNode): Verdict {
  const inner = isNode(ast.expr) ? ast.expr : undefined;
  if (inner === undefined || inner.type !== 'select') {
    return writeVerdict('EXPLAIN', 'EXPLAIN of a statement that is not a read');
  }
  const reason = findNonReadReason(inner);
  return reason === undefined ? readVerdict('EXPLAIN') : writeVerdict('EXPLAIN', reason);
}

/** Why the tree below a read candidate is not a read, or undefined when nothing was found. */
export function findNonReadReason(node: unknown): string | undefined {
  if (Array.isArray(node)) {
    for (const item of node) {
      const reason = findNonReadReason(item);
      if (reason !== undefined) return reason;
    }
    return undefined;
  }
  if (!isNode(node)) return undefined;
  const reason = nodeReason(node);
  if (reason !== undefined) return reason;
  for (const value of Object.values(node)) {
    const nested = findNonReadReason(value);
    if (nested !== undefined) return nested;
  }
  return undefined;
}

function nodeReason(node: AstNode): string | undefined {
  const type = node.type;
  // `SELECT @x := …` writes session state; MySQL allows it anywhere an expression goes.
  if (type === 'assign') return 'User variable assignment (:=) is not allowed in a read';
  if (typeof type === 'string' && NESTED_WRITE_TYPES.has(type)) {
    return `${type.toUpperCase()} inside a read is not allowed`;
  }
  if (hasSelectInto(node.into)) return 'SELECT … INTO writes a file or variables; not a read';
  if (node.locking_read || node.for_update) return 'Locking clauses (FOR UPDATE / LOCK IN SHARE MODE) are not reads';
  // Subqueries arrive as { ast: … }; only a SELECT may sit there.
  if (isNode(node.ast) && node.ast.type !== 'select') return 'A subquery that is not a SELECT is not allowed';
  return undefined;
}

function hasSelectInto(into: unknown): boolean {
  if (!isNode(into)) return false;
  return Boolean(into.position || into.expr || into.keyword || into.type);
}
