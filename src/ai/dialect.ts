// SQL text details that differ between the three engines, for the SQL the AI module writes
// itself (sample-value queries, builtin generator). Everything else is written so that one
// text works everywhere: LIMIT n, range predicates on dates instead of date functions.
import type { EngineName } from '../engines/engine.ts';

// Words that must be quoted as identifiers in at least one engine. Over-quoting a lower-case
// name is harmless everywhere, so one union list serves all three.
const RESERVED = new Set(
  `all alter analyse analyze and any array as asc asymmetric authorization between binary both
  by case cast change check collate column constraint create cross current_date current_time
  current_timestamp current_user database default delete desc distinct do drop else end except
  exists false fetch for foreign from full grant group having ilike in index inner insert
  intersect interval into is isnull join key keys lateral leading left like limit localtime
  localtimestamp match natural not notnull null offset on only or order outer over partition
  placing primary range read references regexp rename replace returning right rlike row rows
  select session_user set show similar some symmetric table then to trailing true union unique
  update usage user using values variadic verbose when where window with write`.split(/\s+/),
);

/** Quote an identifier only when needed: reserved word, odd characters, or (postgres) any
 * upper-case letter, since PostgreSQL folds unquoted names to lower case. */
export function quoteIdent(dialect: EngineName, name: string): string {
  const plain = dialect === 'postgres' ? /^[a-z_][a-z0-9_]*$/ : /^[A-Za-z_][A-Za-z0-9_]*$/;
  if (plain.test(name) && !RESERVED.has(name.toLowerCase())) return name;
  if (dialect === 'mysql') return '`' + name.replace(/`/g, '``') + '`';
  return '"' + name.replace(/"/g, '""') + '"';
}

/** A string literal. MySQL treats backslash as an escape in literals by default
 * (NO_BACKSLASH_ESCAPES off), so it is doubled there. */
export function quoteString(dialect: EngineName, value: string): string {
  let v = value.replace(/'/g, "''");
  if (dialect === 'mysql') v = v.replace(/\\/g, '\\\\');
  return `'${v}'`;
}

/** Table reference: schema-qualified only for PostgreSQL schemas other than public; a MySQL
 * "schema" is the connection's database and SQLite's is `main`. */
export function tableRef(dialect: EngineName, table: { schema: string | null; name: string }): string {
  if (dialect === 'postgres' && table.schema && table.schema !== 'public') {
    return `${quoteIdent(dialect, table.schema)}.${quoteIdent(dialect, table.name)}`;
  }
  return quoteIdent(dialect, table.name);
}

export type DatePart = 'year' | 'month' | 'day';

/** A text bucket (YYYY, YYYY-MM, YYYY-MM-DD) of a date/timestamp expression. */
export function dateBucket(dialect: EngineName, expr: string, part: DatePart): string {
  const fmt = { year: ['%Y', 'YYYY'], month: ['%Y-%m', 'YYYY-MM'], day: ['%Y-%m-%d', 'YYYY-MM-DD'] }[part];
  if (dialect === 'sqlite') return `strftime('${fmt[0]}', ${expr})`;
  if (dialect === 'mysql') return `DATE_FORMAT(${expr}, '${fmt[0]}')`;
  return `to_char(${expr}, '${fmt[1]}')`;
}

export function dialectLabel(dialect: EngineName): string {
  return { postgres: 'PostgreSQL', mysql: 'MySQL/MariaDB', sqlite: 'SQLite' }[dialect];
}
