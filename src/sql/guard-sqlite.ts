// Read-only guard for SQLite: node-sql-parser (sqlite grammar) on a copy sanitized by the
// SQLite-faithful lexer in sql-lexer.ts, plus explicit rules. SQLite has no backslash escapes,
// but node-sql-parser applies them, so `'a\', load_extension('x') -- '` would look like one
// string; the parser therefore only ever sees string bodies of zeros. `#` is a parameter
// prefix to SQLite and a comment to the parser: refused. See guard.ts for what no guard stops.
import type { Verdict } from './verdict.ts';
import { SQLITE_FUNCTIONS, SQLITE_PAREN_KEYWORDS } from './allowlist-sqlite.ts';
import { COMMON_WRITE_KEYWORDS, classifyWithNodeSql, leadingKeyword, type NodeSqlDialect } from './node-sql-guard.ts';
import { readVerdict, writeVerdict } from './verdict-builders.ts';

const IDENTIFIER = String.raw`(?:[A-Za-z_][\w$]*|\x60[^\x60]*\x60|"[^"]*")`;

/** Schema-reading pragmas, only in call form with one name argument: `PRAGMA x = …` and the
 * bare form of most pragmas change the database or the connection (journal_mode, writable_schema,
 * query_only = 0 would even lift the engine's read-only backstop). */
const READ_ONLY_PRAGMA = new RegExp(
  String.raw`^\s*PRAGMA\s+(?:${IDENTIFIER}\s*\.\s*)?(?:table_info|table_xinfo|index_list|index_info|index_xinfo|foreign_key_list)\s*\(\s*(?:${IDENTIFIER}|'0*')\s*\)\s*$`,
  'i',
);

const EXPLAIN_PREFIX = /^\s*EXPLAIN(?:\s+QUERY\s+PLAN)?\s+/i;

const SQLITE_WRITE_KEYWORDS = new Set(COMMON_WRITE_KEYWORDS);

/** node-sql-parser's sqlite grammar knows `?` but not SQLite's numbered `?1`. */
function rewriteNumberedParameters(code: string): string {
  return code.replace(/\?\d+/g, (match) => '?' + ' '.repeat(match.length - 1));
}

/** node-sql-parser does not know `[name]` quoting; backticks mean the same to SQLite. */
function rewriteBracketIdentifier(identifier: string): string {
  if (!identifier.startsWith('[') || identifier.includes('`')) return identifier;
  return '`' + identifier.slice(1, -1) + '`';
}

function classifyPragma(text: string): Verdict | undefined {
  if (leadingKeyword(text) !== 'PRAGMA') return undefined;
  if (READ_ONLY_PRAGMA.test(text)) return readVerdict('PRAGMA');
  return writeVerdict(
    'PRAGMA',
    'Only PRAGMA table_info/table_xinfo/index_list/index_info/index_xinfo/foreign_key_list(name) are reads',
  );
}

const SQLITE_DIALECT: NodeSqlDialect = {
  engine: 'sqlite',
  databases: ['sqlite'],
  sanitize: { rewriteCode: rewriteNumberedParameters, rewriteIdentifier: rewriteBracketIdentifier },
  explainPrefix: EXPLAIN_PREFIX,
  calls: { engine: 'SQLite', functions: SQLITE_FUNCTIONS, parenKeywords: SQLITE_PAREN_KEYWORDS, tableFunctionPrefix: 'pragma_' },
  writeKeywords: SQLITE_WRITE_KEYWORDS,
  classifyUnparsed: classifyPragma,
};

export function classifySqlite(sql: string): Verdict {
  return classifyWithNodeSql(sql, SQLITE_DIALECT);
}
