// PostgreSQL text-format values → the contract's JSON-safe values, decided by type OID.
// The pool hands every value over as the server's text (identity type parsers, set per pool:
// pg.types.setTypeParser is process-wide, node-postgres #1838), and the session runs with
// TimeZone=UTC, DateStyle=ISO, bytea_output=hex, extra_float_digits=1 (startup options), so the
// text form is exact: microseconds survive, int8/numeric never pass through a float.
//
// Column type names are the catalog's typname (int8, numeric, timestamptz); arrays are
// reported as the element's typname plus "[]" (int4[], not _int4).

export type PgKind = 'int' | 'int8' | 'float' | 'numeric' | 'bool' | 'bytea' | 'json' | 'timestamp' | 'timestamptz' | 'text';

export interface PgType {
  name: string;
  kind: PgKind | 'array';
  /** Element type for arrays. */
  elem?: PgType;
  /** Array element delimiter (',' for everything built in but box). */
  delim?: string;
}

const scalar = (name: string, kind: PgKind): PgType => ({ name, kind });
const arrayOf = (elem: PgType, delim = ','): PgType => ({ name: `${elem.name}[]`, kind: 'array', elem, delim });

// Built-in OIDs are fixed (src/include/catalog/pg_type.dat); anything else is looked up once
// per pool in pg_type (enums, domains' arrays, extension types).
const BUILTIN_SCALARS: Array<[number, number, PgType]> = [
  [16, 1000, scalar('bool', 'bool')],
  [17, 1001, scalar('bytea', 'bytea')],
  [18, 1002, scalar('char', 'text')],
  [19, 1003, scalar('name', 'text')],
  [20, 1016, scalar('int8', 'int8')],
  [21, 1005, scalar('int2', 'int')],
  [23, 1007, scalar('int4', 'int')],
  [24, 1008, scalar('regproc', 'text')],
  [25, 1009, scalar('text', 'text')],
  [26, 1028, scalar('oid', 'int')],
  [27, 1010, scalar('tid', 'text')],
  [28, 1011, scalar('xid', 'text')],
  [29, 1012, scalar('cid', 'text')],
  [114, 199, scalar('json', 'json')],
  [142, 143, scalar('xml', 'text')],
  [600, 1017, scalar('point', 'text')],
  [601, 1018, scalar('lseg', 'text')],
  [602, 1019, scalar('path', 'text')],
  [604, 1027, scalar('polygon', 'text')],
  [628, 629, scalar('line', 'text')],
  [650, 651, scalar('cidr', 'text')],
  [700, 1021, scalar('float4', 'float')],
  [701, 1022, scalar('float8', 'float')],
  [718, 719, scalar('circle', 'text')],
  [774, 775, scalar('macaddr8', 'text')],
  [790, 791, scalar('money', 'text')],
  [829, 1040, scalar('macaddr', 'text')],
  [869, 1041, scalar('inet', 'text')],
  [1033, 1034, scalar('aclitem', 'text')],
  [1042, 1014, scalar('bpchar', 'text')],
  [1043, 1015, scalar('varchar', 'text')],
  [1082, 1182, scalar('date', 'text')],
  [1083, 1183, scalar('time', 'text')],
  [1114, 1115, scalar('timestamp', 'timestamp')],
  [1184, 1185, scalar('timestamptz', 'timestamptz')],
  [1186, 1187, scalar('interval', 'text')],
  [1266, 1270, scalar('timetz', 'text')],
  [1560, 1561, scalar('bit', 'text')],
  [1562, 1563, scalar('varbit', 'text')],
  [1700, 1231, scalar('numeric', 'numeric')],
  [1790, 2201, scalar('refcursor', 'text')],
  [2202, 2207, scalar('regprocedure', 'text')],
  [2203, 2208, scalar('regoper', 'text')],
  [2204, 2209, scalar('regoperator', 'text')],
  [2205, 2210, scalar('regclass', 'text')],
  [2206, 2211, scalar('regtype', 'text')],
  [2249, 2287, scalar('record', 'text')],
  [2275, 1263, scalar('cstring', 'text')],
  [2950, 2951, scalar('uuid', 'text')],
  [3220, 3221, scalar('pg_lsn', 'text')],
  [3614, 3643, scalar('tsvector', 'text')],
  [3615, 3645, scalar('tsquery', 'text')],
  [3734, 3735, scalar('regconfig', 'text')],
  [3802, 3807, scalar('jsonb', 'json')],
  [3904, 3905, scalar('int4range', 'text')],
  [3906, 3907, scalar('numrange', 'text')],
  [3908, 3909, scalar('tsrange', 'text')],
  [3910, 3911, scalar('tstzrange', 'text')],
  [3912, 3913, scalar('daterange', 'text')],
  [3926, 3927, scalar('int8range', 'text')],
  [4072, 4073, scalar('jsonpath', 'text')],
  [4089, 4090, scalar('regnamespace', 'text')],
  [4096, 4097, scalar('regrole', 'text')],
  [5038, 5039, scalar('pg_snapshot', 'text')],
];

function buildBuiltinTypes(): Map<number, PgType> {
  const types = new Map<number, PgType>();
  for (const [oid, arrayOid, type] of BUILTIN_SCALARS) {
    types.set(oid, type);
    types.set(arrayOid, arrayOf(type));
  }
  const box = scalar('box', 'text');
  types.set(603, box);
  types.set(1020, arrayOf(box, ';'));
  types.set(705, scalar('unknown', 'text'));
  types.set(2278, scalar('void', 'text'));
  return types;
}

export const BUILTIN_TYPES: ReadonlyMap<number, PgType> = buildBuiltinTypes();

/** One row of the pg_type look-up for OIDs outside the built-in table. */
export interface PgTypeRow {
  oid: number;
  typname: string;
  /** pg_type.typcategory: 'A' array, 'E' enum, 'N' numeric, … */
  category: string;
  delim: string;
  /** typelem for arrays, else 0. */
  elem: number;
  /** typbasetype for domains, else 0. */
  base: number;
}

/** Builds a PgType for a looked-up OID; `known` resolves element/base OIDs. */
export function typeFromCatalog(row: PgTypeRow, known: (oid: number) => PgType | undefined): PgType {
  if (row.base) {
    const base = known(row.base);
    if (base) return { ...base, name: row.typname };
  }
  if (row.category === 'A' && row.elem) {
    const elem = known(row.elem) ?? scalar(row.typname.replace(/^_/, ''), 'text');
    const array = arrayOf(elem, row.delim || ',');
    // True arrays are named _elem; int2vector and oidvector keep their own names.
    return row.typname.startsWith('_') ? array : { ...array, name: row.typname };
  }
  // Unknown numeric-category types (extensions) keep their exact text.
  return scalar(row.typname, row.category === 'N' ? 'numeric' : 'text');
}

export function fallbackType(oid: number): PgType {
  return scalar(String(oid), 'text');
}

export function decodeValue(text: string | null, type: PgType): unknown {
  if (text === null) return null;
  switch (type.kind) {
    case 'int':
      return Number(text);
    case 'float':
      // NaN/Infinity/-Infinity have no JSON number form: kept as the server's text.
      return text === 'NaN' || text === 'Infinity' || text === '-Infinity' ? text : Number(text);
    case 'bool':
      return text === 't';
    case 'bytea':
      return decodeBytea(text);
    case 'json':
      // A JSON value, as the contract says; numbers inside it are JavaScript numbers. One nested
      // deeper than JSON_NEST_LIMIT stays its text: writing the parsed value back out (the
      // response, an export) recurses once per level and ran out of stack (a 500 for any read
      // of `repeat('[', 5000)`).
      return nestsDeeperThan(text, JSON_NEST_LIMIT) ? text : JSON.parse(text);
    case 'timestamp':
      return decodeTimestamp(text);
    case 'timestamptz':
      return decodeTimestamptz(text);
    case 'array':
      // int2vector/oidvector are array-category types printed as "1 2": kept as text.
      if (text[0] !== '{' && text[0] !== '[') return text;
      return decodeArrayValue(parseArrayLiteral(text, type.delim ?? ','), type.elem ?? fallbackType(0));
    default:
      // int8, numeric (exact, incl. NaN/±Infinity), date, time, uuid, text, enums, interval…
      return text;
  }
}

const JSON_NEST_LIMIT = 1_000;

/** Whether JSON text opens more than `limit` arrays/objects at once: one linear pass. */
function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) {
      if (++depth > limit) return true;
    } else if (c === 93 || c === 125) depth--;
  }
  return false;
}

function decodeArrayValue(value: ArrayItem, elem: PgType): unknown {
  if (Array.isArray(value)) return value.map((item) => decodeArrayValue(item, elem));
  return decodeValue(value, elem);
}

function decodeBytea(text: string): string {
  if (text.startsWith('\\x')) return Buffer.from(text.slice(2), 'hex').toString('base64');
  // bytea_output = escape (a session that changed it mid-statement): \\ and \ooo escapes.
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 92 && text[i + 1] === '\\') {
      bytes.push(92);
      i++;
    } else if (ch === 92) {
      bytes.push(parseInt(text.slice(i + 1, i + 4), 8));
      i += 3;
    } else {
      bytes.push(ch);
    }
  }
  return Buffer.from(bytes).toString('base64');
}

const TIMESTAMP = /^(\d{4,})-(\d\d)-(\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)$/;

function decodeTimestamp(text: string): string {
  const m = TIMESTAMP.exec(text);
  // infinity, -infinity and BC dates have no ISO 8601 form: the server's text.
  return m ? `${m[1]}-${m[2]}-${m[3]}T${m[4]}` : text;
}

const TIMESTAMPTZ = /^(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(\.\d+)?([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?$/;

/** `2026-01-02 03:04:05.123456+00` → `2026-01-02T03:04:05.123456Z`, exact to the microsecond.
 * The session is UTC, so the offset is normally zero; a statement that changed TimeZone
 * through set_config() still gets converted, in integer seconds. */
export function decodeTimestamptz(text: string): string {
  const m = TIMESTAMPTZ.exec(text);
  if (!m) return text;
  const [, y, mo, d, h, mi, s, frac = '', sign, oh, om = '00', os = '00'] = m;
  const offset = (Number(oh) * 3600 + Number(om) * 60 + Number(os)) * (sign === '-' ? -1 : 1);
  if (offset === 0) return `${y}-${mo}-${d}T${h}:${mi}:${s}${frac}Z`;
  const date = new Date(0);
  date.setUTCFullYear(Number(y), Number(mo) - 1, Number(d));
  date.setUTCHours(Number(h), Number(mi), Number(s) - offset, 0);
  const year = date.getUTCFullYear();
  if (year < 0 || year > 9999) return text;
  const pad = (n: number) => String(n).padStart(2, '0');
  return (
    `${String(year).padStart(4, '0')}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}` +
    `T${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}${frac}Z`
  );
}

type ArrayItem = string | null | ArrayItem[];

/** Parses an array literal (`{1,NULL,"a\"b"}`, nested, optional `[0:2]=` bounds). */
export function parseArrayLiteral(text: string, delim: string): ArrayItem[] {
  let i = 0;
  if (text[0] === '[') {
    i = text.indexOf('=') + 1;
  }
  const parse = (): ArrayItem[] => {
    const out: ArrayItem[] = [];
    i++; // '{'
    if (text[i] === '}') {
      i++;
      return out;
    }
    for (;;) {
      const ch = text[i];
      if (ch === '{') {
        out.push(parse());
      } else if (ch === '"') {
        let value = '';
        i++;
        while (text[i] !== '"') {
          if (text[i] === '\\') i++;
          value += text[i++];
        }
        i++;
        out.push(value);
      } else {
        const start = i;
        while (text[i] !== delim && text[i] !== '}') i++;
        const token = text.slice(start, i).trim();
        out.push(token.toUpperCase() === 'NULL' ? null : token);
      }
      if (text[i] === delim) {
        i++;
        continue;
      }
      i++; // '}'
      return out;
    }
  };
  return text[i] === '{' ? parse() : [];
}
