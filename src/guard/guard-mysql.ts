// Read-only guard for MySQL and MariaDB: node-sql-parser (mysql grammar, then mariadb) on a
// copy that the engine-faithful lexer in sql-lexer.ts has sanitized, plus explicit rules.
// The lexer refuses executable comments (/*! … */, /*M! … */: the server runs them, the parser
// skips them), optimizer hints (/*+ SET_VAR(…) */ changes settings), `--x` (an operator to the
// server, a comment to the parser) and strings whose end depends on NO_BACKSLASH_ESCAPES.
// See guard.ts for what no guard can stop.
import type { MysqlName, Verdict } from './verdict.ts';
import { MYSQL_FUNCTIONS, MYSQL_PAREN_KEYWORDS } from './allowlist-mysql.ts';
import { tokenize, type Token } from './call-gate.ts';
import { COMMON_WRITE_KEYWORDS, classifyWithNodeSql, type NodeSqlDialect } from './node-sql-guard.ts';
import { findStatementShape, lexSql, sanitizeRange } from './sql-lexer.ts';
import { readVerdict } from './verdict-builders.ts';

const IDENTIFIER = String.raw`(?:\x60[^\x60]*\x60|"[^"]*"|[\w$]+)`;

/** SHOW … LIKE '…' / WHERE col = '…' and friends the parser does not know. Without
 * parentheses there can be no function call or subquery (`:=` is refused before), so nothing
 * but the listing and a comparison runs. SHOW BINLOG/RELAYLOG EVENTS scan the server's logs
 * (BINLOG_GTID_POS is refused for the same reason): not reads. */
const SIMPLE_SHOW = /^\s*SHOW\s(?!\s*(?:BINLOG|RELAYLOG)\b)[\s\w$.,=<>!\x60'"%-]*$/i;

/** `DESCRIBE t`, `DESC db.t col`, `EXPLAIN t` (a synonym): names only. */
const SIMPLE_DESCRIBE = new RegExp(
  String.raw`^\s*(?:DESCRIBE|DESC|EXPLAIN)\s+(?:${IDENTIFIER}\s*\.\s*)?${IDENTIFIER}(?:\s+(?:${IDENTIFIER}|'0*'))?\s*$`,
  'i',
);

/** EXPLAIN [ANALYZE | EXTENDED | PARTITIONS | FORMAT=…] and DESCRIBE used as EXPLAIN; the
 * parser reads only a bare `EXPLAIN SELECT`. EXPLAIN ANALYZE executes the statement, which is
 * why the explained statement must itself be a read; without ANALYZE an INSERT/UPDATE/DELETE/
 * REPLACE is only planned (prefixPlansOnly, node-sql-guard.ts classifyPlannedWrite). */
const EXPLAIN_PREFIX =
  /^\s*(?:EXPLAIN|DESCRIBE|DESC)(?:\s+(?:ANALYZE|EXTENDED|PARTITIONS|FORMAT\s*=\s*(?:\w+|'0*'|"\w*")))*\s+(?=\(|(?:SELECT|WITH|TABLE|VALUES|INSERT|UPDATE|DELETE|REPLACE)\b)/i;

/** EXPLAIN without ANALYZE only plans. MariaDB's `ANALYZE <stmt>` (never matched by
 * EXPLAIN_PREFIX) and EXPLAIN ANALYZE run the statement. Comments are blanks by now, and
 * executable comments (`/*!50000 ANALYZE *\/`) were refused by the lexer, so a word between
 * EXPLAIN and the statement is visible here whatever the spelling. */
function prefixPlansOnly(prefix: string): boolean {
  return !/\bANALY[SZ]E\b/i.test(prefix);
}

/** Words that may stand between INSERT/REPLACE and the target table. */
const INSERT_LEAD = new Set(['insert', 'replace', 'into', 'ignore', 'low_priority', 'delayed', 'high_priority']);

/** `INSERT [modifiers] [INTO] [db.]t (a, b)`: the target's column list, not a call. */
function isInsertColumnList(tokens: readonly Token[], index: number): boolean {
  let i = index - 1;
  if (tokens[i]?.kind === 'punct' && tokens[i].value === '.' && (tokens[i - 1]?.kind === 'word' || tokens[i - 1]?.kind === 'quoted'))
    i -= 2;
  let sawStatement = false;
  for (; i >= 0; i--) {
    const token = tokens[i];
    if (token.kind !== 'word' || !INSERT_LEAD.has(token.value)) break;
    if (token.value === 'insert' || token.value === 'replace') {
      sawStatement = true;
      break;
    }
  }
  if (!sawStatement) return false;
  // The statement's own first word: only the EXPLAIN prefix may stand before it.
  for (let j = i - 1; j >= 0; j--) {
    const token = tokens[j];
    if (token.kind === 'word' && /^(?:explain|describe|desc|extended|partitions|format|json|traditional|tree)$/.test(token.value)) continue;
    if (token.kind === 'punct' && token.value === '=') continue;
    if (token.kind === 'string') continue;
    return false;
  }
  return true;
}

const MYSQL_WRITE_KEYWORDS = new Set([
  ...COMMON_WRITE_KEYWORDS,
  'HANDLER',
  'OPTIMIZE',
  'REPAIR',
  'CHECK',
  'CHECKSUM',
  'FLUSH',
  'KILL',
  'RESET',
  'PURGE',
  'INSTALL',
  'UNINSTALL',
  'USE',
  'XA',
  'CHANGE',
  'SHUTDOWN',
  'RESTART',
  'CLONE',
  'IMPORT',
  'BINLOG',
  'CACHE',
  'SIGNAL',
  'RESIGNAL',
  'GET',
  'HELP',
  'BACKUP',
  'STOP',
]);

/** `@x := …` assigns a session variable from inside a SELECT, in whatever clause; MariaDB's
 * `NEXT VALUE FOR s` advances a sequence with no parenthesis for the call gate to see. */
function findAssignment(text: string): string | undefined {
  if (text.includes(':=')) return 'User variable assignment (:=) is not allowed in a read';
  if (/\bNEXT\s+VALUE\s+FOR\b/i.test(text)) return 'NEXT VALUE FOR advances a sequence; not a read';
  return undefined;
}

/** Keywords that take a parenthesis in one place only; anywhere else the same unquoted name
 * calls a stored function of that name on MariaDB. */
function isMysqlContextKeyword(tokens: readonly Token[], index: number, openCalls: readonly string[]): boolean {
  const name = tokens[index].value;
  const before = tokens[index - 1];
  // JSON_TABLE(doc, '$[*]' COLUMNS (…)) and NESTED PATH '$.x' COLUMNS (…): after a path string.
  if (name === 'columns') return openCalls.includes('json_table') && before?.kind === 'string';
  if (name === 'of') return before?.kind === 'word' && before.value === 'member';
  if (name === 'against' && before?.kind === 'punct' && before.value === ')') {
    for (let i = index - 2, depth = 1; i >= 0; i--) {
      if (tokens[i].kind !== 'punct') continue;
      if (tokens[i].value === ')') depth++;
      else if (tokens[i].value === '(' && --depth === 0) return tokens[i - 1]?.value === 'match';
    }
  }
  return false;
}

function classifyUnparsedMysql(text: string): Verdict | undefined {
  if (SIMPLE_SHOW.test(text)) return readVerdict('SHOW');
  if (SIMPLE_DESCRIBE.test(text)) return readVerdict('DESCRIBE');
  return undefined;
}

const MYSQL_DIALECT: NodeSqlDialect = {
  engine: 'mysql',
  databases: ['mysql', 'mariadb'],
  sanitize: {},
  explainPrefix: EXPLAIN_PREFIX,
  prefixPlansOnly,
  calls: {
    engine: 'MySQL/MariaDB',
    functions: MYSQL_FUNCTIONS,
    parenKeywords: MYSQL_PAREN_KEYWORDS,
    quotedCallsAreStored: true,
    contextKeywords: isMysqlContextKeyword,
    columnList: isInsertColumnList,
  },
  writeKeywords: MYSQL_WRITE_KEYWORDS,
  checkSanitized: findAssignment,
  classifyUnparsed: classifyUnparsedMysql,
};

export function classifyMysql(sql: string): Verdict {
  const verdict = classifyWithNodeSql(sql, MYSQL_DIALECT);
  if (verdict.kind !== 'read') return verdict;
  const relationNames = collectRelationNames(sql);
  return relationNames === undefined ? verdict : { ...verdict, relationNames };
}

/** Every name a read could read as a relation: a view among them runs its definition
 * (src/guard/read-policy-mysql.ts). Words and quoted identifiers of the code alone (comments and
 * strings are blanks by now), keywords and column names included: which of them name a view is
 * the connection's to say. Undefined for SHOW and DESCRIBE of a table, which have no
 * parenthesis, so no subquery, and read metadata only: a view's definition does not run for
 * them. */
function collectRelationNames(sql: string): MysqlName[] | undefined {
  const lexed = lexSql(sql, 'mysql');
  const shape = findStatementShape(lexed);
  if (shape.shape !== 'single') return [];
  const text = sanitizeRange(lexed, shape.start, shape.end, MYSQL_DIALECT.sanitize);
  if (SIMPLE_SHOW.test(text) || SIMPLE_DESCRIBE.test(text)) return undefined;
  const tokens = tokenize(text);
  const names = new Map<string, MysqlName>();
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    if (token.kind !== 'word' && token.kind !== 'quoted') continue;
    const before = tokens[i - 2];
    const qualified =
      tokens[i - 1]?.kind === 'punct' && tokens[i - 1].value === '.' && (before?.kind === 'word' || before?.kind === 'quoted');
    const name: MysqlName = qualified ? { name: token.value, qualifier: before.value } : { name: token.value };
    names.set(`${name.qualifier ?? ''}\u0000${name.name}`, name);
  }
  return [...names.values()];
}
