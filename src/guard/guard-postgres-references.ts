// The walk over a PostgreSQL SELECT's tree (libpg-query): why it is not a read (a nested
// statement, INTO, a locking clause, a name that cannot be read), and on the way every name
// that can make the server run code — calls, `(expr).name` / `alias.name` attribute notation,
// operators written or implied, cast targets, relations — for the catalog check in decide.ts.
// The same walk reads stored code for the catalog judge (catalog-worker.ts): a view's query, a
// policy, a LANGUAGE sql body, each expression and query of a PL/pgSQL function.
import { parsePlPgSQLSync, parseSync } from 'libpg-query';
import { isNode, statementType, stringValue, unwrap, type PgNode, type PgRawStatement } from './guard-postgres-nodes.ts';
import type { PostgresReferences } from './verdict.ts';

/** The names stored SELECTs refer to (a view's query, a policy as `SELECT <expr>`, a LANGUAGE
 * sql body of one or more statements), for the catalog's own check; undefined when the text is
 * anything but plain reads. */
export function collectPostgresReferences(sql: string): PostgresReferences | undefined {
  let statements: PgRawStatement[];
  try {
    statements = (parseSync(sql) as { stmts?: PgRawStatement[] }).stmts ?? [];
  } catch {
    return undefined;
  }
  if (statements.length === 0) return undefined;
  const refs = new ReferenceCollector();
  for (const statement of statements) {
    const unwrapped = isNode(statement.stmt) ? unwrap(statement.stmt) : undefined;
    if (unwrapped === undefined || unwrapped[0] !== 'SelectStmt') return undefined;
    if (findNonReadReason(unwrapped[1], refs) !== undefined) return undefined;
  }
  return refs.result();
}

/** PL/pgSQL statements that run SQL text or anything but a read: a function holding one is
 * not allowed in a read whatever its label. */
const PLPGSQL_UNREADABLE = new Set([
  'PLpgSQL_stmt_dynexecute',
  'PLpgSQL_stmt_dynfors',
  'PLpgSQL_stmt_call',
  'PLpgSQL_stmt_commit',
  'PLpgSQL_stmt_rollback',
]);

/** `x := expr`, `r.f[1] = expr` (parse mode 3): the expression after the target. */
const PLPGSQL_ASSIGNMENT = /^\s*(?:[\w$]+|"(?:[^"]|"")*")(?:\s*(?:\.\s*(?:[\w$]+|"(?:[^"]|"")*")|\[[^\]]*\]))*\s*:?=/;

/** The names a PL/pgSQL function's code refers to (`pg_get_functiondef` text): every embedded
 * expression and query, read like a read. Undefined when it runs SQL text (EXECUTE), calls a
 * procedure, or holds a statement that is not a read. */
export function collectPlpgsqlReferences(definition: string): PostgresReferences | undefined {
  let tree: unknown;
  try {
    tree = parsePlPgSQLSync(definition);
  } catch {
    return undefined;
  }
  const refs = new ReferenceCollector();
  const visit = (node: unknown): boolean => {
    if (Array.isArray(node)) return node.every(visit);
    if (!isNode(node)) return true;
    for (const [key, value] of Object.entries(node)) {
      if (PLPGSQL_UNREADABLE.has(key)) return false;
      if (key === 'PLpgSQL_stmt_open' && isNode(value) && value.dynquery !== undefined) return false;
      if (key === 'PLpgSQL_expr') {
        if (!collectPlpgsqlExpression(value, refs)) return false;
        continue;
      }
      // A variable of a domain type runs the domain's checks on every assignment.
      if (key === 'PLpgSQL_type' && isNode(value) && typeof value.typname === 'string') {
        refs.literalTypes.add(plpgsqlTypeName(value.typname));
      }
      if (!visit(value)) return false;
    }
    return true;
  };
  return visit(tree) ? refs.result() : undefined;
}

/** `numeric(10,2)`, `"My Type"[]` → the type's name. In linear time: the text is someone else's
 * (a function definition in the database), and a regex trying `\(.*\)` from every `(` was
 * quadratic (10,000 unclosed parentheses: 175 ms). */
function plpgsqlTypeName(typname: string): string {
  const open = typname.indexOf('(');
  const close = typname.lastIndexOf(')');
  const bare = open !== -1 && close > open ? typname.slice(0, open) + typname.slice(close + 1) : typname;
  return bare.split('[]').join('').split('"').join('').trim();
}

function collectPlpgsqlExpression(expr: unknown, refs: ReferenceCollector): boolean {
  if (!isNode(expr) || typeof expr.query !== 'string') return false;
  let sql = expr.query;
  // parseMode 0 is a whole statement; 2 an expression; 3 an assignment (target := expression).
  if (expr.parseMode === 3) {
    const target = PLPGSQL_ASSIGNMENT.exec(sql);
    if (target === null) return false;
    sql = `SELECT ${sql.slice(target[0].length)}`;
  } else if (expr.parseMode !== undefined && expr.parseMode !== 0) {
    sql = `SELECT ${sql}`;
  }
  let statements: PgRawStatement[];
  try {
    statements = (parseSync(sql) as { stmts?: PgRawStatement[] }).stmts ?? [];
  } catch {
    return false;
  }
  if (statements.length !== 1) return false;
  const unwrapped = isNode(statements[0].stmt) ? unwrap(statements[0].stmt) : undefined;
  return unwrapped !== undefined && unwrapped[0] === 'SelectStmt' && findNonReadReason(unwrapped[1], refs) === undefined;
}

/** Every name in a read that can make PostgreSQL run a function, deduplicated. */
export class ReferenceCollector {
  readonly functions = new Set<string>();
  readonly attributes = new Set<string>();
  readonly operators = new Set<string>();
  readonly types = new Set<string>();
  readonly literalTypes = new Set<string>();
  readonly relations = new Set<string>();
  readonly untypedCalls = new Set<string>();
  readonly writeTargets = new Set<string>();

  result(): PostgresReferences {
    return {
      functions: [...this.functions],
      attributes: [...this.attributes],
      operators: [...this.operators],
      types: [...this.types],
      literalTypes: [...this.literalTypes],
      relations: [...this.relations],
      untypedCalls: [...this.untypedCalls],
      writeTargets: [...this.writeTargets],
    };
  }
}

/** A value PostgreSQL types only from the call it meets: a string or NULL literal, `$n`. */
function isUntyped(node: unknown): boolean {
  if (!isNode(node)) return false;
  if (isNode(node.ParamRef)) return true;
  const constant = isNode(node.A_Const) ? node.A_Const : undefined;
  return constant !== undefined && ('sval' in constant || constant.isnull === true);
}

export function relationName(node: PgNode): string | undefined {
  const range = isNode(node.RangeVar) ? node.RangeVar : node;
  if (typeof range.relname !== 'string') return undefined;
  return typeof range.schemaname === 'string' ? `${range.schemaname}.${range.relname}` : range.relname;
}

function qualifiedName(list: unknown): string | undefined {
  const parts = Array.isArray(list) ? list.map(stringValue) : [];
  return parts.length > 0 && parts.every((part) => part !== undefined) ? parts.join('.') : undefined;
}

/** Why a SELECT's tree is not a read: any nested statement other than SELECT (a data-modifying
 * CTE), INTO, a locking clause, or a call whose name cannot be read, at any depth. Names that
 * run code are collected on the way for the catalog check. */
export function findNonReadReason(node: unknown, refs: ReferenceCollector, planOnly = false): string | undefined {
  if (Array.isArray(node)) {
    for (const item of node) {
      const reason = findNonReadReason(item, refs, planOnly);
      if (reason !== undefined) return reason;
    }
    return undefined;
  }
  if (!isNode(node)) return undefined;
  for (const [key, value] of Object.entries(node)) {
    const reason = keyReason(key, value, refs, planOnly) ?? findNonReadReason(value, refs, planOnly);
    if (reason !== undefined) return reason;
  }
  return undefined;
}

/** `planOnly`: inside EXPLAIN without ANALYZE nothing runs but planning, so statements,
 * INTO and locking clauses are no effect; the names planning can run are still collected. */
function keyReason(key: string, value: unknown, refs: ReferenceCollector, planOnly: boolean): string | undefined {
  switch (key) {
    case 'FuncCall': {
      if (isNode(value) && Array.isArray(value.args) && value.args.length > 0 && value.args.every(isUntyped)) {
        const name = qualifiedName(value.funcname);
        if (name !== undefined) refs.untypedCalls.add(name);
      }
      return collectName(isNode(value) ? value.funcname : undefined, refs.functions, 'Function call');
    }
    case 'A_Indirection':
      // `(expr).name` is name(expr) when name is a one-argument function.
      if (isNode(value) && Array.isArray(value.indirection)) collectStrings(value.indirection, refs.attributes);
      return undefined;
    case 'ColumnRef':
      // `alias.name` is name(alias) when alias is a row and name a function of its type; any
      // field after the first could be that name.
      if (isNode(value) && Array.isArray(value.fields)) collectStrings(value.fields.slice(1), refs.attributes);
      return undefined;
    case 'A_Expr':
      return collectOperator(value, refs);
    // `x op ANY (SELECT …)` and `ORDER BY x USING op` name operators outside A_Expr; `x IN
    // (SELECT …)` and `NOT IN` name none and run `=`.
    case 'SubLink': {
      if (!isNode(value)) return undefined;
      const named = Array.isArray(value.operName) && value.operName.length > 0;
      const comparing = named || value.subLinkType === 'ANY_SUBLINK' || value.subLinkType === 'ALL_SUBLINK';
      const operator = named ? qualifiedName(value.operName) : comparing ? '=' : undefined;
      if (operator !== undefined && isUntyped(value.testexpr)) refs.untypedCalls.add(operator);
      if (named) return collectName(value.operName, refs.operators, 'Operator');
      if (comparing) refs.operators.add('=');
      return undefined;
    }
    case 'SortBy':
      return isNode(value) && Array.isArray(value.useOp) && value.useOp.length > 0
        ? collectName(value.useOp, refs.operators, 'Operator')
        : undefined;
    case 'TypeCast': {
      const literal = isNode(value) && isNode(value.arg) && isNode(value.arg.A_Const);
      return collectName(
        isNode(value) && isNode(value.typeName) ? value.typeName.names : undefined,
        literal ? refs.literalTypes : refs.types,
        'Cast',
      );
    }
    // Column definition lists (`AS t(d my_domain)`) cast each value to the type named.
    case 'ColumnDef':
      return isNode(value) && isNode(value.typeName) ? collectName(value.typeName.names, refs.types, 'Column type') : undefined;
    // `CASE x WHEN y`, `JOIN … USING (c)` and NATURAL JOIN compare with the `=` of the type:
    // no operator is written, but one runs.
    case 'CaseExpr':
      if (isNode(value) && value.arg !== undefined) {
        refs.operators.add('=');
        if (isUntyped(value.arg)) refs.untypedCalls.add('=');
      }
      return undefined;
    case 'JoinExpr':
      if (isNode(value) && ((Array.isArray(value.usingClause) && value.usingClause.length > 0) || value.isNatural)) refs.operators.add('=');
      return undefined;
    // `TABLESAMPLE method(…)` runs the method's handler function.
    case 'RangeTableSample':
      return collectName(isNode(value) ? value.method : undefined, refs.functions, 'Table sample method');
    case 'RangeVar':
      if (isNode(value) && typeof value.relname === 'string') {
        refs.relations.add(typeof value.schemaname === 'string' ? `${value.schemaname}.${value.relname}` : value.relname);
      }
      return undefined;
    case 'intoClause':
      return value && !planOnly ? 'SELECT … INTO creates a table; not a read' : undefined;
    case 'lockingClause':
      return Array.isArray(value) && value.length > 0 && !planOnly ? 'Locking clauses (FOR UPDATE / FOR SHARE …) are not reads' : undefined;
    default:
      if (key.endsWith('Stmt') && key !== 'SelectStmt' && !planOnly) {
        const type = statementType(key, isNode(value) ? value : {});
        return `${type} inside a read (data-modifying CTE or similar) is not allowed`;
      }
      return undefined;
  }
}

/** BETWEEN and friends name no operator of their own: they run >= and <=. */
const BETWEEN_KINDS = new Set(['AEXPR_BETWEEN', 'AEXPR_NOT_BETWEEN', 'AEXPR_BETWEEN_SYM', 'AEXPR_NOT_BETWEEN_SYM']);

function collectOperator(value: unknown, refs: ReferenceCollector): string | undefined {
  if (!isNode(value)) return 'Operator could not be checked';
  const right =
    isNode(value.rexpr) && isNode(value.rexpr.List) && Array.isArray(value.rexpr.List.items) ? value.rexpr.List.items : [value.rexpr];
  // `'a' = 'b'`, `- $1`, `'a' IN ('b', 1)`: no typed argument to choose the overload by.
  const untyped = (value.lexpr === undefined || isUntyped(value.lexpr)) && right.some(isUntyped);
  if (BETWEEN_KINDS.has(String(value.kind))) {
    refs.operators.add('>=');
    refs.operators.add('<=');
    if (untyped) {
      refs.untypedCalls.add('>=');
      refs.untypedCalls.add('<=');
    }
    return undefined;
  }
  const name = qualifiedName(value.name);
  if (untyped && name !== undefined) refs.untypedCalls.add(name);
  return collectName(value.name, refs.operators, 'Operator');
}

/** Adds a possibly qualified name (`[{String:{sval}}…]`) as `a.b`; a name it cannot read
 * could be anything: not a read. */
function collectName(list: unknown, into: Set<string>, what: string): string | undefined {
  const parts = Array.isArray(list) ? list.map(stringValue) : [];
  if (parts.length === 0 || !parts.every((part): part is string => part !== undefined)) {
    return `${what} could not be checked`;
  }
  into.add(parts.join('.'));
  return undefined;
}

function collectStrings(list: unknown[], into: Set<string>): void {
  for (const item of list) {
    const value = stringValue(item);
    if (value !== undefined) into.add(value);
  }
}
