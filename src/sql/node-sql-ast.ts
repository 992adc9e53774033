// Reading node-sql-parser ASTs (MySQL/MariaDB and SQLite). The tree is walked whole: a side
// effect hides as easily in ORDER BY, a LATERAL subquery or a CASE branch as in the select list.
import { createRequire } from 'node:module';
import type { EngineName } from '../engines/engine.ts';
import { sideEffectFunctionReason } from './function-denylist.ts';
import type { Verdict } from './verdict.ts';
import { notAReadReason, readVerdict, writeVerdict } from './verdict-builders.ts';

export type NodeSqlDatabase = 'mysql' | 'mariadb' | 'sqlite';

type AstNode = Record<string, unknown>;

/** Statement node types that must never appear below a read, whatever the dialect allows. */
const NESTED_WRITE_TYPES = new Set([
  'insert', 'update', 'delete', 'replace', 'create', 'drop', 'alter', 'truncate', 'rename',
  'set', 'transaction', 'call', 'load_data', 'lock', 'unlock', 'grant', 'revoke', 'use',
  'attach', 'detach', 'exec', 'execute', 'declare', 'merge', 'if', 'proc',
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

export function classifyAst(ast: AstNode, engine: EngineName): Verdict {
  const statementType = statementTypeOf(ast);
  if (ast.type === 'explain') return classifyExplainAst(ast, engine);
  if (ast.type !== 'select' && ast.type !== 'show' && ast.type !== 'desc') {
    return writeVerdict(statementType, notAReadReason(statementType));
  }
  const reason = findNonReadReason(ast, engine);
  return reason === undefined ? readVerdict(statementType) : writeVerdict(statementType, reason);
}

function classifyExplainAst(ast: AstNode, engine: EngineName): Verdict {
  const inner = isNode(ast.expr) ? ast.expr : undefined;
  if (inner === undefined || inner.type !== 'select') {
    return writeVerdict('EXPLAIN', 'EXPLAIN of a statement that is not a read');
  }
  const reason = findNonReadReason(inner, engine);
  return reason === undefined ? readVerdict('EXPLAIN') : writeVerdict('EXPLAIN', reason);
}

/** Why the tree below a read candidate is not a read, or undefined when nothing was found. */
export function findNonReadReason(node: unknown, engine: EngineName): string | undefined {
  if (Array.isArray(node)) {
    for (const item of node) {
      const reason = findNonReadReason(item, engine);
      if (reason !== undefined) return reason;
    }
    return undefined;
  }
  if (!isNode(node)) return undefined;
  const reason = nodeReason(node, engine);
  if (reason !== undefined) return reason;
  for (const value of Object.values(node)) {
    const nested = findNonReadReason(value, engine);
    if (nested !== undefined) return nested;
  }
  return undefined;
}

function nodeReason(node: AstNode, engine: EngineName): string | undefined {
  const type = node.type;
  if (type === 'function' || type === 'aggr_func') return functionReason(node, engine);
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

function functionReason(node: AstNode, engine: EngineName): string | undefined {
  const parts = functionNameParts(node.name);
  // A call whose name we cannot read could be anything: deny.
  if (parts === undefined) return 'Function call could not be checked';
  return sideEffectFunctionReason(engine, parts);
}

function functionNameParts(name: unknown): string[] | undefined {
  if (typeof name === 'string') return [name];
  if (!isNode(name) || !Array.isArray(name.name)) return undefined;
  const parts = name.name.map((part: unknown) => (isNode(part) ? part.value : undefined));
  if (parts.length === 0 || !parts.every((part): part is string => typeof part === 'string')) return undefined;
  return parts;
}
