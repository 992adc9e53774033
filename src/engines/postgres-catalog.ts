// Reads what the read-only allowlist needs from a PostgreSQL connection's catalog (functions
// with their volatility and extension, operators, risky cast targets, the code of views and
// row security policies) and keeps it per connection. src/sql/read-policy.ts decides what
// the rows mean.
//
// Freshness: the catalog is loaded on first use. A decision never uses a catalog whose change
// check is older than CHECK_MS: the next decision after that waits for a one-row fingerprint of
// the catalogs involved (row counts and newest xmin; one query shared by every decision
// waiting), and a change reloads it. A name missing from the cached catalog (a function created
// a moment ago) reloads it at once, at most once per MISS_RELOAD_MS. DDL run through dbq
// invalidates it directly (invalidate()). The worst staleness is therefore CHECK_MS for a
// function made *less* safe outside dbq (CREATE OR REPLACE … VOLATILE, a volatile overload of
// an allowed name); the reader role (docs/security.md) is the layer that holds then.
import { collectPlpgsqlReferences, collectPostgresReferences } from '../sql/guard-postgres.ts';
import { buildPostgresCatalog, type CatalogRows, type PostgresCatalog } from '../sql/read-policy.ts';

export type CatalogQuery = (text: string) => Promise<{ rows: Record<string, unknown>[] }>;

const CHECK_MS = 1_000;
const MISS_RELOAD_MS = 1_000;

// User functions (not pg_catalog's, information_schema's or an extension's) bring the code that
// can be checked: a LANGUAGE sql body, default argument expressions, an aggregate's support
// functions.
const FUNCTIONS = /* SQL */ `
SELECT p.oid::int8 AS oid, n.nspname AS schema, p.proname AS name, p.provolatile AS volatility,
       p.pronargs - p.pronargdefaults AS required_args, p.pronargs AS args, e.extname AS extension,
       u.user_defined, p.prosecdef AS security_definer,
       l.lanname AS language,
       CASE WHEN u.user_defined AND l.lanname = 'sql' THEN p.prosrc END AS sql_body,
       CASE WHEN u.user_defined AND l.lanname = 'plpgsql' AND p.prokind IN ('f', 'p') THEN pg_get_functiondef(p.oid) END AS plpgsql_definition,
       CASE WHEN u.user_defined AND p.pronargdefaults > 0 THEN pg_get_expr(p.proargdefaults, 0) END AS defaults,
       CASE WHEN u.user_defined AND p.prokind = 'a' THEN (
         SELECT array_to_string(array_remove(ARRAY[a.aggtransfn, a.aggfinalfn, a.aggcombinefn, a.aggserialfn,
                  a.aggdeserialfn, a.aggmtransfn, a.aggminvtransfn, a.aggmfinalfn]::oid[], 0::oid), ',')
         FROM pg_aggregate a WHERE a.aggfnoid = p.oid) END AS support,
       (SELECT string_agg(format('%s.%s', tn.nspname, t.typname), ',')
        FROM unnest(p.proargtypes::oid[] || p.prorettype) AS x(oid)
        JOIN pg_type t ON t.oid = x.oid JOIN pg_namespace tn ON tn.oid = t.typnamespace
        WHERE tn.nspname NOT IN ('pg_catalog', 'information_schema')) AS user_types
FROM pg_proc p
JOIN pg_namespace n ON n.oid = p.pronamespace
JOIN pg_language l ON l.oid = p.prolang
LEFT JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
LEFT JOIN pg_extension e ON e.oid = d.refobjid
CROSS JOIN LATERAL (SELECT n.nspname NOT IN ('pg_catalog', 'information_schema') AND e.extname IS NULL AS user_defined) u`;

// An operator runs its oprcode, and a sort or a merge by it (ORDER BY … USING op) runs the
// support functions of its operator families: a volatile one makes the operator unsafe.
const OPERATORS = /* SQL */ `
SELECT o.oid::int8 AS oid, n.nspname AS schema, o.oprname AS name, o.oprcode::oid::int8 AS function_oid,
       EXISTS (SELECT 1 FROM pg_amop ao JOIN pg_amproc ap ON ap.amprocfamily = ao.amopfamily
               JOIN pg_proc p ON p.oid = ap.amproc
               WHERE ao.amopopr = o.oid AND p.provolatile = 'v') AS family_unsafe
FROM pg_operator o JOIN pg_namespace n ON n.oid = o.oprnamespace`;

// Types whose values run code: an input function (a literal cast to it), an output function
// (every value a read returns), an implicit or assignment cast from it (`length(c)`), an
// operator class member (ORDER BY, DISTINCT, GROUP BY, joins, GREATEST compare with it), and
// arrays and domains of those. Built-in types have none of these volatile.
const UNSAFE_VALUE_TYPES = /* SQL */ `
WITH RECURSIVE vol AS (SELECT oid FROM pg_proc WHERE provolatile = 'v'),
seed(oid) AS (
  SELECT t.oid FROM pg_type t WHERE t.typinput::oid IN (SELECT oid FROM vol) OR t.typoutput::oid IN (SELECT oid FROM vol)
  UNION
  SELECT c.castsource FROM pg_cast c WHERE c.castcontext IN ('i', 'a') AND c.castfunc IN (SELECT oid FROM vol)
  UNION
  SELECT oc.opcintype FROM pg_opclass oc
  JOIN pg_amop ao ON ao.amopfamily = oc.opcfamily JOIN pg_operator o ON o.oid = ao.amopopr
  WHERE o.oprcode::oid IN (SELECT oid FROM vol)
  UNION
  SELECT oc.opcintype FROM pg_opclass oc JOIN pg_amproc ap ON ap.amprocfamily = oc.opcfamily
  WHERE ap.amproc::oid IN (SELECT oid FROM vol)
),
bad(oid) AS (
  SELECT oid FROM seed
  UNION
  -- Arrays and domains of them, and composites (a table's row type included) with such a field
  -- (one recursive term: PostgreSQL allows the recursive reference once).
  SELECT t.oid FROM bad b
  JOIN pg_type t ON true
  LEFT JOIN pg_attribute a ON a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped AND a.atttypid = b.oid
  WHERE t.typelem = b.oid OR t.typbasetype = b.oid OR a.attrelid IS NOT NULL
)`;

const UNSAFE_TYPES = /* SQL */ `
${UNSAFE_VALUE_TYPES}
SELECT n.nspname AS schema, t.typname AS name, 'input' AS how
FROM bad JOIN pg_type t ON t.oid = bad.oid JOIN pg_namespace n ON n.oid = t.typnamespace
UNION ALL
SELECT n.nspname, t.typname, 'cast'
FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
WHERE EXISTS (SELECT 1 FROM pg_cast c JOIN pg_proc p ON p.oid = c.castfunc
              WHERE c.casttarget = t.oid AND p.provolatile = 'v')`;

/** Foreign data wrappers whose tables only read: postgres_fdw sends a SELECT to its server. */
const VETTED_FDW = ['postgres_fdw'];

// Relations whose mere reading runs code outside the guard's sight: a column of an unsafe
// value type (its output and comparison functions), a foreign table of any other wrapper
// (file_fdw runs a program, others may write).
const UNSAFE_RELATIONS = /* SQL */ `
${UNSAFE_VALUE_TYPES},
direct(oid) AS (
  SELECT a.attrelid FROM pg_attribute a
  WHERE a.attnum > 0 AND NOT a.attisdropped AND a.atttypid IN (SELECT oid FROM bad)
  UNION
  -- Its own row type (\`SELECT r FROM t r ORDER BY r\` compares whole rows).
  SELECT c.oid FROM pg_class c WHERE c.reltype IN (SELECT oid FROM bad)
  UNION
  SELECT ft.ftrelid FROM pg_foreign_table ft
  JOIN pg_foreign_server fs ON fs.oid = ft.ftserver JOIN pg_foreign_data_wrapper w ON w.oid = fs.srvfdw
  WHERE w.fdwname NOT IN (${VETTED_FDW.map((name) => `'${name}'`).join(', ')})
),
-- Reading a partitioned table or an inheritance parent reads its children.
unsafe(oid) AS (
  SELECT oid FROM direct
  UNION
  SELECT i.inhparent FROM pg_inherits i JOIN unsafe u ON u.oid = i.inhrelid
)
SELECT n.nspname AS schema, c.relname AS name
FROM unsafe u JOIN pg_class c ON c.oid = u.oid JOIN pg_namespace n ON n.oid = c.relnamespace`;

// A domain's checks run on every value cast to it, and so do its base domain's. Read as text:
// pg_depend records no dependency on built-in functions.
const DOMAIN_CHECKS = /* SQL */ `
SELECT n.nspname AS schema, t.typname AS name, bn.nspname AS base_schema, b.typname AS base_name,
       (SELECT 'SELECT ' || string_agg(pg_get_expr(c.conbin, 0), ', ') FROM pg_constraint c
        WHERE c.contypid = t.oid AND c.contype = 'c') AS sql
FROM pg_type t
JOIN pg_namespace n ON n.oid = t.typnamespace
JOIN pg_type b ON b.oid = t.typbasetype
JOIN pg_namespace bn ON bn.oid = b.typnamespace
WHERE t.typtype = 'd'`;

// User composite types and their fields' types: a value cast to the composite runs its fields'
// domain checks (json_populate_record(NULL::t, …), ROW(5)::t).
const COMPOSITE_FIELDS = /* SQL */ `
SELECT n.nspname AS schema, t.typname AS name, format('%s.%s', fn.nspname, ft.typname) AS field_type
FROM pg_type t
JOIN pg_namespace n ON n.oid = t.typnamespace
JOIN pg_attribute a ON a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_type ft ON ft.oid = a.atttypid
JOIN pg_namespace fn ON fn.oid = ft.typnamespace
WHERE t.typtype = 'c' AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND fn.nspname NOT IN ('pg_catalog', 'information_schema')`;

// What runs when a relation is read: a view's query (not a materialized view's: reading one
// runs nothing), a table's row security policies as one SELECT of their expressions.
const RELATION_CODE = /* SQL */ `
SELECT n.nspname AS schema, c.relname AS name, pg_get_viewdef(c.oid) AS sql
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'v'
UNION ALL
SELECT n.nspname, c.relname,
       'SELECT ' || concat_ws(', ', pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid))
FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid JOIN pg_namespace n ON n.oid = c.relnamespace`;

/** Changes whenever a row of these catalogs is added, changed or removed. */
const FINGERPRINT = /* SQL */ `
SELECT concat_ws(',',
  (SELECT count(*) || ':' || max(xmin::text::int8) FROM pg_proc),
  (SELECT count(*) || ':' || max(xmin::text::int8) FROM pg_operator),
  (SELECT count(*) || ':' || max(xmin::text::int8) FROM pg_type),
  (SELECT count(*) || ':' || max(xmin::text::int8) FROM pg_cast),
  (SELECT count(*) || ':' || max(xmin::text::int8) FROM pg_rewrite),
  (SELECT count(*) || ':' || coalesce(max(xmin::text::int8), 0) FROM pg_policy),
  (SELECT count(*) || ':' || max(xmin::text::int8) FROM pg_constraint),
  (SELECT count(*) || ':' || max(xmin::text::int8) FROM pg_extension),
  (SELECT count(*) || ':' || max(xmin::text::int8) FROM pg_namespace),
  (SELECT count(*) || ':' || max(xmin::text::int8) FROM pg_class),
  (SELECT count(*) || ':' || coalesce(max(xmin::text::int8), 0) FROM pg_opclass),
  (SELECT count(*) || ':' || coalesce(max(xmin::text::int8), 0) FROM pg_opfamily),
  (SELECT count(*) || ':' || coalesce(max(xmin::text::int8), 0) FROM pg_amop),
  (SELECT count(*) || ':' || coalesce(max(xmin::text::int8), 0) FROM pg_amproc),
  (SELECT count(*) || ':' || coalesce(max(xmin::text::int8), 0) FROM pg_foreign_table),
  (SELECT count(*) || ':' || coalesce(max(xmin::text::int8), 0) FROM pg_inherits)
) AS fingerprint`;

export async function readCatalog(query: CatalogQuery): Promise<{ catalog: PostgresCatalog; fingerprint: string }> {
  // With an empty search_path, pg_get_viewdef and pg_get_expr qualify every name outside
  // pg_catalog, so view code names exactly the functions it calls.
  await query("SET LOCAL search_path = ''");
  // The recursive type queries are estimated high enough to be JIT-compiled: ~0.5 s of
  // compiling for a few ms of work.
  await query('SET LOCAL jit = off');
  // The fingerprint is read first: a change landing during the load is seen by the next check.
  const fingerprint = await readFingerprint(query);
  const [functions, operators, types, domains, code, relations, composites] = [
    await query(FUNCTIONS),
    await query(OPERATORS),
    await query(UNSAFE_TYPES),
    await query(DOMAIN_CHECKS),
    await query(RELATION_CODE),
    await query(UNSAFE_RELATIONS),
    await query(COMPOSITE_FIELDS),
  ];
  const rows: CatalogRows = {
    functions: functions.rows.map((r) => ({
      oid: Number(r.oid),
      schema: String(r.schema),
      name: String(r.name),
      volatility: String(r.volatility),
      requiredArgs: Number(r.required_args),
      args: Number(r.args),
      extension: r.extension === null ? null : String(r.extension),
      user: r.user_defined === 't' || r.user_defined === true,
      securityDefiner: r.security_definer === 't' || r.security_definer === true,
      language: String(r.language),
      sqlBody: r.sql_body === null ? null : String(r.sql_body),
      plpgsqlDefinition: r.plpgsql_definition === null ? null : String(r.plpgsql_definition),
      defaults: r.defaults === null ? null : String(r.defaults),
      support: r.support === null || r.support === '' ? [] : String(r.support).split(',').map(Number),
      userTypes: r.user_types === null ? [] : String(r.user_types).split(','),
    })),
    operators: operators.rows.map((r) => ({
      oid: Number(r.oid),
      schema: String(r.schema),
      name: String(r.name),
      functionOid: Number(r.function_oid),
      familyUnsafe: r.family_unsafe === 't' || r.family_unsafe === true,
    })),
    unsafeTypes: types.rows.map((r) => ({ schema: String(r.schema), name: String(r.name), how: r.how === 'input' ? 'input' : 'cast' })),
    domainChecks: domains.rows.map((r) => ({
      schema: String(r.schema),
      name: String(r.name),
      base: `${String(r.base_schema)}.${String(r.base_name)}`,
      sql: r.sql === null ? null : String(r.sql),
    })),
    compositeFields: composites.rows.map((r) => ({ schema: String(r.schema), name: String(r.name), fieldType: String(r.field_type) })),
    unsafeRelations: relations.rows.map((r) => ({ schema: String(r.schema), name: String(r.name) })),
    relationCode: code.rows.map((r) => ({ schema: String(r.schema), name: String(r.name), sql: String(r.sql) })),
  };
  return { catalog: buildPostgresCatalog(rows, { sql: collectPostgresReferences, plpgsql: collectPlpgsqlReferences }), fingerprint };
}

async function readFingerprint(query: CatalogQuery): Promise<string> {
  const result = await query(FINGERPRINT);
  return String(result.rows[0]?.fingerprint ?? '');
}

/** One connection's catalog, loaded on first use and kept fresh as described above. */
export class CatalogCache {
  private current: { catalog: PostgresCatalog; fingerprint: string; checkedAt: number; loadedAt: number } | null = null;
  private loading: Promise<PostgresCatalog> | null = null;
  private checking: Promise<void> | null = null;

  constructor(private readonly query: (work: (q: CatalogQuery) => Promise<unknown>) => Promise<unknown>) {}

  /** The catalog to decide with now: never one whose change check is older than CHECK_MS. */
  async get(): Promise<PostgresCatalog> {
    if (this.current !== null && Date.now() - this.current.checkedAt > CHECK_MS) await this.check();
    return this.current?.catalog ?? this.load();
  }

  /** A name was missing: reload now unless that was just done. Returns the catalog to use. */
  async reloadForMiss(): Promise<PostgresCatalog | undefined> {
    if (this.current !== null && Date.now() - this.current.loadedAt < MISS_RELOAD_MS) return undefined;
    return this.load();
  }

  invalidate(): void {
    this.current = null;
  }

  private load(): Promise<PostgresCatalog> {
    this.loading ??= (async () => {
      try {
        let loaded!: { catalog: PostgresCatalog; fingerprint: string };
        await this.query(async (q) => {
          loaded = await readCatalog(q);
        });
        const now = Date.now();
        this.current = { ...loaded, checkedAt: now, loadedAt: now };
        return loaded.catalog;
      } finally {
        this.loading = null;
      }
    })();
    return this.loading;
  }

  /** One fingerprint query shared by every decision waiting on it; a change drops the cache. */
  private check(): Promise<void> {
    const seen = this.current;
    if (seen === null) return Promise.resolve();
    this.checking ??= this.query(async (q) => {
      const fingerprint = await readFingerprint(q);
      if (this.current !== seen) return;
      if (fingerprint === seen.fingerprint) seen.checkedAt = Date.now();
      else this.current = null;
    })
      .then(() => undefined, () => {
        // The check failed (server away): decide with what we have; the statement will meet
        // the same server.
      })
      .finally(() => {
        this.checking = null;
      });
    return this.checking;
  }
}
