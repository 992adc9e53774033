// Catalog queries for listTables. Each returns one json value (json_agg), so the result does
// not depend on the pool's type parsers. Column types use format_type() (SQL spelling with
// modifiers: "character varying(40)", "numeric(10,2)"), which is what a person or a model
// writing SQL against the table needs.

import type { ForeignKey, SchemaColumn, SchemaTable } from '../engine.ts';
import type { RunQuery } from './postgres-types.ts';

/** Tables, partitioned tables, views, materialized views and foreign tables; $1 null = every
 * schema but the system ones. */
const TABLES_SQL = /* SQL */ `
SELECT coalesce(json_agg(t ORDER BY t.schema, t.name), '[]') AS result
FROM (
  SELECT c.oid::int8::text AS oid, n.nspname AS schema, c.relname AS name,
         CASE WHEN c.relkind IN ('v', 'm') THEN 'view' ELSE 'table' END AS kind,
         pg_catalog.obj_description(c.oid, 'pg_class') AS comment
  FROM pg_catalog.pg_class c
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
    AND NOT c.relispartition
    AND CASE WHEN $1::text IS NULL
          THEN n.nspname NOT IN ('pg_catalog', 'information_schema')
               AND n.nspname !~ '^pg_(toast|temp_|toast_temp_)'
          ELSE n.nspname = $1::text
        END
) t`;

const COLUMNS_SQL = /* SQL */ `
SELECT coalesce(json_agg(t ORDER BY t.rel, t.num), '[]') AS result
FROM (
  SELECT a.attrelid::int8::text AS rel, a.attnum AS num, a.attname AS name,
         pg_catalog.format_type(a.atttypid, a.atttypmod) AS type,
         NOT a.attnotnull AS nullable,
         pg_catalog.col_description(a.attrelid, a.attnum) AS comment,
         EXISTS (
           SELECT 1 FROM pg_catalog.pg_constraint k
           WHERE k.conrelid = a.attrelid AND k.contype = 'p' AND a.attnum = ANY (k.conkey)
         ) AS "primaryKey"
  FROM pg_catalog.pg_attribute a
  WHERE a.attrelid = ANY ($1::oid[]) AND a.attnum > 0 AND NOT a.attisdropped
) t`;

const FOREIGN_KEYS_SQL = /* SQL */ `
SELECT coalesce(json_agg(t ORDER BY t.rel, t.name), '[]') AS result
FROM (
  SELECT k.conrelid::int8::text AS rel, k.conname AS name,
         ARRAY(
           SELECT a.attname FROM unnest(k.conkey) WITH ORDINALITY u(num, ord)
           JOIN pg_catalog.pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.num
           ORDER BY u.ord
         ) AS columns,
         rn.nspname AS "refSchema", rc.relname AS "refTable",
         ARRAY(
           SELECT a.attname FROM unnest(k.confkey) WITH ORDINALITY u(num, ord)
           JOIN pg_catalog.pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.num
           ORDER BY u.ord
         ) AS "refColumns"
  FROM pg_catalog.pg_constraint k
  JOIN pg_catalog.pg_class rc ON rc.oid = k.confrelid
  JOIN pg_catalog.pg_namespace rn ON rn.oid = rc.relnamespace
  WHERE k.contype = 'f' AND k.conrelid = ANY ($1::oid[])
) t`;

interface TableRow {
  oid: string;
  schema: string;
  name: string;
  kind: 'table' | 'view';
  comment: string | null;
}

interface ColumnRow extends SchemaColumn {
  rel: string;
  comment: string | null;
}

interface ForeignKeyRow extends ForeignKey {
  rel: string;
}

function assembleTables(tables: TableRow[], columns: ColumnRow[], keys: ForeignKeyRow[]): SchemaTable[] {
  const byOid = new Map<string, SchemaTable>();
  const result = tables.map((t) => {
    const table: SchemaTable = { schema: t.schema, name: t.name, kind: t.kind, columns: [], foreignKeys: [] };
    if (t.comment) table.description = t.comment;
    byOid.set(t.oid, table);
    return table;
  });
  for (const c of columns) {
    byOid.get(c.rel)?.columns.push({
      name: c.name,
      type: c.type,
      nullable: c.nullable,
      primaryKey: c.primaryKey,
      ...(c.comment ? { description: c.comment } : {}),
    });
  }
  for (const k of keys) {
    byOid.get(k.rel)?.foreignKeys.push({
      columns: k.columns,
      refSchema: k.refSchema,
      refTable: k.refTable,
      refColumns: k.refColumns,
    });
  }
  return result;
}

/** Runs the three catalog queries (on a read-only session) and assembles the tables. */
export async function readTables(query: RunQuery, schema: string | null): Promise<SchemaTable[]> {
  const json = async <T>(text: string, values: unknown[]): Promise<T> =>
    JSON.parse(String((await query(text, values)).rows[0].result)) as T;
  const tables = await json<TableRow[]>(TABLES_SQL, [schema]);
  const oids = tables.map((t) => t.oid);
  const columns = await json<ColumnRow[]>(COLUMNS_SQL, [oids]);
  const keys = await json<ForeignKeyRow[]>(FOREIGN_KEYS_SQL, [oids]);
  return assembleTables(tables, columns, keys);
}
