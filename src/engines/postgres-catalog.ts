// Reads what the read-only allowlist needs from a PostgreSQL connection's catalog (functions
// with their volatility and extension, operators, risky cast targets, the code of views and
// row security policies) and keeps it per connection. src/sql/read-policy.ts decides what
// the rows mean.
//
// Freshness: the catalog is loaded on first use; afterwards a one-row fingerprint of the
// catalogs involved (row counts and newest xmin) is compared at most every REFRESH_MS, in the
// background, and a change reloads it. A name missing from the cached catalog (a function
// created a moment ago) reloads it at once, at most once per MISS_RELOAD_MS. DDL run through
// dbq invalidates it directly (invalidate()). The worst staleness is therefore REFRESH_MS for
// a function made *less* safe outside dbq (ALTER FUNCTION … VOLATILE, a volatile overload
// added to an allowed name); the reader role (docs/security.md) is the layer that holds then.
import { collectPlpgsqlReferences, collectPostgresReferences } from '../sql/guard-postgres.ts';
import { buildPostgresCatalog, type CatalogRows, type PostgresCatalog } from '../sql/read-policy.ts';

export type CatalogQuery = (text: string) => Promise<{ rows: Record<string, unknown>[] }>;

const REFRESH_MS = 5_000;
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
         FROM pg_aggregate a WHERE a.aggfnoid = p.oid) END AS support
FROM pg_proc p
JOIN pg_namespace n ON n.oid = p.pronamespace
JOIN pg_language l ON l.oid = p.prolang
LEFT JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
LEFT JOIN pg_extension e ON e.oid = d.refobjid
CROSS JOIN LATERAL (SELECT n.nspname NOT IN ('pg_catalog', 'information_schema') AND e.extname IS NULL AS user_defined) u`;

const OPERATORS = /* SQL */ `
SELECT o.oid::int8 AS oid, n.nspname AS schema, o.oprname AS name, o.oprcode::oid::int8 AS function_oid
FROM pg_operator o JOIN pg_namespace n ON n.oid = o.oprnamespace`;

const UNSAFE_TYPES = /* SQL */ `
SELECT n.nspname AS schema, t.typname AS name, 'input' AS how
FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
WHERE EXISTS (SELECT 1 FROM pg_proc p WHERE p.oid = t.typinput AND p.provolatile = 'v')
UNION ALL
SELECT n.nspname, t.typname, 'cast'
FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
WHERE EXISTS (SELECT 1 FROM pg_cast c JOIN pg_proc p ON p.oid = c.castfunc
              WHERE c.casttarget = t.oid AND p.provolatile = 'v')`;

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
  (SELECT count(*) || ':' || max(xmin::text::int8) FROM pg_class WHERE relkind = 'v')
) AS fingerprint`;

export async function readCatalog(query: CatalogQuery): Promise<{ catalog: PostgresCatalog; fingerprint: string }> {
  // With an empty search_path, pg_get_viewdef and pg_get_expr qualify every name outside
  // pg_catalog, so view code names exactly the functions it calls.
  await query("SET LOCAL search_path = ''");
  // The fingerprint is read first: a change landing during the load is seen by the next check.
  const fingerprint = await readFingerprint(query);
  const [functions, operators, types, domains, code] = [
    await query(FUNCTIONS),
    await query(OPERATORS),
    await query(UNSAFE_TYPES),
    await query(DOMAIN_CHECKS),
    await query(RELATION_CODE),
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
    })),
    operators: operators.rows.map((r) => ({ oid: Number(r.oid), schema: String(r.schema), name: String(r.name), functionOid: Number(r.function_oid) })),
    unsafeTypes: types.rows.map((r) => ({ schema: String(r.schema), name: String(r.name), how: r.how === 'input' ? 'input' : 'cast' })),
    domainChecks: domains.rows.map((r) => ({
      schema: String(r.schema),
      name: String(r.name),
      base: `${String(r.base_schema)}.${String(r.base_name)}`,
      sql: r.sql === null ? null : String(r.sql),
    })),
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
  private checking = false;

  constructor(private readonly query: (work: (q: CatalogQuery) => Promise<unknown>) => Promise<unknown>) {}

  /** The catalog to decide with now. */
  async get(): Promise<PostgresCatalog> {
    const current = this.current;
    if (current === null) return this.load();
    if (Date.now() - current.checkedAt > REFRESH_MS) this.checkInBackground();
    return current.catalog;
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

  private checkInBackground(): void {
    if (this.checking || this.current === null) return;
    this.checking = true;
    const seen = this.current;
    void this.query(async (q) => {
      const fingerprint = await readFingerprint(q);
      if (this.current !== seen) return;
      if (fingerprint === seen.fingerprint) seen.checkedAt = Date.now();
      else this.current = null;
    })
      .catch(() => {
        // The check failed (server away): keep deciding with what we have, try again later.
      })
      .finally(() => {
        this.checking = false;
      });
  }
}
