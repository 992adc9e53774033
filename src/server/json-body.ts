// The JSON body parser, in place of Fastify's: the same parse, and the same refusal of keys that
// could poison prototypes later (`__proto__`, `constructor.prototype`), but a refused key is
// named as such (400 invalid_request) instead of being reported as "Invalid JSON body", which
// sent people looking for a syntax error in valid JSON.
//
// Why a pass before JSON.parse: bodies of 1 MB, mostly `[`, cost JSON.parse 120–190 ms each on
// the event loop, before any key was checked on /mcp and /messages (whose authentication runs in the
// handler, after the body), and walking the parsed value for forbidden keys cost up to 1.3 s
// (a path string per node, as long as the node is deep). Now one linear pass over the text,
// before JSON.parse, refuses nesting deeper than MAX_JSON_DEPTH (1 MB of `[` costs 65
// characters) and bodies of more than MAX_JSON_VALUES values, and finds forbidden keys with
// their paths, so the parsed value is never walked.
import type { FastifyInstance } from 'fastify';
import { InvalidJsonError, InvalidRequestError } from '../errors.ts';

/** How deep objects and arrays may nest in a request body. The deepest a dbq request needs is
 * a query's object parameter: the body, `params`, then 32 levels (PARAM_OBJECT_DEPTH). */
export const MAX_JSON_DEPTH = 64;
/** How many values (array elements, object members, objects and arrays) a request body may
 * hold. Shallow but wide bodies cost JSON.parse and the garbage collector the most: 1 MiB of
 * `{},` (350,000 objects) held the event loop 250–800 ms, 1 MiB of `0,` 20–35 ms, before any key
 * was checked on the MCP doors. 50,000 values parse in a few ms; a query's `params` takes at
 * most 10,000 and a tool's array parameter 1,000. */
export const MAX_JSON_VALUES = 50_000;

export type JsonTextScan =
  | { kind: 'ok' }
  | { kind: 'too_deep'; field: string }
  | { kind: 'too_many'; field: string }
  | { kind: 'forbidden'; key: '__proto__' | 'constructor.prototype'; path: string };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const SIMPLE_ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
const HEX4 = /^[0-9A-Fa-f]{4}$/;
/** The longest a forbidden key (`constructor`) can be; longer keys are never decoded. */
const LONGEST_FORBIDDEN = 11;

/** A key as JSON.parse reads it, when it could be `__proto__`, `constructor` or `prototype`;
 * otherwise null. Escapes are decoded by hand: JSON.parse per key cost 1 µs each, 60 ms for a
 * body of 60,000 escaped keys. */
function shortKey(text: string, start: number, end: number): string | null {
  if (end - start - 2 > LONGEST_FORBIDDEN * 6) return null;
  let out = '';
  for (let i = start + 1; i < end - 1; i++) {
    const c = text[i];
    if (c !== '\\') out += c;
    else if (text[i + 1] === 'u') {
      const hex = text.slice(i + 2, i + 6);
      if (!HEX4.test(hex)) return null;
      out += String.fromCharCode(Number.parseInt(hex, 16));
      i += 5;
    } else {
      const simple = SIMPLE_ESCAPES[text[i + 1]];
      if (simple === undefined) return null;
      out += simple;
      i++;
    }
    if (out.length > LONGEST_FORBIDDEN) return null;
  }
  return out;
}

/** Any key, for the one path a refusal names. */
function keyText(text: string, start: number, end: number): string {
  try {
    return JSON.parse(text.slice(start, end)) as string;
  } catch {
    return text.slice(start + 1, end - 1);
  }
}

/** The scan's per-level state. Allocated once and reused by every scan (a scan runs to its end
 * synchronously, so no two share them). Six typed arrays a body, and closures over the scan's
 * counters (pathOf, fieldOf below were), made a `SELECT 1` query's body cost 3.7 µs to scan
 * instead of 0.3 µs. */
interface Levels {
  isArray: Uint8Array;
  /** Arrays: the current element. */
  index: Int32Array;
  /** Objects: the current key's quoted text. */
  keyStart: Int32Array;
  keyEnd: Int32Array;
  expectKey: Uint8Array;
  /** The value of a `constructor` key. */
  underConstructor: Uint8Array;
}
let levels: Levels | null = null;

function levelsFor(maxDepth: number): Levels {
  if (levels === null || levels.isArray.length < maxDepth) {
    const size = Math.max(maxDepth, MAX_JSON_DEPTH);
    levels = {
      isArray: new Uint8Array(size),
      index: new Int32Array(size),
      keyStart: new Int32Array(size),
      keyEnd: new Int32Array(size),
      expectKey: new Uint8Array(size),
      underConstructor: new Uint8Array(size),
    };
  }
  return levels;
}

/** The path of the first `depth` open levels (`params[1].a`), for the one refusal that names it. */
function pathOf(text: string, lv: Levels, depth: number): string {
  let path = '';
  for (let d = 0; d < depth; d++) {
    if (lv.isArray[d]) path += `[${lv.index[d]}]`;
    else {
      const key = keyText(text, lv.keyStart[d], lv.keyEnd[d]);
      path = path ? `${path}.${key}` : key;
    }
  }
  return path;
}

/** Where a limit was passed, named by the first levels below a top-level object (`params[1]`):
 * the field a person wrote. Nothing for a top-level array: its index says nothing. */
function fieldOf(text: string, lv: Levels, depth: number, levels: number): string {
  return depth > 0 && !lv.isArray[0] ? pathOf(text, lv, Math.min(depth, levels)) : '';
}

/** One pass over a body's text, outside strings (escapes honoured): whether it nests deeper
 * than `maxDepth` (the scan stops at the first bracket too many) and where the first forbidden
 * key is. Exact for valid JSON; for anything else JSON.parse has the last word. Linear, and
 * allocates nothing per value (1 MiB of `{},` took 31 ms with an object per frame): strings
 * without escapes are skipped with indexOf, every other character is looked at once. */
export function scanJsonText(text: string, maxDepth = MAX_JSON_DEPTH, maxValues = MAX_JSON_VALUES): JsonTextScan {
  // The open objects and arrays, outermost first: no more than maxDepth of them.
  const lv = levelsFor(maxDepth);
  const { isArray, index, keyStart, keyEnd, expectKey, underConstructor } = lv;
  let depth = 0;
  // Objects, arrays and separators seen: every value but the first of each container.
  let values = 0;
  // The key just read was `constructor` and its value has not started.
  let constructorValue = false;
  // Where the next backslash is (-1: none left), found once and reused until passed: a fresh
  // search per string would scan to the end of the text for every string.
  let nextBackslash = text.indexOf('\\');

  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      if (nextBackslash !== -1 && nextBackslash <= i) nextBackslash = text.indexOf('\\', i + 1);
      let end = text.indexOf('"', i + 1);
      if (end === -1) return { kind: 'ok' }; // unterminated: not JSON
      if (nextBackslash !== -1 && nextBackslash < end) {
        // Escapes inside: character by character from the first one.
        end = nextBackslash;
        while (end < text.length) {
          const e = text.charCodeAt(end);
          if (e === BACKSLASH) end += 2;
          else if (e === QUOTE) break;
          else end++;
        }
        if (end >= text.length) return { kind: 'ok' };
        nextBackslash = text.indexOf('\\', end + 1);
      }
      constructorValue = false;
      const top = depth - 1;
      if (top >= 0 && !isArray[top] && expectKey[top]) {
        expectKey[top] = 0;
        keyStart[top] = i;
        keyEnd[top] = end + 1;
        const key = shortKey(text, i, end + 1);
        if (key === '__proto__') return { kind: 'forbidden', key: '__proto__', path: pathOf(text, lv, depth) };
        if (key === 'prototype' && underConstructor[top])
          return { kind: 'forbidden', key: 'constructor.prototype', path: pathOf(text, lv, depth) };
        constructorValue = key === 'constructor';
      }
      i = end;
      continue;
    }
    switch (c) {
      case 0x5b: // [
      case 0x7b: // {
        if (depth >= maxDepth) return { kind: 'too_deep', field: fieldOf(text, lv, depth, 2) };
        if (++values > maxValues) return { kind: 'too_many', field: fieldOf(text, lv, depth, 1) };
        isArray[depth] = c === 0x5b ? 1 : 0;
        index[depth] = 0;
        // Reused arrays: a level starts as a fresh one would (pathOf reads an object's key
        // bounds even before its first key, in text that is not JSON).
        keyStart[depth] = 0;
        keyEnd[depth] = 0;
        expectKey[depth] = c === 0x7b ? 1 : 0;
        underConstructor[depth] = c === 0x7b && constructorValue ? 1 : 0;
        depth++;
        constructorValue = false;
        break;
      case 0x5d: // ]
      case 0x7d: // }
        if (depth > 0) depth--;
        constructorValue = false;
        break;
      case 0x2c: // ,
        if (++values > maxValues) return { kind: 'too_many', field: fieldOf(text, lv, depth, 1) };
        if (depth > 0) {
          if (isArray[depth - 1]) index[depth - 1]++;
          else expectKey[depth - 1] = 1;
        }
        constructorValue = false;
        break;
      case 0x3a: // :
      case 0x20:
      case 0x09:
      case 0x0a:
      case 0x0d:
        break;
      default:
        constructorValue = false; // a number, true, false or null
    }
  }
  return { kind: 'ok' };
}

export function installJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    let text = body as string;
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    // Before JSON.parse: the refusal must cost less than the parse it saves.
    const scan = scanJsonText(text);
    if (scan.kind === 'too_deep') {
      const where = scan.field ? ` (in ${scan.field})` : '';
      done(
        new InvalidRequestError(`Invalid request: the JSON body nests deeper than ${MAX_JSON_DEPTH} levels${where}`, {
          ...(scan.field ? { field: scan.field } : {}),
          maxDepth: MAX_JSON_DEPTH,
        }),
        undefined,
      );
      return;
    }
    if (scan.kind === 'too_many') {
      const where = scan.field ? ` (in ${scan.field})` : '';
      done(
        new InvalidRequestError(`Invalid request: the JSON body holds more than ${MAX_JSON_VALUES} values${where}`, {
          ...(scan.field ? { field: scan.field } : {}),
          maxValues: MAX_JSON_VALUES,
        }),
        undefined,
      );
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      done(new InvalidJsonError(), undefined);
      return;
    }
    if (scan.kind === 'forbidden') {
      done(new InvalidRequestError(`Invalid request: a "${scan.key}" key is not allowed (${scan.path})`, { field: scan.path }), undefined);
      return;
    }
    done(null, value);
  });
}
