// mysql2 values → the contract's JSON-safe values, decided by the column definition.
// The pool runs with supportBigNumbers + bigNumberStrings (BIGINT always a string, as int8 in
// PostgreSQL), decimalNumbers off (DECIMAL a string), dateStrings (the server's text, so
// microseconds survive) and session time_zone '+00:00'.
//
// Decisions:
// - BOOLEAN is TINYINT(1) on the wire and cannot be told from a small integer (neither can
//   `SELECT 1 > 0`): it stays a number, 0 or 1.
// - TIMESTAMP is stored in UTC and converted to the session zone, which is UTC: it is reported
//   like timestamptz, with `Z`. DATETIME has no zone: ISO 8601 without one.
// - Column type names are SQL names (BIGINT, DECIMAL, DATETIME, VARCHAR, …), `… UNSIGNED`
//   where flagged; MariaDB's JSON alias and extended types (UUID, INET6) come from its extended
//   metadata.

import type { FieldPacket } from 'mysql2';

// mysql2/lib/constants/types.js
const T = {
  DECIMAL: 0,
  TINY: 1,
  SHORT: 2,
  LONG: 3,
  FLOAT: 4,
  DOUBLE: 5,
  NULL: 6,
  TIMESTAMP: 7,
  LONGLONG: 8,
  INT24: 9,
  DATE: 10,
  TIME: 11,
  DATETIME: 12,
  YEAR: 13,
  NEWDATE: 14,
  VARCHAR: 15,
  BIT: 16,
  VECTOR: 242,
  JSON: 245,
  NEWDECIMAL: 246,
  ENUM: 247,
  SET: 248,
  TINY_BLOB: 249,
  MEDIUM_BLOB: 250,
  LONG_BLOB: 251,
  BLOB: 252,
  VAR_STRING: 253,
  STRING: 254,
  GEOMETRY: 255,
} as const;

const FLAG_UNSIGNED = 32;
const FLAG_ENUM = 256;
const FLAG_SET = 2048;
const BINARY_CHARSET = 63;

const NUMERIC_NAMES: Record<number, string> = {
  [T.DECIMAL]: 'DECIMAL',
  [T.NEWDECIMAL]: 'DECIMAL',
  [T.TINY]: 'TINYINT',
  [T.SHORT]: 'SMALLINT',
  [T.LONG]: 'INT',
  [T.INT24]: 'MEDIUMINT',
  [T.LONGLONG]: 'BIGINT',
  [T.FLOAT]: 'FLOAT',
  [T.DOUBLE]: 'DOUBLE',
};

const OTHER_NAMES: Record<number, string> = {
  [T.NULL]: 'NULL',
  [T.TIMESTAMP]: 'TIMESTAMP',
  [T.DATE]: 'DATE',
  [T.NEWDATE]: 'DATE',
  [T.TIME]: 'TIME',
  [T.DATETIME]: 'DATETIME',
  [T.YEAR]: 'YEAR',
  [T.BIT]: 'BIT',
  [T.JSON]: 'JSON',
  [T.ENUM]: 'ENUM',
  [T.SET]: 'SET',
  [T.GEOMETRY]: 'GEOMETRY',
  [T.VECTOR]: 'VECTOR',
};

export type MysqlField = Pick<
  FieldPacket,
  'name' | 'columnType' | 'characterSet' | 'flags' | 'decimals' | 'extendedTypeName' | 'extendedFormat'
>;

function flagsOf(field: MysqlField): number {
  return typeof field.flags === 'number' ? field.flags : 0;
}

function isBinary(field: MysqlField): boolean {
  return field.characterSet === BINARY_CHARSET;
}

export function mysqlTypeName(field: MysqlField): string {
  if (field.extendedFormat === 'json') return 'JSON';
  if (field.extendedTypeName) return field.extendedTypeName.toUpperCase();
  const type = field.columnType ?? -1;
  const flags = flagsOf(field);
  const numeric = NUMERIC_NAMES[type];
  if (numeric) return flags & FLAG_UNSIGNED ? `${numeric} UNSIGNED` : numeric;
  const other = OTHER_NAMES[type];
  if (other) return other;
  switch (type) {
    case T.TINY_BLOB:
    case T.MEDIUM_BLOB:
    case T.LONG_BLOB:
    case T.BLOB:
      return isBinary(field) ? 'BLOB' : 'TEXT';
    case T.VARCHAR:
    case T.VAR_STRING:
      return isBinary(field) ? 'VARBINARY' : 'VARCHAR';
    case T.STRING:
      if (flags & FLAG_ENUM) return 'ENUM';
      if (flags & FLAG_SET) return 'SET';
      return isBinary(field) ? 'BINARY' : 'CHAR';
    default:
      return `TYPE_${type}`;
  }
}

export type Decoder = (value: unknown) => unknown;

/** A decoder for one column. `binaryProtocol`: the value came from a prepared statement
 * (COM_STMT_EXECUTE), whose FLOAT is a float32 and whose fractional seconds are trimmed. */
export function createDecoder(field: MysqlField, binaryProtocol: boolean): Decoder {
  switch (field.columnType) {
    case T.LONGLONG:
    case T.DECIMAL:
    case T.NEWDECIMAL:
      return (v) => (v === null ? null : typeof v === 'string' ? v : String(v));
    case T.FLOAT:
      return binaryProtocol ? (v) => (typeof v === 'number' ? shortestFloat32(v) : encodeGeneric(v)) : encodeGeneric;
    case T.DATETIME:
      return temporal(field, binaryProtocol, (s) => s.replace(' ', 'T'));
    case T.TIMESTAMP:
      return temporal(field, binaryProtocol, (s) => (/^0000-00-00/.test(s) ? s.replace(' ', 'T') : `${s.replace(' ', 'T')}Z`));
    case T.TIME:
      return temporal(field, binaryProtocol, (s) => s);
    case T.BIT:
      return (v) => (Buffer.isBuffer(v) ? bitsToNumber(v) : encodeGeneric(v));
    default:
      return encodeGeneric;
  }
}

function temporal(field: MysqlField, binaryProtocol: boolean, format: (s: string) => string): Decoder {
  const digits = field.decimals > 0 && field.decimals <= 6 ? field.decimals : 0;
  return (v) => {
    if (typeof v !== 'string') return encodeGeneric(v);
    // The text protocol sends exactly `decimals` fractional digits; mysql2's binary parser
    // drops trailing zeros. Put them back so both paths agree.
    const s = binaryProtocol && digits ? padFraction(v, digits) : v;
    return format(s);
  };
}

function padFraction(value: string, digits: number): string {
  const dot = value.lastIndexOf('.');
  const colon = value.lastIndexOf(':');
  if (dot > colon) return value + '0'.repeat(Math.max(0, digits - (value.length - dot - 1)));
  return `${value}.${'0'.repeat(digits)}`;
}

function encodeGeneric(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (Buffer.isBuffer(v)) return v.toString('base64');
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  return v;
}

/** BIT(n) as an unsigned integer: a number, or a string past 2^53. */
function bitsToNumber(buf: Buffer): number | string {
  let n = 0n;
  for (const byte of buf) n = (n << 8n) | BigInt(byte);
  return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString();
}

/** The shortest decimal that reads back as the same float32 (1.100000023841858 → 1.1). */
function shortestFloat32(v: number): number {
  if (!Number.isFinite(v)) return v;
  for (let p = 1; p <= 9; p++) {
    const candidate = Number(v.toPrecision(p));
    if (Math.fround(candidate) === v) return candidate;
  }
  return v;
}
