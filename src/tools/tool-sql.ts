// `:name` placeholders in a curated tool's SQL, found with the engine's own lexer
// (src/guard/sql-lexer.ts) so that a `:x` inside a string, a quoted identifier, a comment or a
// PostgreSQL dollar-quoted body is text, not a parameter, and `::type` casts stay casts. The
// placeholders become the driver's own ($n on PostgreSQL, ? on MySQL/MariaDB and SQLite) and
// the values travel separately: a value is never spliced into the statement text.
import type { EngineName } from '../engines/engine.ts';
import { InvalidRequestError } from '../errors.ts';
import { lexSql } from '../guard/sql-lexer.ts';
import { CALLER_NAMES, type ToolParameter } from './tool-params.ts';

export interface Placeholder {
  name: string;
  start: number;
  end: number;
}

const NAME_START = /[A-Za-z_]/;
const NAME_CHAR = /[A-Za-z0-9_]/;

/** Every `:name` / `:caller.x` in code. Native placeholders ($1, ?) are refused: mixing them
 * with named ones would bind values to the wrong places. */
export function findPlaceholders(sql: string, engine: EngineName): Placeholder[] {
  const found: Placeholder[] = [];
  for (const segment of lexSql(sql, engine).segments) {
    if (segment.kind !== 'code') continue;
    for (let i = segment.start; i < segment.end; i++) {
      const char = sql[i];
      if (char === ':') {
        // `::` is a PostgreSQL cast (and `:=` an assignment): never a placeholder.
        if (sql[i + 1] === ':') {
          i++;
          continue;
        }
        if (!NAME_START.test(sql[i + 1] ?? '')) continue;
        let end = i + 1;
        while (end < segment.end && NAME_CHAR.test(sql[end])) end++;
        let name = sql.slice(i + 1, end);
        if (name === 'caller' && sql[end] === '.') {
          let tail = end + 1;
          while (tail < segment.end && NAME_CHAR.test(sql[tail])) tail++;
          name = sql.slice(i + 1, tail);
          end = tail;
        }
        found.push({ name, start: i, end });
        i = end - 1;
      } else if (engine === 'postgres' && char === '$' && /[0-9]/.test(sql[i + 1] ?? '') && !NAME_CHAR.test(sql[i - 1] ?? '')) {
        throw new InvalidRequestError('sql: use :name placeholders, not $1, $2, …', { field: 'sql' });
      } else if (engine !== 'postgres' && char === '?') {
        throw new InvalidRequestError('sql: use :name placeholders, not ?', { field: 'sql' });
      }
    }
  }
  return found;
}

/** Every placeholder must be declared (or a caller name) and every declared parameter used. */
export function checkPlaceholders(placeholders: Placeholder[], parameters: ToolParameter[]): void {
  const declared = new Set(parameters.map((p) => p.name));
  const used = new Set(placeholders.map((p) => p.name));
  for (const { name } of placeholders) {
    if (name.startsWith('caller.') || name === 'caller') {
      if (!(CALLER_NAMES as readonly string[]).includes(name)) {
        throw new InvalidRequestError(`sql: :${name} is not a caller value; use :caller.email, :caller.userId or :caller.keyId`, {
          field: 'sql',
        });
      }
    } else if (!declared.has(name)) {
      throw new InvalidRequestError(`sql: :${name} is not a declared parameter`, { field: 'sql' });
    }
  }
  parameters.forEach((p, i) => {
    if (!used.has(p.name))
      throw new InvalidRequestError(`parameters[${i}] "${p.name}" is not used in the SQL as :${p.name}`, {
        field: `parameters[${i}].name`,
      });
  });
}

export interface BoundStatement {
  sql: string;
  params: unknown[];
}

/**
 * The statement with driver placeholders and its values, in order.
 * - PostgreSQL: each name is one `$n`, reused where the name repeats; an array is one array
 *   parameter (write `= ANY(:ids)`).
 * - MySQL/MariaDB, SQLite: `?` per occurrence, the value repeated; an array expands to
 *   `?, ?, ?` (write `IN (:ids)`), so an empty one is refused (`IN ()` is not SQL).
 * `values` null: placeholders only (creation-time validation), one `?` per array.
 */
export function bindPlaceholders(
  sql: string,
  engine: EngineName,
  placeholders: Placeholder[],
  types: Map<string, ToolParameter['type']>,
  values: Map<string, unknown> | null,
): BoundStatement {
  let out = '';
  let last = 0;
  const params: unknown[] = [];
  const positions = new Map<string, number>();
  for (const ph of placeholders) {
    out += sql.slice(last, ph.start);
    last = ph.end;
    const value = values?.get(ph.name) ?? null;
    if (engine === 'postgres') {
      let n = positions.get(ph.name);
      if (n === undefined) {
        params.push(value);
        n = params.length;
        positions.set(ph.name, n);
      }
      out += `$${n}`;
    } else if (types.get(ph.name) === 'array' && values !== null) {
      const items = (value ?? []) as unknown[];
      if (items.length === 0)
        throw new InvalidRequestError(`params.${ph.name} must not be empty on this engine (IN () is not SQL)`, {
          field: `params.${ph.name}`,
        });
      out += items.map(() => '?').join(', ');
      params.push(...items);
    } else {
      out += '?';
      params.push(value);
    }
  }
  return { sql: out + sql.slice(last), params };
}
