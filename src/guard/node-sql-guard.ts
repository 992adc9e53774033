// The classification path shared by MySQL/MariaDB and SQLite: lex with the engine's own rules,
// refuse what the lexer finds dangerous, split statements, then parse a sanitized copy of the
// one statement with node-sql-parser. The dialect files add their explicit rules as hooks.
import type { EngineName } from '../engines/engine.ts';
import { findWriteWord, scanCalls, type CallAllowlist } from './call-gate.ts';
import { classifyAst, findNonReadReason, parseOneStatement, type NodeSqlDatabase } from './node-sql-ast.ts';
import { findStatementShape, lexSql, sanitizeRange, type SanitizeOptions } from './sql-lexer.ts';
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

export interface NodeSqlDialect {
  engine: EngineName;
  /** Grammars tried in order; the first that parses the statement decides. */
  databases: readonly NodeSqlDatabase[];
  sanitize: SanitizeOptions;
  /** Matches an EXPLAIN prefix the parser cannot read, followed by the explained statement. */
  explainPrefix: RegExp;
  /** An EXPLAIN form that only plans (SQLite's EXPLAIN QUERY PLAN): a read whatever it
   * explains, unless that is refused for everyone. */
  planOnlyExplain?: RegExp;
  /** MySQL/MariaDB: given the matched EXPLAIN prefix, whether it only plans (no ANALYZE). An
   * INSERT/UPDATE/DELETE/REPLACE it explains is then a read when every part of it passes a
   * read's checks (classifyPlannedWrite). */
  prefixPlansOnly?: (prefix: string) => boolean;
  /** Every `name(` in a read must be one of these (call-gate.ts). */
  calls: CallAllowlist;
  /** Statement keywords that are never reads, recognised even when the parser cannot parse them. */
  writeKeywords: ReadonlySet<string>;
  /** Lexical rules on the sanitized statement, checked before parsing. */
  checkSanitized?: (text: string) => string | undefined;
  /** Explicit rules for statements the parser cannot parse (PRAGMA, SHOW … LIKE, …). */
  classifyUnparsed?: (text: string) => Verdict | undefined;
}

export function classifyWithNodeSql(sql: string, dialect: NodeSqlDialect): Verdict {
  const lexed = lexSql(sql, dialect.engine);
  const shape = findStatementShape(lexed);
  if (shape.shape === 'empty') return emptyStatementVerdict();
  if (shape.shape === 'multiple') return multipleStatementsVerdict();
  const text = sanitizeRange(lexed, shape.start, shape.end, dialect.sanitize);
  const keyword = leadingKeyword(text);
  const problem = lexed.problems[0];
  if (problem !== undefined) return writeVerdict(keyword ?? 'UNKNOWN', problem.message);
  return classifySanitized(text, dialect);
}

/** `text` is one statement with comments blanked and string bodies neutral. */
function classifySanitized(text: string, dialect: NodeSqlDialect): Verdict {
  const keyword = leadingKeyword(text);
  const lexicalReason = dialect.checkSanitized?.(text);
  if (lexicalReason !== undefined) return writeVerdict(keyword ?? 'UNKNOWN', lexicalReason);
  // PRAGMA has its own exact rules (classifyUnparsed); `table_info(t)` there is no call.
  const calls = keyword === 'PRAGMA' ? { calls: [] } : scanCalls(text, dialect.calls);
  if (calls.disallowed !== undefined) {
    return { ...writeVerdict(keyword ?? 'UNKNOWN', calls.disallowed.reason, 'refused_name'), details: { function: calls.disallowed.name } };
  }
  const verdict = classifyCalled(text, keyword, dialect);
  // MySQL: a name built in on another server or version is free for a stored function here.
  return verdict.kind === 'read' && dialect.calls.quotedCallsAreStored && calls.calls.length > 0
    ? { ...verdict, calledFunctions: calls.calls }
    : verdict;
}

function classifyCalled(text: string, keyword: string | undefined, dialect: NodeSqlDialect): Verdict {
  const explained = dialect.explainPrefix.exec(text);
  if (explained !== null) {
    const inner = classifySanitized(text.slice(explained[0].length), dialect);
    if (inner.kind === 'write' && dialect.planOnlyExplain?.test(text)) return { ...readVerdict('EXPLAIN'), askEngine: inner.askEngine };
    if (inner.kind === 'write' && dialect.prefixPlansOnly?.(explained[0])) {
      const planned = classifyPlannedWrite(text.slice(explained[0].length), dialect);
      if (planned !== undefined) return planned;
    }
    return explainVerdict(inner);
  }
  // node-sql-parser (a PEG parser) takes ~3 ms per KB: past PARSER_MAX_CHARS the statement
  // takes the same road as text it cannot read — the lexical rules and the engine's compiler.
  const ast = text.length <= PARSER_MAX_CHARS ? parseOneStatement(text, dialect.databases) : undefined;
  if (ast !== undefined) return classifyAst(ast);
  const explicit = dialect.classifyUnparsed?.(text);
  if (explicit !== undefined) return explicit;
  if (keyword !== undefined && dialect.writeKeywords.has(keyword)) {
    return writeVerdict(keyword, notAReadReason(keyword));
  }
  // Valid SQL the JavaScript parser does not know (window frames, FILTER, JSON_TABLE, …) or a
  // typo: the engine compiles it without running it (src/guard/decide.ts). It can only be a
  // read when it starts as one and no word of a write stands anywhere in it; every call in it
  // already passed the allowlist above, and the engine's read-only mode runs it.
  const writeWord = findWriteWord(text);
  if (keyword !== undefined && READ_KEYWORDS.has(keyword) && writeWord === undefined) {
    return { ...readVerdict('SELECT'), askEngine: true };
  }
  return { ...unparseableVerdict(), askEngine: true };
}

const READ_KEYWORDS = new Set(['SELECT', 'WITH', 'VALUES', 'TABLE']);

/** Statements a plan-only EXPLAIN may explain (MySQL/MariaDB), as node-sql-parser types them. */
const PLANNED_WRITE_TYPES = new Set(['insert', 'update', 'delete', 'replace']);

/** The statement after a plan-only EXPLAIN prefix, when it is an INSERT/UPDATE/DELETE/REPLACE
 * whose every part passes a read's checks: the whole text already passed the call gate and the
 * lexical rules (classifySanitized); here the tree below the statement node is walked as a
 * read's is (no nested statement, no INTO, no locking clause, no assignment). Undefined (the
 * caller refuses) when the parser cannot read it or it is another kind of statement. */
function classifyPlannedWrite(text: string, dialect: NodeSqlDialect): Verdict | undefined {
  if (text.length > PARSER_MAX_CHARS) return undefined;
  const ast = parseOneStatement(text, dialect.databases);
  if (ast === undefined || typeof ast.type !== 'string' || !PLANNED_WRITE_TYPES.has(ast.type)) return undefined;
  // The statement node itself is the one write allowed; everything under it is judged as a read's.
  const reason = findNonReadReason({ ...ast, type: undefined });
  if (reason !== undefined) return writeVerdict('EXPLAIN', `EXPLAIN of ${ast.type.toUpperCase()}: ${reason}`);
  return { ...readVerdict('EXPLAIN'), planOnlyWrite: true };
}

/** Longest statement handed to node-sql-parser (see classifyCalled). */
export const PARSER_MAX_CHARS = 16_384;

/** The first word of the statement, upper-cased, skipping opening parentheses. */
export function leadingKeyword(text: string): string | undefined {
  const match = /^[\s(]*([A-Za-z_]+)/.exec(text);
  return match === null ? undefined : match[1].toUpperCase();
}

/** Keywords that start a statement that is never a read, in both MySQL and SQLite. */
export const COMMON_WRITE_KEYWORDS: readonly string[] = [
  'INSERT',
  'UPDATE',
  'DELETE',
  'REPLACE',
  'MERGE',
  'UPSERT',
  'CREATE',
  'DROP',
  'ALTER',
  'TRUNCATE',
  'RENAME',
  'GRANT',
  'REVOKE',
  'SET',
  'BEGIN',
  'START',
  'COMMIT',
  'END',
  'ROLLBACK',
  'SAVEPOINT',
  'RELEASE',
  'LOCK',
  'UNLOCK',
  'CALL',
  'DO',
  'LOAD',
  'PREPARE',
  'EXECUTE',
  'DEALLOCATE',
  'ANALYZE',
  'REINDEX',
  'VACUUM',
  'ATTACH',
  'DETACH',
];
