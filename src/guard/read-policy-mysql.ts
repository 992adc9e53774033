// What a MySQL/MariaDB read reaches beyond its own text, judged by the rules its text is judged
// by (the PostgreSQL counterpart is read-policy.ts). Pure: the rows (and their types) come from
// src/engines/mysql/mysql-catalog.ts; mysql-view-cache.ts keeps them per connection.
//
// Why views must be read (seen on MariaDB 10.11):
// - A view runs its definition whenever a statement reads it, with its definer's rights (SQL
//   SECURITY DEFINER is the default). A stored function it calls ran SET GLOBAL for a
//   SELECT-only login inside START TRANSACTION READ ONLY: neither the read-only transaction nor
//   the reader login holds code that runs as someone else. (Table writes and sequence advances
//   from such a function are refused there, error 1792.)
// - MariaDB evaluates small subqueries and derived tables while it plans, so `EXPLAIN UPDATE t …
//   WHERE id = (SELECT x FROM v)` ran v's stored function — a MyISAM insert, a NEXTVAL — while
//   planning. A plan-only EXPLAIN of a write cannot run in the read-only transaction (MariaDB
//   refuses it there), so nothing it reaches may run code: for it the column defaults and
//   generated columns of every table reached are judged too.
//
// A view is allowed when its definition is a read that calls only allowlisted built-ins and
// reads only tables and allowed views. Which names reach a view is decided conservatively:
// every word of the statement is a candidate, matched to a view of the same name in the
// database it is qualified with or in the statement's default database (MySQL also reads `.v`
// as the default database's v). A column that shares a view's name costs a false refusal,
// never a miss.
//
// Definitions are classified as a request's text is (guard.ts: cached, long ones off the event
// loop), once per text: a chain of large views costs the first read that reaches it.
import { classifyMysql } from './guard-mysql.ts';
import { classifyStatement } from './guard.ts';
import { lexSql } from './sql-lexer.ts';
import type { MysqlName } from './verdict.ts';
import type { MysqlExpressionRow, MysqlViewRow } from '../engines/mysql/mysql-catalog.ts';

export type { MysqlExpressionRow, MysqlViewRow } from '../engines/mysql/mysql-catalog.ts';

export interface ReachRefusal {
  what: 'View' | 'Column' | 'Function';
  /** `schema.view`, `schema.table.column` or a function's name. */
  name: string;
  /** Completes "View x …" / "Column x …". */
  why: string;
}

/** A definition as the guard reads it; kept across reloads while the text is unchanged. */
export interface DefinitionJudgement {
  why?: string;
  names: readonly MysqlName[];
  calls: readonly string[];
}

export interface MysqlViewCatalog {
  /** Views by folded name. */
  readonly views: ReadonlyMap<string, readonly MysqlViewRow[]>;
  judge(definition: string): Promise<DefinitionJudgement>;
}

/** MySQL compares table names exactly or (lower_case_table_names) lower-cased: folding both
 * sides matches at least every pair the server would. */
export function foldName(name: string): string {
  return name.toLowerCase();
}

/** `memo` is the caller's: judgements outlive one load, and the caller prunes it. */
export function buildViewCatalog(rows: readonly MysqlViewRow[], memo: Map<string, Promise<DefinitionJudgement>>): MysqlViewCatalog {
  const views = new Map<string, MysqlViewRow[]>();
  for (const row of rows) {
    const key = foldName(row.name);
    const list = views.get(key);
    if (list) list.push(row);
    else views.set(key, [row]);
  }
  return {
    views,
    judge(definition) {
      let judgement = memo.get(definition);
      if (judgement === undefined) {
        judgement = judgeDefinition(definition);
        memo.set(definition, judgement);
      }
      return judgement;
    },
  };
}

async function judgeDefinition(definition: string): Promise<DefinitionJudgement> {
  if (definition.trim() === '') {
    return {
      why: 'has a definition the login reads use cannot see (it lacks SHOW VIEW), so what it runs cannot be checked',
      names: [],
      calls: [],
    };
  }
  let verdict;
  try {
    verdict = await classifyStatement('mysql', blankAliases(definition));
  } catch {
    return { why: 'has a definition that could not be read', names: [], calls: [] };
  }
  // Text node-sql-parser cannot read still passed the call gate and the write-word check
  // (verdict.askEngine): the server itself stored it as a view's SELECT.
  if (verdict.kind !== 'read') return { why: `runs what a read may not: ${verdict.reason ?? verdict.statementType}`, names: [], calls: [] };
  return { names: verdict.relationNames ?? [], calls: verdict.calledFunctions ?? [] };
}

/** MariaDB names an unaliased column after its expression: SELECT `x` + 1 is stored as
 * … AS ```x`` + 1`, doubled backticks, which the guard refuses in a request (node-sql-parser
 * reads them otherwise). After AS an identifier is an alias, never a relation or a function, so
 * its body is blanked, within the boundaries the server's own lexing gives (sql-lexer.ts: no
 * escapes in backticks, a doubled one is a backtick). */
function blankAliases(definition: string): string {
  const lexed = lexSql(definition, 'mysql');
  let out = '';
  let previous: { kind: string; text: string } | undefined;
  for (const segment of lexed.segments) {
    const text = definition.slice(segment.start, segment.end);
    const alias =
      segment.kind === 'identifier' &&
      text.startsWith('`') &&
      text.length >= 2 &&
      previous?.kind === 'code' &&
      /\bas\s*$/i.test(previous.text);
    out += alias ? `\`${'_'.repeat(text.length - 2)}\`` : text;
    previous = { kind: segment.kind, text };
  }
  return out;
}

export interface ViewReach {
  refusal?: ReachRefusal;
  /** Names called inside the views reached, each with the view the statement named to reach
   * it: whether one is a stored function here is the server's to say. */
  calls: ReadonlyMap<string, string>;
  /** Every name the statement and the views it reaches could read as a table. */
  tableNames: readonly string[];
}

/** Follows `names` through every view they reach, transitively. `database` is the statement's
 * default database (null: none, so only qualified names reach a view). */
export async function followViews(catalog: MysqlViewCatalog, names: readonly MysqlName[], database: string | null): Promise<ViewReach> {
  const calls = new Map<string, string>();
  const tableNames = new Set<string>();
  const visited = new Set<MysqlViewRow>();
  // Each entry: names to resolve, the default database they resolve in, and the view the
  // statement named to get there (undefined: the statement's own names).
  const queue: { names: readonly MysqlName[]; database: string | null; via?: string }[] = [{ names, database }];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    const home = next.database === null ? null : foldName(next.database);
    for (const ref of next.names) {
      tableNames.add(ref.name);
      const qualifier = ref.qualifier === undefined ? undefined : foldName(ref.qualifier);
      for (const view of catalog.views.get(foldName(ref.name)) ?? []) {
        const schema = foldName(view.schema);
        if (schema !== qualifier && schema !== home) continue;
        if (visited.has(view)) continue;
        visited.add(view);
        const here = `${view.schema}.${view.name}`;
        const judgement = await catalog.judge(view.definition);
        if (judgement.why !== undefined) {
          const why = next.via === undefined ? judgement.why : `reads view ${here}, which ${judgement.why}`;
          return { refusal: { what: 'View', name: next.via ?? here, why }, calls, tableNames: [...tableNames] };
        }
        for (const call of judgement.calls) if (!calls.has(call)) calls.set(call, next.via ?? here);
        // A view resolves its unqualified names in its own database.
        queue.push({ names: judgement.names, database: view.schema, via: next.via ?? here });
      }
    }
  }
  return { calls, tableNames: [...tableNames] };
}

/** The first default or generated column whose expression is not a read's: nextval() in a
 * default, DEFAULT(col) in a generated column (which evaluates col's default). */
export function findExpressionRefusal(rows: readonly MysqlExpressionRow[]): ReachRefusal | undefined {
  for (const row of rows) {
    // Nothing without a parenthesis can call anything (a literal, a constant keyword).
    if (!row.expression.includes('(')) continue;
    let verdict;
    try {
      verdict = classifyMysql(`SELECT ${row.expression}`);
    } catch {
      verdict = undefined;
    }
    if (verdict?.kind === 'read') continue;
    const what = row.kind === 'default' ? 'a default' : 'a generated value';
    return {
      what: 'Column',
      name: `${row.schema}.${row.table}.${row.column}`,
      why: `has ${what} (${row.expression}) that runs what a read may not: ${verdict?.reason ?? 'it could not be read'}`,
    };
  }
  return undefined;
}
