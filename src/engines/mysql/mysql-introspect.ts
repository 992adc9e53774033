// Catalog queries for listTables on MySQL/MariaDB: information_schema for one database (the
// connection's, or the one named; MySQL calls a database a schema). Column types are
// COLUMN_TYPE, the SQL spelling with lengths and UNSIGNED: "int(10) unsigned", "varchar(40)".

import type { SchemaTable } from '../engine.ts';

export const TABLES_SQL = /* SQL */ `
SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, TABLE_COMMENT
FROM information_schema.TABLES
WHERE TABLE_SCHEMA = COALESCE(?, DATABASE())
ORDER BY TABLE_NAME`;

export const COLUMNS_SQL = /* SQL */ `
SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_KEY, COLUMN_COMMENT
FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = COALESCE(?, DATABASE())
ORDER BY TABLE_NAME, ORDINAL_POSITION`;

export const FOREIGN_KEYS_SQL = /* SQL */ `
SELECT TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME,
       REFERENCED_COLUMN_NAME
FROM information_schema.KEY_COLUMN_USAGE
WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND REFERENCED_TABLE_NAME IS NOT NULL
ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION`;

type Row = unknown[];

const text = (v: unknown): string => (Buffer.isBuffer(v) ? v.toString('utf8') : String(v));

export function assembleTables(tables: Row[], columns: Row[], keys: Row[]): SchemaTable[] {
  const byName = new Map<string, SchemaTable>();
  const result = tables.map(([schema, name, type, comment]) => {
    const table: SchemaTable = {
      schema: text(schema),
      name: text(name),
      kind: text(type) === 'VIEW' ? 'view' : 'table',
      columns: [],
      foreignKeys: [],
    };
    // A view's TABLE_COMMENT is the word VIEW, not a description.
    if (table.kind === 'table' && comment !== null && text(comment) !== '') table.description = text(comment);
    byName.set(table.name, table);
    return table;
  });
  for (const [table, name, type, nullable, key, comment] of columns) {
    byName.get(text(table))?.columns.push({
      name: text(name),
      type: text(type),
      nullable: text(nullable) === 'YES',
      primaryKey: text(key) === 'PRI',
      ...(comment !== null && comment !== undefined && text(comment) !== '' ? { description: text(comment) } : {}),
    });
  }
  let current: { table: string; constraint: string } | null = null;
  for (const [table, constraint, column, refSchema, refTable, refColumn] of keys) {
    const owner = byName.get(text(table));
    if (!owner) continue;
    if (!current || current.table !== text(table) || current.constraint !== text(constraint)) {
      current = { table: text(table), constraint: text(constraint) };
      owner.foreignKeys.push({ columns: [], refSchema: text(refSchema), refTable: text(refTable), refColumns: [] });
    }
    const fk = owner.foreignKeys[owner.foreignKeys.length - 1];
    fk.columns.push(text(column));
    fk.refColumns.push(text(refColumn));
  }
  return result;
}
