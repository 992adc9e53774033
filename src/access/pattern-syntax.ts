// The dialect of a curated tool parameter's `pattern`. An admin writes it in
// JavaScript syntax (the JSON Schema `pattern` MCP clients are shown is ECMA-262), and dbq
// matches it with RE2 (re2js), whose time is linear in the value: V8's backtracking RegExp took
// 85–114 s for `^(a+)+$` on a long value and held every workspace's requests meanwhile.
// A pattern is accepted only when it means the same to both: it must compile as a JavaScript
// RegExp with the `u` flag and, after the rewrites below, as RE2. Pure: no I/O, no threads;
// the pattern worker (pattern-worker.ts) and the definition check share it.
import { RE2JS, RE2JSSyntaxException } from 're2js';

/** The most RE2 instructions a pattern may compile to. Matching costs up to ~50 ns per
 * instruction per character of the value (re2js, when its DFA gives up), and compiling a
 * pattern of 160,000 instructions (`(?:a{0,999})` eighty times) took 0.7–1 s. */
export const MAX_PATTERN_PROGRAM = 1_000;

// JavaScript's `\s` (WhiteSpace and LineTerminator); RE2's is ASCII [\t\n\f\r ] only.
const JS_SPACE = String.raw`\t\n\x{0B}\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}`;
// JavaScript's `.` stops at every line terminator; RE2's only at \n.
const JS_DOT = String.raw`[^\n\r\x{2028}\x{2029}]`;

/** A construct RE2 cannot match in linear time, in words, or null. The pattern is already
 * known to be valid JavaScript (u flag), so escapes and classes are well formed. */
export function unsupportedConstruct(pattern: string): string | null {
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') {
      const next = pattern[i + 1] ?? '';
      if (!inClass && /[1-9]/.test(next)) return `a backreference (\\${next})`;
      if (!inClass && next === 'k') return 'a named backreference (\\k<…>)';
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    if (c === '[') inClass = true;
    else if (c === '(' && pattern[i + 1] === '?') {
      const kind = pattern.slice(i + 2, i + 4);
      if (kind.startsWith('=')) return 'a lookahead ((?=…))';
      if (kind.startsWith('!')) return 'a negative lookahead ((?!…))';
      if (kind === '<=') return 'a lookbehind ((?<=…))';
      if (kind === '<!') return 'a negative lookbehind ((?<!…))';
    }
  }
  return null;
}

function hexEscape(codePoint: number): string {
  return `\\x{${codePoint.toString(16).toUpperCase()}}`;
}

/** The pattern in RE2 syntax with JavaScript's meaning: `\uXXXX` and `\u{X}` (surrogate pairs
 * joined) become `\x{X}`, and `.` and `\s`/`\S` outside a class match what they match in
 * JavaScript. Everything else is copied: the two dialects agree on it. */
export function toRe2Syntax(pattern: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') {
      const next = pattern[i + 1] ?? '';
      if (next === 'u') {
        const braced = /^\\u\{([0-9A-Fa-f]+)\}/.exec(pattern.slice(i, i + 12));
        if (braced) {
          out += hexEscape(parseInt(braced[1], 16));
          i += braced[0].length - 1;
          continue;
        }
        const unit = /^\\u([0-9A-Fa-f]{4})(?:\\u([0-9A-Fa-f]{4}))?/.exec(pattern.slice(i, i + 12));
        if (unit) {
          const high = parseInt(unit[1], 16);
          const low = unit[2] === undefined ? -1 : parseInt(unit[2], 16);
          if (high >= 0xd800 && high <= 0xdbff && low >= 0xdc00 && low <= 0xdfff) {
            out += hexEscape(0x10000 + (high - 0xd800) * 0x400 + (low - 0xdc00));
            i += 11;
          } else {
            out += hexEscape(high);
            i += 5;
          }
          continue;
        }
      }
      if (next === 's') out += inClass ? JS_SPACE : `[${JS_SPACE}]`;
      else if (next === 'S' && !inClass) out += `[^${JS_SPACE}]`;
      else out += c + next;
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      out += c;
      continue;
    }
    if (c === '[') inClass = true;
    out += c === '.' ? JS_DOT : c;
  }
  return out;
}

export type CompiledPattern = { ok: true; re: RE2JS; programSize: number } | { ok: false; problem: string };

/** Compiles for matching, or says in words why the pattern is refused. Costs time in the
 * pattern's size (up to ~1 s for 1,000 characters of nested counted repetition): callers keep
 * it off the event loop. */
export function compilePattern(pattern: string): CompiledPattern {
  const construct = unsupportedConstruct(pattern);
  if (construct)
    return {
      ok: false,
      problem: `uses ${construct}, which cannot be matched in linear time (patterns are matched with RE2: no backreferences or lookaround)`,
    };
  let re: RE2JS;
  try {
    re = RE2JS.compile(toRe2Syntax(pattern));
  } catch (err) {
    if (err instanceof RE2JSSyntaxException) {
      const at = err.getPattern();
      return {
        ok: false,
        problem: `is not supported by RE2, which matches patterns in linear time: ${err.getDescription()}${at ? ` (${at})` : ''}`,
      };
    }
    throw err;
  }
  const programSize = re.programSize();
  if (programSize > MAX_PATTERN_PROGRAM) {
    return {
      ok: false,
      problem: `is too complex: it compiles to ${programSize} RE2 instructions, at most ${MAX_PATTERN_PROGRAM} (large counted repetitions such as {500} cost one instruction per repeat)`,
    };
  }
  return { ok: true, re, programSize };
}
