// A lexer that only finds where strings, quoted identifiers and comments start and end, with
// each engine's own rules. It exists because node-sql-parser does not lex like the databases:
// it reads `/*! DROP TABLE t */` as a comment that MySQL executes, `--sleep(5)` as a comment
// that MySQL reads as `- -sleep(5)`, `#x` as a comment that SQLite reads as a parameter, and
// backslash escapes inside SQLite strings where SQLite has none (`'a\', load_extension(…) --'`).
// The guard therefore splits statements with this lexer and hands the parser a sanitized copy
// (comments blanked, string bodies neutral) so both see the same token boundaries.
// For PostgreSQL the real parser does the work; this lexer only counts empty statements around it.

import type { EngineName } from '../engines/engine.ts';

export type SegmentKind = 'code' | 'string' | 'identifier' | 'comment' | 'executable-comment';

export interface Segment {
  kind: SegmentKind;
  start: number;
  end: number;
}

export type LexProblemCode =
  | 'executable-comment'
  | 'optimizer-hint'
  | 'ambiguous-backslash'
  | 'dash-dash-operator'
  | 'hash-parameter'
  | 'quote-in-identifier'
  | 'unterminated';

export interface LexProblem {
  code: LexProblemCode;
  message: string;
}

export interface LexedSql {
  sql: string;
  segments: Segment[];
  problems: LexProblem[];
}

const PROBLEM_MESSAGES: Record<LexProblemCode, string> = {
  'executable-comment': 'MySQL/MariaDB executable comments (/*! … */, /*M! … */) are run by the server and are not allowed in a read',
  'optimizer-hint': 'Optimizer hints (/*+ … */) can change server settings and are not allowed in a read',
  'ambiguous-backslash':
    'A backslash before a quote reads differently with and without backslash escapes (NO_BACKSLASH_ESCAPES, standard_conforming_strings); not a read',
  'dash-dash-operator': "'--' not followed by a space is not a comment in MySQL; not a read",
  'hash-parameter': "'#' is not a comment in SQLite; not a read",
  'quote-in-identifier': 'Quoted identifiers containing quotes or backslashes are not allowed in a read',
  unterminated: 'Unterminated string, identifier or comment',
};

const IDENTIFIER_CHAR = /[A-Za-z0-9_$\u0080-\uffff]/;
const ASCII_SPACE = /[ \t\n\r\f\v]/;

function isIdentifierChar(char: string | undefined): boolean {
  return char !== undefined && IDENTIFIER_CHAR.test(char);
}

/** End (exclusive) of a quoted token starting at `start`, or -1 when it never closes. */
function scanQuoted(sql: string, start: number, quote: string, backslashEscapes: boolean): number {
  for (let i = start + 1; i < sql.length; i++) {
    const char = sql[i];
    if (backslashEscapes && char === '\\') {
      i++;
    } else if (char === quote) {
      if (sql[i + 1] !== quote) return i + 1;
      i++;
    }
  }
  return -1;
}

/** PostgreSQL ends `--` comments at \n or \r; MySQL and SQLite only at \n. */
function lineCommentEnd(sql: string, start: number, endsAtCarriageReturn: boolean): number {
  for (let i = start; i < sql.length; i++) {
    if (sql[i] === '\n' || (endsAtCarriageReturn && sql[i] === '\r')) return i + 1;
  }
  return sql.length;
}

// PostgreSQL block comments nest: the first closing marker inside a nested one does not end the outer.
function nestedBlockCommentEnd(sql: string, start: number): number {
  let depth = 0;
  for (let i = start; i < sql.length - 1; i++) {
    if (sql[i] === '/' && sql[i + 1] === '*') {
      depth++;
      i++;
    } else if (sql[i] === '*' && sql[i + 1] === '/') {
      depth--;
      i++;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

function flatBlockCommentEnd(sql: string, start: number): number {
  const close = sql.indexOf('*/', start + 2);
  return close === -1 ? -1 : close + 2;
}

class Lexer {
  readonly segments: Segment[] = [];
  readonly problems: LexProblem[] = [];
  private codeStart = 0;

  constructor(
    private readonly sql: string,
    private readonly engine: EngineName,
  ) {}

  run(): LexedSql {
    let i = 0;
    while (i < this.sql.length) {
      const token = this.readToken(i);
      if (token === undefined) {
        i++;
        continue;
      }
      this.pushCode(i);
      this.segments.push(token);
      i = token.end;
      this.codeStart = i;
    }
    this.pushCode(this.sql.length);
    return { sql: this.sql, segments: this.segments, problems: this.problems };
  }

  private pushCode(end: number): void {
    if (end > this.codeStart) this.segments.push({ kind: 'code', start: this.codeStart, end });
  }

  private report(code: LexProblemCode): void {
    if (!this.problems.some((problem) => problem.code === code)) {
      this.problems.push({ code, message: PROBLEM_MESSAGES[code] });
    }
  }

  private closeAt(kind: SegmentKind, start: number, end: number): Segment {
    if (end !== -1) return { kind, start, end };
    this.report('unterminated');
    return { kind, start, end: this.sql.length };
  }

  private readToken(i: number): Segment | undefined {
    const char = this.sql[i];
    const next = this.sql[i + 1];
    if (char === "'") return this.readString(i);
    if (char === '"') return this.readQuotedIdentifier(i, '"');
    if (char === '`' && this.engine !== 'postgres') return this.readQuotedIdentifier(i, '`');
    if (char === '[' && this.engine === 'sqlite') return this.readQuotedIdentifier(i, ']');
    if (char === '-' && next === '-') return this.readDashComment(i);
    if (char === '/' && next === '*') return this.readBlockComment(i);
    if (char === '#') return this.readHash(i);
    if (char === '$' && this.engine === 'postgres') return this.readDollarQuote(i);
    return undefined;
  }

  private readString(i: number): Segment {
    if (this.engine === 'mysql') return this.readMysqlString(i, 'string');
    if (this.engine === 'sqlite') return this.closeAt('string', i, scanQuoted(this.sql, i, "'", false));
    if (this.isPostgresEscapeString(i)) return this.closeAt('string', i, scanQuoted(this.sql, i, "'", true));
    return this.readPostgresString(i);
  }

  /** libpg-query assumes standard_conforming_strings = on; a server running with it off reads
   * backslash escapes in plain strings, so `'\'` + newline + `', pg_sleep(5) --'` is one string
   * to the parser and a function call to that server. Deny when the two readings disagree. */
  private readPostgresString(i: number): Segment {
    const standard = scanQuoted(this.sql, i, "'", false);
    if (standard !== scanQuoted(this.sql, i, "'", true)) this.report('ambiguous-backslash');
    return this.closeAt('string', i, standard);
  }

  /** MySQL strings honour backslash escapes unless sql_mode has NO_BACKSLASH_ESCAPES, which the
   * guard cannot see: `'a\'; DROP TABLE t; -- '` is one string in one mode, two statements in
   * the other. Deny when the modes disagree on where the string ends. */
  private readMysqlString(i: number, kind: SegmentKind): Segment {
    const quote = this.sql[i];
    const withEscapes = scanQuoted(this.sql, i, quote, true);
    const withoutEscapes = scanQuoted(this.sql, i, quote, false);
    if (withEscapes !== withoutEscapes) this.report('ambiguous-backslash');
    return this.closeAt(kind, i, withEscapes);
  }

  private isPostgresEscapeString(i: number): boolean {
    const prefix = this.sql[i - 1];
    return this.engine === 'postgres' && (prefix === 'E' || prefix === 'e') && !isIdentifierChar(this.sql[i - 2]);
  }

  /** A double-quoted token in MySQL is a string, or an identifier under ANSI_QUOTES; either way
   * the parser must see the same boundaries, so quotes and backslashes inside are refused. */
  private readQuotedIdentifier(i: number, close: string): Segment {
    const segment =
      this.engine === 'mysql' && close === '"'
        ? this.readMysqlString(i, 'identifier')
        : this.closeAt('identifier', i, this.quotedIdentifierEnd(i, close));
    const body = this.sql.slice(segment.start + 1, segment.end - 1);
    if (body.includes(close) || body.includes('\\')) this.report('quote-in-identifier');
    return segment;
  }

  /** SQLite `[…]` has no escape: the first `]` ends it. */
  private quotedIdentifierEnd(i: number, close: string): number {
    if (close !== ']') return scanQuoted(this.sql, i, close, false);
    const end = this.sql.indexOf(']', i + 1);
    return end === -1 ? -1 : end + 1;
  }

  private readDashComment(i: number): Segment | undefined {
    // MySQL needs whitespace or a control character after `--`; `1--1` is `1 - -1`.
    if (this.engine === 'mysql') {
      const after = this.sql[i + 2];
      if (after !== undefined && after.charCodeAt(0) > 32) {
        this.report('dash-dash-operator');
        return undefined;
      }
    }
    return { kind: 'comment', start: i, end: lineCommentEnd(this.sql, i, this.engine === 'postgres') };
  }

  private readBlockComment(i: number): Segment {
    if (this.engine === 'postgres') return this.closeAt('comment', i, nestedBlockCommentEnd(this.sql, i));
    const end = flatBlockCommentEnd(this.sql, i);
    // SQLite ends an unterminated block comment at the end of input without complaint.
    if (this.engine === 'sqlite') return { kind: 'comment', start: i, end: end === -1 ? this.sql.length : end };
    const marker = this.sql.slice(i + 2, i + 4);
    if (marker.startsWith('!') || marker.toUpperCase() === 'M!') {
      this.report('executable-comment');
      return this.closeAt('executable-comment', i, end);
    }
    if (marker.startsWith('+')) {
      this.report('optimizer-hint');
      return this.closeAt('executable-comment', i, end);
    }
    return this.closeAt('comment', i, end);
  }

  private readHash(i: number): Segment | undefined {
    if (this.engine === 'mysql') return { kind: 'comment', start: i, end: lineCommentEnd(this.sql, i, false) };
    // node-sql-parser skips `#…` as a comment; SQLite reads `#name` as a parameter.
    if (this.engine === 'sqlite') this.report('hash-parameter');
    return undefined;
  }

  private readDollarQuote(i: number): Segment | undefined {
    if (isIdentifierChar(this.sql[i - 1])) return undefined;
    const tag = /^\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/.exec(this.sql.slice(i));
    if (tag === null) return undefined;
    const close = this.sql.indexOf(tag[0], i + tag[0].length);
    return this.closeAt('string', i, close === -1 ? -1 : close + tag[0].length);
  }
}

export function lexSql(sql: string, engine: EngineName): LexedSql {
  return new Lexer(sql, engine).run();
}

export type StatementShape = { shape: 'empty' } | { shape: 'multiple' } | { shape: 'single'; start: number; end: number };

/** One statement with at most one trailing `;`; `SELECT 1;;` and `;SELECT 1` hold empty
 * statements, which the server would run as separate statements, so they count as multiple. */
export function findStatementShape(lexed: LexedSql): StatementShape {
  const { pieces, filled } = splitOnSemicolons(lexed);
  if (!filled.includes(true)) return { shape: 'empty' };
  const trailingEmpty = pieces.length === 1 || (pieces.length === 2 && !filled[1]);
  if (!filled[0] || !trailingEmpty) return { shape: 'multiple' };
  return { shape: 'single', start: pieces[0].start, end: pieces[0].end };
}

export function countCodeSemicolons(lexed: LexedSql): number {
  return splitOnSemicolons(lexed).pieces.length - 1;
}

interface Piece {
  start: number;
  end: number;
}

/** The text between code semicolons, and whether each piece holds anything but blanks and
 * comments. One pass over the segments: `SELECT 1;'';'';…` (30,000 pieces) must cost no more
 * than its length (a piece-by-segment check took seconds and froze the server). */
function splitOnSemicolons(lexed: LexedSql): { pieces: Piece[]; filled: boolean[] } {
  const pieces: Piece[] = [];
  const filled: boolean[] = [];
  let start = 0;
  let fill = false;
  for (const segment of lexed.segments) {
    if (segment.kind === 'comment') continue;
    // Strings, quoted identifiers and executable comments are statement text; they hold no
    // code semicolon.
    if (segment.kind !== 'code') {
      fill = true;
      continue;
    }
    for (let i = segment.start; i < segment.end; i++) {
      const char = lexed.sql[i];
      if (char === ';') {
        pieces.push({ start, end: i });
        filled.push(fill);
        start = i + 1;
        fill = false;
      } else if (!fill && !ASCII_SPACE.test(char)) {
        fill = true;
      }
    }
  }
  pieces.push({ start, end: lexed.sql.length });
  filled.push(fill);
  return { pieces, filled };
}

export interface SanitizeOptions {
  /** Rewrites plain code (never strings, identifiers or comments), keeping its length. */
  rewriteCode?: (code: string) => string;
  /** Replacement for a whole quoted identifier, e.g. SQLite `[x]` to `` `x` ``. */
  rewriteIdentifier?: (identifier: string) => string;
}

/** The text between `start` and `end` as the parser should see it: comments blanked, string
 * bodies replaced by zeros (valid inside '…', X'…' and B'…' alike), so that the parser cannot
 * disagree with the database about where a string or comment ends. Identifiers stay verbatim:
 * function names matter to the guard. Lengths are kept so parser positions still line up. */
export function sanitizeRange(lexed: LexedSql, start: number, end: number, options: SanitizeOptions = {}): string {
  let out = '';
  for (const segment of lexed.segments) {
    const from = Math.max(segment.start, start);
    const to = Math.min(segment.end, end);
    if (from >= to) continue;
    out += sanitizeSegment(lexed.sql, segment, from, to, options);
  }
  return out;
}

function sanitizeSegment(sql: string, segment: Segment, from: number, to: number, options: SanitizeOptions): string {
  const text = sql.slice(from, to);
  switch (segment.kind) {
    case 'code':
      return options.rewriteCode ? options.rewriteCode(text) : text;
    case 'string':
      return text.length < 2 ? text : text[0] + '0'.repeat(text.length - 2) + text[text.length - 1];
    case 'identifier':
      return options.rewriteIdentifier ? options.rewriteIdentifier(text) : text;
    default:
      return ' '.repeat(text.length);
  }
}
