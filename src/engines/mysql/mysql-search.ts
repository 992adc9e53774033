// Catalog queries for searchObjects on MySQL/MariaDB: information_schema of the connection's
// database, the name pattern bound (a lower-case LIKE pattern, `!` escapes). Rows come back as
// arrays; information_schema text may arrive as Buffers, hence text().

import type { ObjectSearch, SchemaObject, SchemaObjectKind } from '../engine.ts';

const RELATIONS_SQL = (types: string) => /* SQL */ `
SELECT t.TABLE_SCHEMA, t.TABLE_NAME,
       (SELECT COUNT(*) FROM information_schema.COLUMNS c
        WHERE c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME)
FROM information_schema.TABLES t
WHERE t.TABLE_SCHEMA = DATABASE() AND t.TABLE_TYPE IN (${types})
  AND LOWER(t.TABLE_NAME) LIKE ? ESCAPE '!'`;

const SQL: Record<SchemaObjectKind, string> = {
  table: RELATIONS_SQL(`'BASE TABLE', 'SYSTEM VERSIONED'`),
  view: RELATIONS_SQL(`'VIEW'`),
  column: /* SQL */ `
SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_KEY
FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND LOWER(COLUMN_NAME) LIKE ? ESCAPE '!'`,
  index: /* SQL */ `
SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, MIN(NON_UNIQUE),
       GROUP_CONCAT(COALESCE(COLUMN_NAME, '(expression)') ORDER BY SEQ_IN_INDEX SEPARATOR ',')
FROM information_schema.STATISTICS
WHERE TABLE_SCHEMA = DATABASE() AND LOWER(INDEX_NAME) LIKE ? ESCAPE '!'
GROUP BY TABLE_SCHEMA, TABLE_NAME, INDEX_NAME`,
  function: /* SQL */ `
SELECT r.ROUTINE_SCHEMA, r.ROUTINE_NAME, r.ROUTINE_TYPE, COALESCE(r.DTD_IDENTIFIER, ''),
       (SELECT GROUP_CONCAT(CONCAT_WS(' ', p.PARAMETER_MODE, p.PARAMETER_NAME, p.DTD_IDENTIFIER)
                            ORDER BY p.ORDINAL_POSITION SEPARATOR ', ')
        FROM information_schema.PARAMETERS p
        WHERE p.SPECIFIC_SCHEMA = r.ROUTINE_SCHEMA AND p.SPECIFIC_NAME = r.SPECIFIC_NAME
          AND p.ORDINAL_POSITION > 0)
FROM information_schema.ROUTINES r
WHERE r.ROUTINE_SCHEMA = DATABASE() AND LOWER(r.ROUTINE_NAME) LIKE ? ESCAPE '!'`,
};

type Row = unknown[];

const text = (v: unknown): string => (v === null || v === undefined ? '' : Buffer.isBuffer(v) ? v.toString('utf8') : String(v));

function toObject(kind: SchemaObjectKind, row: Row): SchemaObject {
  const [schema, a, b, c, d, e] = row.map(text);
  switch (kind) {
    case 'table':
    case 'view':
      return { kind, schema, name: a, columnCount: Number(b) };
    case 'column':
      return { kind, schema, table: a, name: b, type: c, nullable: d === 'YES', primaryKey: e === 'PRI' };
    case 'index':
      return { kind, schema, table: a, name: b, unique: c === '0', columns: d.split(',') };
    case 'function':
      return { kind, schema, name: a, routineType: b.toLowerCase(), type: c, arguments: d };
  }
}

/** The kind's catalog query through `run` (a read-only session's execute). */
export async function searchMysqlObjects(
  run: (sql: string, params: unknown[]) => Promise<Row[]>,
  search: ObjectSearch,
): Promise<SchemaObject[]> {
  return (await run(SQL[search.kind], [search.like])).map((row) => toObject(search.kind, row));
}
