// Catalog queries for searchObjects on PostgreSQL: one per kind, the name pattern bound as $1
// (a lower-case LIKE pattern, `!` escapes), every non-system schema. Like postgres-introspect.ts
// each returns one json value, so the result does not depend on the pool's type parsers.

import type { ObjectSearch, SchemaObject, SchemaObjectKind } from '../engine.ts';
import type { RunQuery } from './postgres-types.ts';

const USER_SCHEMA = /* SQL */ `n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_(toast|temp_|toast_temp_)'`;

const RELATIONS_SQL = (relkinds: string) => /* SQL */ `
SELECT coalesce(json_agg(t), '[]') AS result
FROM (
  SELECT n.nspname AS schema, c.relname AS name,
         (SELECT count(*) FROM pg_catalog.pg_attribute a
          WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped)::int AS "columnCount"
  FROM pg_catalog.pg_class c
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN (${relkinds}) AND NOT c.relispartition AND ${USER_SCHEMA}
    AND lower(c.relname) LIKE $1 ESCAPE '!'
) t`;

const SQL: Record<SchemaObjectKind, string> = {
  table: RELATIONS_SQL(`'r', 'p', 'f'`),
  view: RELATIONS_SQL(`'v', 'm'`),
  column: /* SQL */ `
SELECT coalesce(json_agg(t), '[]') AS result
FROM (
  SELECT n.nspname AS schema, c.relname AS "table", a.attname AS name,
         pg_catalog.format_type(a.atttypid, a.atttypmod) AS type,
         NOT a.attnotnull AS nullable,
         EXISTS (
           SELECT 1 FROM pg_catalog.pg_constraint k
           WHERE k.conrelid = a.attrelid AND k.contype = 'p' AND a.attnum = ANY (k.conkey)
         ) AS "primaryKey"
  FROM pg_catalog.pg_attribute a
  JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition AND ${USER_SCHEMA}
    AND a.attnum > 0 AND NOT a.attisdropped
    AND lower(a.attname) LIKE $1 ESCAPE '!'
) t`,
  index: /* SQL */ `
SELECT coalesce(json_agg(t), '[]') AS result
FROM (
  SELECT n.nspname AS schema, tc.relname AS "table", ic.relname AS name, x.indisunique AS "unique",
         ARRAY(
           SELECT pg_catalog.pg_get_indexdef(x.indexrelid, k.ord::int, true)
           FROM generate_series(1, x.indnkeyatts) AS k(ord) ORDER BY k.ord
         ) AS columns
  FROM pg_catalog.pg_index x
  JOIN pg_catalog.pg_class ic ON ic.oid = x.indexrelid
  JOIN pg_catalog.pg_class tc ON tc.oid = x.indrelid
  JOIN pg_catalog.pg_namespace n ON n.oid = ic.relnamespace
  WHERE ${USER_SCHEMA} AND lower(ic.relname) LIKE $1 ESCAPE '!'
) t`,
  function: /* SQL */ `
SELECT coalesce(json_agg(t), '[]') AS result
FROM (
  SELECT n.nspname AS schema, p.proname AS name,
         pg_catalog.pg_get_function_arguments(p.oid) AS arguments,
         coalesce(pg_catalog.pg_get_function_result(p.oid), '') AS type,
         CASE p.prokind WHEN 'p' THEN 'procedure' WHEN 'a' THEN 'aggregate' WHEN 'w' THEN 'window' ELSE 'function' END AS "routineType"
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
  WHERE ${USER_SCHEMA} AND lower(p.proname) LIKE $1 ESCAPE '!'
) t`,
};

/** Runs the kind's catalog query (on a read-only session). */
export async function searchPostgresObjects(query: RunQuery, search: ObjectSearch): Promise<SchemaObject[]> {
  const result = await query(SQL[search.kind], [search.like]);
  const rows = JSON.parse(String(result.rows[0].result)) as Omit<SchemaObject, 'kind'>[];
  return rows.map((r) => ({ kind: search.kind, ...r }));
}
