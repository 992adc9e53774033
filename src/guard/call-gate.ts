// The function allowlist of MySQL/MariaDB and SQLite, applied to the text itself. Neither
// engine has a volatility catalog, and node-sql-parser's AST is not the server's: a call it
// reads as something else would escape an AST check. Every function call in these dialects
// is written `name(` (keyword-functions without parentheses, CURRENT_DATE and friends, only
// read clocks and session names), so every `name(` in the statement must be a vetted
// built-in (allowlist-mysql.ts, allowlist-sqlite.ts) or a keyword that takes a parenthesis
// without calling anything (IN (…), VALUES (…), DECIMAL(10,2), …). Anything else — a stored or
// loadable function, an application-defined one, a schema-qualified call — is not a read.
//
// Runs on the sanitized statement (comments blanked, string bodies neutral: sql-lexer.ts), in
// one pass, linear in the text.

export interface CallAllowlist {
  engine: string;
  functions: ReadonlySet<string>;
  parenKeywords: ReadonlySet<string>;
  /** MySQL: a quoted name before `(` (`` `left`(…) ``) calls a stored function, never the
   * built-in. */
  quotedCallsAreStored?: boolean;
  /** Keywords that take a parenthesis only in one place, where the same name elsewhere would
   * call a stored function: MySQL's `MATCH (…) AGAINST (…)`, `JSON_TABLE(… COLUMNS (…))`,
   * `x MEMBER OF (…)`. */
  contextKeywords?: (tokens: readonly Token[], index: number, openCalls: readonly string[]) => boolean;
  /** SQLite: table-valued functions need no parenthesis (`FROM pragma_optimize` runs ANALYZE):
   * every word with this prefix must be on the list, called or not. */
  tableFunctionPrefix?: string;
  /** MySQL: a parenthesis after a (possibly quoted or qualified) name that is a column list in
   * its one place, `INSERT INTO t (a, b)`, not a call. */
  columnList?: (tokens: readonly Token[], index: number) => boolean;
}

export interface Token {
  kind: 'word' | 'quoted' | 'string' | 'punct';
  /** Lower-case; quoted identifiers without their quotes. */
  value: string;
}

// MySQL names may start with a digit or `$` (`9x(1)` calls a stored function `9x`): a word is
// any run of these, numbers included; a number before `(` is then refused like any unknown name.
const WORD_START = /[\w$\u0080-\uffff]/;
const WORD_PART = /[\w$\u0080-\uffff]/;

/** Lower-case for ASCII only: no built-in has another letter, and full Unicode folding would
 * turn the KELVIN SIGN in `ranK(1)` into `rank`, a built-in to the guard and a stored function
 * to MariaDB. */
function asciiLower(text: string): string {
  return text.replace(/[A-Z]+/g, (upper) => upper.toLowerCase());
}

export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v') {
      i++;
      continue;
    }
    const close = c === '"' ? '"' : c === '`' ? '`' : c === '[' ? ']' : c === "'" ? "'" : null;
    if (close !== null) {
      // The lexer balanced quotes already; a doubled quote inside simply ends one token and
      // starts the next, which changes nothing below.
      const end = text.indexOf(close, i + 1);
      const stop = end === -1 ? text.length : end + 1;
      tokens.push({ kind: c === "'" ? 'string' : 'quoted', value: asciiLower(text.slice(i + 1, stop - 1)) });
      i = stop;
      continue;
    }
    if (WORD_START.test(c)) {
      let j = i + 1;
      while (j < text.length && WORD_PART.test(text[j])) j++;
      tokens.push({ kind: 'word', value: asciiLower(text.slice(i, j)) });
      i = j;
      continue;
    }
    tokens.push({ kind: 'punct', value: c });
    i++;
  }
  return tokens;
}

/** Index of the `)` closing the `(` at `open`, or -1. */
function closingParen(tokens: Token[], open: number): number {
  let depth = 0;
  for (let i = open; i < tokens.length; i++) {
    if (tokens[i].kind !== 'punct') continue;
    if (tokens[i].value === '(') depth++;
    else if (tokens[i].value === ')' && --depth === 0) return i;
  }
  return -1;
}

const CTE_LEADERS = new Set(['with', 'recursive', ',']);

/** `WITH name(a, b) AS (…)`: a CTE's column list, not a call. The name follows WITH,
 * RECURSIVE or a comma, the list holds names and commas only, and it is followed by AS [NOT]
 * [MATERIALIZED] and `(`. */
function isCteColumnList(tokens: Token[], name: number): boolean {
  const before = tokens[name - 1];
  if (before === undefined || !CTE_LEADERS.has(before.value)) return false;
  const close = closingParen(tokens, name + 1);
  if (close === -1 || tokens[close + 1]?.value !== 'as') return false;
  for (let i = name + 2; i < close; i++) {
    const token = tokens[i];
    const isName = token.kind === 'quoted' || (token.kind === 'word' && /^[A-Za-z_\u0080-\uffff]/.test(token.value));
    if (!isName && !isPunct(token, ',')) return false;
  }
  let next = close + 2;
  if (tokens[next]?.value === 'not') next++;
  if (tokens[next]?.value === 'materialized') next++;
  return tokens[next]?.value === '(';
}

export interface DisallowedCall {
  name: string;
  reason: string;
}

export interface CallScan {
  /** The first call not allowed in a read. */
  disallowed?: DisallowedCall;
  /** Every name called (or keyword used as one): MySQL checks them against the server's
   * stored functions, since a name built in elsewhere is a free name there. */
  calls: string[];
}

function isPunct(token: Token | undefined, value: string): boolean {
  return token !== undefined && token.kind === 'punct' && token.value === value;
}

/** Checks every call in `text` (see the header). */
export function scanCalls(text: string, allowlist: CallAllowlist): CallScan {
  const tokens = tokenize(text);
  const calls = new Set<string>();
  // The name before each open parenthesis ('' when it is no call), innermost last.
  const open: string[] = [];
  const refuse = (name: string, reason: string): CallScan => ({ disallowed: { name, reason }, calls: [...calls] });
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    if (token.kind === 'punct') {
      if (token.value === ')') open.pop();
      else if (token.value === '(') open.push('');
      continue;
    }
    const prefix = allowlist.tableFunctionPrefix;
    if (prefix !== undefined && token.kind !== 'string' && token.value.startsWith(prefix) && !allowlist.functions.has(token.value)) {
      return refuse(token.value, `Table function ${token.value} is not on the ${allowlist.engine} allowlist of read-only functions`);
    }
    if (!isPunct(tokens[i + 1], '(')) continue;
    // SQLite takes a string literal for a table name, table functions included
    // (`FROM 'pragma_optimize'(…)`), and the sanitizer has zeroed its text: no string may stand
    // before a parenthesis.
    if (token.kind === 'string') return refuse(token.value, 'A string literal used as a function or table name is not allowed in a read');
    const name = token.value;
    // The parenthesis is consumed here so the stack records whose it is.
    open.push(name);
    i++;
    if (allowlist.columnList?.(tokens, i - 1)) continue;
    if (isPunct(tokens[i - 2], '.')) {
      return refuse(name, `Function ${name}() is schema-qualified: only built-in functions are allowed in a read`);
    }
    if (token.kind === 'quoted' && allowlist.quotedCallsAreStored) {
      return refuse(name, `Function ${name}() is quoted, which calls a stored function rather than the built-in`);
    }
    if (token.kind === 'word') {
      if (allowlist.parenKeywords.has(name)) continue;
      // `… AS t(a, b)`: a derived table's column names.
      if (tokens[i - 2]?.kind === 'word' && tokens[i - 2]?.value === 'as') continue;
      // Grammar in its one place (no call): nothing for the stored-function check to ask.
      if (allowlist.contextKeywords?.(tokens, i - 1, open.slice(0, -1))) continue;
    }
    if (isCteColumnList(tokens, i - 1)) continue;
    if (!allowlist.functions.has(name)) {
      return refuse(name, `Function ${name}() is not on the ${allowlist.engine} allowlist of built-in functions without side effects`);
    }
    calls.add(name);
  }
  return { calls: [...calls] };
}

/** The first call in `text` not allowed in a read, or undefined when every call is allowed. */
export function findDisallowedCall(text: string, allowlist: CallAllowlist): DisallowedCall | undefined {
  return scanCalls(text, allowlist).disallowed;
}

/** Keywords that make a statement something other than a read wherever they stand (FOR
 * UPDATE, LOCK IN SHARE MODE, INTO OUTFILE, a data-modifying statement after WITH). Used only
 * for text the parser could not read, where no AST says which clause a word belongs to. */
const WRITE_WORDS = new Set([
  'insert',
  'update',
  'delete',
  'replace',
  'merge',
  'upsert',
  'create',
  'drop',
  'alter',
  'truncate',
  'rename',
  'into',
  'outfile',
  'dumpfile',
  'lock',
  'share',
  'nowait',
  'call',
  'handler',
  'load',
  'pragma',
  'attach',
  'detach',
  'vacuum',
  'reindex',
  'grant',
  'revoke',
  'set',
  'do',
  'prepare',
  'execute',
  'begin',
  'commit',
  'rollback',
  'savepoint',
  'release',
]);

/** For text the parser could not read: the first word that is not a read's, ignoring words
 * used as function names (`replace(…)`, checked by findDisallowedCall). */
export function findWriteWord(text: string): string | undefined {
  const tokens = tokenize(text);
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    if (token.kind !== 'word' || !WRITE_WORDS.has(token.value)) continue;
    if (tokens[i + 1]?.value === '(') continue;
    return token.value.toUpperCase();
  }
  return undefined;
}

/** Words that end a FROM list at their parenthesis depth. */
const FROM_LIST_END = new Set([
  'where',
  'group',
  'having',
  'order',
  'limit',
  'window',
  'union',
  'intersect',
  'except',
  'select',
  'values',
  'returning',
]);

/** SQLite reads a string literal where a table name goes as that table's name, table-valued
 * pragma functions included (`FROM 'pragma_integrity_check'`): the guard sees zeros there. A
 * string after FROM, JOIN, IN, a dot, or a comma of a FROM list is therefore refused. */
export function findStringTableName(text: string): string | undefined {
  const tokens = tokenize(text);
  const fromList: boolean[] = [false];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    const depth = fromList.length - 1;
    if (token.kind === 'punct') {
      if (token.value === '(') fromList.push(false);
      else if (token.value === ')' && fromList.length > 1) fromList.pop();
      continue;
    }
    if (token.kind === 'word') {
      if (token.value === 'from' || token.value === 'join') fromList[depth] = true;
      else if (FROM_LIST_END.has(token.value)) fromList[depth] = false;
      continue;
    }
    if (token.kind !== 'string') continue;
    const before = tokens[i - 1];
    if (before === undefined) continue;
    const tablePlace =
      (before.kind === 'word' && (before.value === 'from' || before.value === 'join' || before.value === 'in')) ||
      isPunct(before, '.') ||
      (isPunct(before, ',') && fromList[depth]);
    if (tablePlace) return 'A string literal used as a table name is not allowed in a read';
  }
  return undefined;
}
