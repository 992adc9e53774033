// Read-only guard for SQLite: node-sql-parser (sqlite grammar) on a copy sanitized by the
// SQLite-faithful lexer in sql-lexer.ts, plus explicit rules. SQLite has no backslash escapes,
// but node-sql-parser applies them, so `'a\', load_extension('x') -- '` would look like one
// string; the parser therefore only ever sees string bodies of zeros. `#` is a parameter
// prefix to SQLite and a comment to the parser: refused. See guard.ts for what no guard stops.
import type { Verdict } from './verdict.ts';
import { SQLITE_FUNCTIONS, SQLITE_PAREN_KEYWORDS } from './allowlist-sqlite.ts';
import { findStringTableName } from './call-gate.ts';
import { COMMON_WRITE_KEYWORDS, classifyWithNodeSql, leadingKeyword, type NodeSqlDialect } from './node-sql-guard.ts';
import { findStatementShape, lexSql, sanitizeRange } from './sql-lexer.ts';
import { readVerdict, writeVerdict } from './verdict-builders.ts';

const IDENTIFIER = String.raw`(?:[A-Za-z_][\w$]*|\x60[^\x60]*\x60|"[^"]*")`;

/** Schema-reading pragmas, only in call form with one name argument: `PRAGMA x = …` and the
 * bare form of most pragmas change the database or the connection (journal_mode, writable_schema,
 * query_only = 0 would even lift the engine's read-only backstop). */
const READ_ONLY_PRAGMA = new RegExp(
  String.raw`^\s*PRAGMA\s+(?:${IDENTIFIER}\s*\.\s*)?(?:table_info|table_xinfo|index_list|index_info|index_xinfo|foreign_key_list)\s*\(\s*(?:${IDENTIFIER}|'0*')\s*\)\s*$`,
  'i',
);

/** PRAGMAs whose query form (no `=`, no argument) only reports a setting or a count (API.md
 * v1.1). Left out: optimize (runs ANALYZE), integrity_check / quick_check / foreign_key_check
 * (whole-database scans), wal_checkpoint, incremental_vacuum, shrink_memory (act, not report). */
const READ_ONLY_PRAGMA_QUERIES = [
  'application_id',
  'auto_vacuum',
  'automatic_index',
  'busy_timeout',
  'cache_size',
  'cache_spill',
  'cell_size_check',
  'checkpoint_fullfsync',
  'collation_list',
  'compile_options',
  'data_version',
  'database_list',
  'defer_foreign_keys',
  'encoding',
  'foreign_keys',
  'freelist_count',
  'fullfsync',
  'function_list',
  'ignore_check_constraints',
  'journal_mode',
  'journal_size_limit',
  'legacy_alter_table',
  'locking_mode',
  'max_page_count',
  'mmap_size',
  'module_list',
  'page_count',
  'page_size',
  'pragma_list',
  'query_only',
  'read_uncommitted',
  'recursive_triggers',
  'reverse_unordered_selects',
  'schema_version',
  'secure_delete',
  'soft_heap_limit',
  'synchronous',
  'table_list',
  'temp_store',
  'threads',
  'trusted_schema',
  'user_version',
  'wal_autocheckpoint',
];
const READ_ONLY_PRAGMA_QUERY = new RegExp(
  String.raw`^\s*PRAGMA\s+(?:${IDENTIFIER}\s*\.\s*)?(?:${READ_ONLY_PRAGMA_QUERIES.join('|')})\s*$`,
  'i',
);

const EXPLAIN_PREFIX = /^\s*EXPLAIN(?:\s+QUERY\s+PLAN)?\s+/i;
/** EXPLAIN QUERY PLAN only plans, whatever it explains (API.md v1.1). */
const PLAN_ONLY_EXPLAIN = /^\s*EXPLAIN\s+QUERY\s+PLAN\s+/i;

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
  if (READ_ONLY_PRAGMA.test(text) || READ_ONLY_PRAGMA_QUERY.test(text)) return readVerdict('PRAGMA');
  return writeVerdict(
    'PRAGMA',
    'Only PRAGMA table_info/table_xinfo/index_list/index_info/index_xinfo/foreign_key_list(name) and the query form of reporting PRAGMAs (user_version, page_count, journal_mode, …) are reads',
  );
}

const SQLITE_DIALECT: NodeSqlDialect = {
  engine: 'sqlite',
  databases: ['sqlite'],
  sanitize: { rewriteCode: rewriteNumberedParameters, rewriteIdentifier: rewriteBracketIdentifier },
  explainPrefix: EXPLAIN_PREFIX,
  planOnlyExplain: PLAN_ONLY_EXPLAIN,
  calls: { engine: 'SQLite', functions: SQLITE_FUNCTIONS, parenKeywords: SQLITE_PAREN_KEYWORDS, tableFunctionPrefix: 'pragma_' },
  checkSanitized: findStringTableName,
  writeKeywords: SQLITE_WRITE_KEYWORDS,
  classifyUnparsed: classifyPragma,
};

// ATTACH opens (and creates) any file the server may read or write: the metadata store in
// DBQ_DATA_DIR, another workspace's database. VACUUM INTO writes a full copy of the database
// to any path. DETACH only makes sense after ATTACH. None of them is a write to the
// connection's own file, so none is an admin's privilege: refused for every role, EXPLAIN
// forms included (EXPLAIN only compiles, but one rule is easier to trust). SQLite allows them
// only as a whole statement (not in a CTE, a trigger or an expression), so the statement's
// first keyword decides; sqlite-runner.mjs checks the compiled program again.
const OTHER_FILES = /^[\s(]*(?:EXPLAIN(?:\s+QUERY\s+PLAN)?\s+)?(ATTACH|DETACH|VACUUM)\b/i;
const OTHER_FILES_REASONS: Record<string, string> = {
  ATTACH: 'ATTACH is not allowed: a connection reaches its own database file only',
  DETACH: 'DETACH is not allowed: a connection reaches its own database file only',
  VACUUM: 'VACUUM INTO is not allowed: it writes a copy of the database to another file',
};

function refuseOtherFiles(sql: string): Verdict | undefined {
  // The keywords cannot be spelled without their letters: text without them needs no lexing.
  if (!/ATTACH|DETACH|VACUUM/i.test(sql)) return undefined;
  const lexed = lexSql(sql, 'sqlite');
  const shape = findStatementShape(lexed);
  if (shape.shape !== 'single') return undefined;
  const text = sanitizeRange(lexed, shape.start, shape.end, SQLITE_DIALECT.sanitize);
  const match = OTHER_FILES.exec(text);
  if (match === null) return undefined;
  const keyword = match[1].toUpperCase();
  // Plain VACUUM rewrites the connection's own file: an admin's write like any other.
  if (keyword === 'VACUUM' && !/\bINTO\b/i.test(text.slice(match[0].length))) return undefined;
  return { kind: 'rejected', statementType: keyword, reason: OTHER_FILES_REASONS[keyword], refusal: 'other_files' };
}

export function classifySqlite(sql: string): Verdict {
  return refuseOtherFiles(sql) ?? classifyWithNodeSql(sql, SQLITE_DIALECT);
}
