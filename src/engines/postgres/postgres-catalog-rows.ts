// The catalog rows the PostgreSQL read policy (src/guard/read-policy.ts) judges, read in one
// transaction with an empty search_path (so deparsed code names every function outside
// pg_catalog with its schema). Raw facts only: which functions are safe, and what follows for
// operators, types and relations, is decided in read-policy.ts from these rows, not by
// volatility labels here. The row types are declared here, beside the queries that produce
// them; the guard imports them.

export type CatalogQuery = (text: string) => Promise<{ rows: Record<string, unknown>[] }>;

export interface CatalogFunctionRow {
  oid: number;
  schema: string;
  name: string;
  volatility: string;
  /** Arguments without defaults, and all arguments. */
  requiredArgs: number;
  args: number;
  extension: string | null;
  /** The database's own (not pg_catalog, information_schema or an extension's). */
  user: boolean;
  securityDefiner: boolean;
  /** A `SET` clause other than search_path (it changes the session while the function runs). */
  unsafeConfig: boolean;
  language: string;
  /** A user function in LANGUAGE internal: the built-in C symbol it calls (range constructors). */
  internalSymbol: string | null;
  /** A user function in LANGUAGE sql: its body, checked like a read. */
  sqlBody: string | null;
  /** A user function in LANGUAGE plpgsql: its definition (pg_get_functiondef). */
  plpgsqlDefinition: string | null;
  /** A user function's default argument expressions, `a, b`: they run in the caller. */
  defaults: string | null;
  /** An aggregate's support functions (transition, final, …) and a planner support function. */
  support: number[];
  /** Input argument types, and the types it returns (result and OUT columns). */
  argTypes: number[];
  resultTypes: number[];
}

export interface CatalogOperatorRow {
  oid: number;
  schema: string;
  name: string;
  left: number;
  right: number;
  result: number;
  code: number;
  /** Selectivity estimators (0 when none). */
  restrict: number;
  join: number;
  commutator: number;
  negator: number;
}

export interface CatalogTypeRow {
  oid: number;
  schema: string;
  name: string;
  /** pg_catalog or information_schema. */
  builtin: boolean;
  /** pg_type.typtype: b base, c composite, d domain, e enum, p pseudo, r range, m multirange. */
  kind: string;
  element: number;
  base: number;
  /** A composite's pg_class row (its fields are that relation's columns). */
  relation: number;
  /** Input, output, receive, send, typmod in/out, analyze, subscript functions. */
  functions: number[];
  rangeSubtype: number;
  /** A range's canonical and subtype_diff functions. */
  rangeFunctions: number[];
  /** The operator family of a range's subtype opclass (bounds are compared with it). */
  rangeFamily: number;
  /** A multirange's range type. */
  multirangeOf: number;
  /** A domain's CHECK expressions as `SELECT a, b`; its default as `SELECT d`. */
  domainChecks: string | null;
  domainDefault: string | null;
}

export interface CatalogCastRow {
  source: number;
  target: number;
  func: number;
  /** i implicit, a assignment, e explicit. */
  context: string;
}

export interface CatalogFamilyRow {
  family: number;
  /** The input types of its default operator classes. */
  types: number[];
  operators: number[];
  procs: number[];
}

export interface CatalogRelationRow {
  oid: number;
  schema: string;
  name: string;
  rowType: number;
  /** User types (outside pg_catalog and information_schema) of its columns. */
  columnTypes: number[];
  /** Inheritance children and partitions: reading it reads them. */
  children: number[];
  /** Operator families of its indexes' and partition key's operator classes. */
  indexFamilies: number[];
  /** A foreign table of a wrapper that is not vetted to only read. */
  unsafeForeign: boolean;
  /** Rewrite rules other than a view's: a plan-only write plans their actions. */
  hasRules: boolean;
  /** A view's query. */
  viewCode: string | null;
  /** Row security policies as `SELECT a, b`. */
  policyCode: string | null;
  /** What the planner folds when it plans a read of it, as `SELECT a, b`: index expressions
   * and predicates, extended statistics expressions, CHECK constraints, partition keys. */
  planCode: string | null;
  /** Column defaults and generated columns as `SELECT a, b`. */
  writeCode: string | null;
}

export interface CatalogRows {
  functions: CatalogFunctionRow[];
  operators: CatalogOperatorRow[];
  types: CatalogTypeRow[];
  casts: CatalogCastRow[];
  families: CatalogFamilyRow[];
  relations: CatalogRelationRow[];
}

const BUILTIN_SCHEMAS = `('pg_catalog', 'information_schema')`;

// User functions (not pg_catalog's, information_schema's or an extension's) bring the code that
// can be checked: a LANGUAGE sql body, a plpgsql definition, default argument expressions, an
// aggregate's support functions. Every function brings its argument and result types (which
// overload a call can pick depends on the types in play) and its planner support function.
const FUNCTIONS = /* SQL */ `
SELECT p.oid::int8 AS oid, n.nspname AS schema, p.proname AS name, p.provolatile AS volatility,
       p.pronargs - p.pronargdefaults AS required_args, p.pronargs AS args, e.extname AS extension,
       u.user_defined, p.prosecdef AS security_definer,
       EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c NOT LIKE 'search\\_path=%') AS unsafe_config,
       l.lanname AS language,
       CASE WHEN u.user_defined AND l.lanname = 'internal' THEN p.prosrc END AS internal_symbol,
       CASE WHEN u.user_defined AND l.lanname = 'sql' THEN p.prosrc END AS sql_body,
       CASE WHEN u.user_defined AND l.lanname = 'plpgsql' AND p.prokind IN ('f', 'p') THEN pg_get_functiondef(p.oid) END AS plpgsql_definition,
       CASE WHEN u.user_defined AND p.pronargdefaults > 0 THEN pg_get_expr(p.proargdefaults, 0) END AS defaults,
       concat_ws(',', NULLIF(p.prosupport::oid, 0)::int8,
         CASE WHEN p.prokind = 'a' THEN (
           SELECT array_to_string(array_remove(ARRAY[a.aggtransfn, a.aggfinalfn, a.aggcombinefn, a.aggserialfn,
                    a.aggdeserialfn, a.aggmtransfn, a.aggminvtransfn, a.aggmfinalfn]::oid[], 0::oid), ',')
           FROM pg_aggregate a WHERE a.aggfnoid = p.oid) END) AS support,
       array_to_string(p.proargtypes::oid[], ',') AS arg_types,
       concat_ws(',', p.prorettype::int8, (
         SELECT string_agg(x.t::int8::text, ',')
         FROM unnest(p.proallargtypes, p.proargmodes) AS x(t, m) WHERE x.m IN ('o', 'b', 't'))) AS result_types
FROM pg_proc p
JOIN pg_namespace n ON n.oid = p.pronamespace
JOIN pg_language l ON l.oid = p.prolang
LEFT JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
LEFT JOIN pg_extension e ON e.oid = d.refobjid
CROSS JOIN LATERAL (SELECT n.nspname NOT IN ${BUILTIN_SCHEMAS} AND e.extname IS NULL AS user_defined) u`;

const OPERATORS = /* SQL */ `
SELECT o.oid::int8 AS oid, n.nspname AS schema, o.oprname AS name, o.oprleft::int8 AS "left",
       o.oprright::int8 AS "right", o.oprresult::int8 AS result, o.oprcode::oid::int8 AS code,
       o.oprrest::oid::int8 AS restrict, o.oprjoin::oid::int8 AS "join",
       o.oprcom::int8 AS commutator, o.oprnegate::int8 AS negator
FROM pg_operator o JOIN pg_namespace n ON n.oid = o.oprnamespace`;

// Every type with the functions its values run, what it is made of, and a domain's code.
const TYPES = /* SQL */ `
SELECT t.oid::int8 AS oid, n.nspname AS schema, t.typname AS name, n.nspname IN ${BUILTIN_SCHEMAS} AS builtin,
       t.typtype AS kind, t.typelem::int8 AS element, t.typbasetype::int8 AS base, t.typrelid::int8 AS relation,
       array_to_string(array_remove(ARRAY[t.typinput, t.typoutput, t.typreceive, t.typsend, t.typmodin,
         t.typmodout, t.typanalyze, t.typsubscript]::oid[], 0::oid), ',') AS functions,
       coalesce(r.rngsubtype, 0)::int8 AS range_subtype,
       array_to_string(array_remove(ARRAY[r.rngcanonical, r.rngsubdiff]::oid[], 0::oid), ',') AS range_functions,
       coalesce(oc.opcfamily, 0)::int8 AS range_family,
       coalesce(mr.rngtypid, 0)::int8 AS multirange_of,
       CASE WHEN t.typtype = 'd' THEN (SELECT 'SELECT ' || string_agg(pg_get_expr(c.conbin, 0), ', ')
         FROM pg_constraint c WHERE c.contypid = t.oid AND c.contype = 'c') END AS domain_checks,
       CASE WHEN t.typtype = 'd' AND t.typdefaultbin IS NOT NULL THEN 'SELECT ' || pg_get_expr(t.typdefaultbin, 0) END AS domain_default
FROM pg_type t
JOIN pg_namespace n ON n.oid = t.typnamespace
LEFT JOIN pg_range r ON r.rngtypid = t.oid
LEFT JOIN pg_opclass oc ON oc.oid = r.rngsubopc
LEFT JOIN pg_range mr ON mr.rngmultitypid = t.oid`;

const CASTS = /* SQL */ `
SELECT castsource::int8 AS source, casttarget::int8 AS target, castfunc::int8 AS func, castcontext AS context FROM pg_cast`;

// An operator family's members run when the planner sorts, groups, hashes, merges or scans an
// index with it: for an operator it holds (ORDER BY … USING, merge and hash joins look the
// operator's families up), for the type of a default operator class of it (the type's own
// sorting, grouping and hashing), and for a relation with an index or partition key using one
// of its classes (RELATIONS' index_families).
const FAMILIES = /* SQL */ `
SELECT f.oid::int8 AS family,
       (SELECT string_agg(DISTINCT opcintype::int8::text, ',') FROM pg_opclass WHERE opcfamily = f.oid AND opcdefault) AS types,
       (SELECT string_agg(amopopr::int8::text, ',') FROM pg_amop WHERE amopfamily = f.oid) AS operators,
       (SELECT string_agg(amproc::oid::int8::text, ',') FROM pg_amproc WHERE amprocfamily = f.oid) AS procs
FROM pg_opfamily f`;

/** Foreign data wrappers whose tables only read: postgres_fdw sends a SELECT to its server. */
const VETTED_FDW = ['postgres_fdw'];

// Each relation with the code that runs when it is read (a view's query, row security
// policies), the expressions the planner folds whenever it plans a read of it (index
// expressions and predicates, extended statistics expressions, CHECK constraints, a partition
// key), and what planning a write into it folds (defaults, generated columns). Only columns of
// user types are listed: built-in types are in play in every statement anyway.
const RELATIONS = /* SQL */ `
SELECT c.oid::int8 AS oid, n.nspname AS schema, c.relname AS name, c.reltype::int8 AS row_type,
       (SELECT string_agg(DISTINCT a.atttypid::int8::text, ',') FROM pg_attribute a
        JOIN pg_type at ON at.oid = a.atttypid JOIN pg_namespace an ON an.oid = at.typnamespace
        WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND an.nspname NOT IN ${BUILTIN_SCHEMAS}) AS column_types,
       (SELECT string_agg(i.inhrelid::int8::text, ',') FROM pg_inherits i WHERE i.inhparent = c.oid) AS children,
       (SELECT string_agg(DISTINCT oc.opcfamily::int8::text, ',') FROM (
          SELECT unnest(ix.indclass::oid[]) FROM pg_index ix WHERE ix.indrelid = c.oid
          UNION ALL SELECT unnest(pt.partclass::oid[]) FROM pg_partitioned_table pt WHERE pt.partrelid = c.oid) AS k(opclass)
        JOIN pg_opclass oc ON oc.oid = k.opclass) AS index_families,
       c.relkind = 'f' AND NOT EXISTS (
         SELECT 1 FROM pg_foreign_table ft JOIN pg_foreign_server fs ON fs.oid = ft.ftserver
         JOIN pg_foreign_data_wrapper w ON w.oid = fs.srvfdw
         WHERE ft.ftrelid = c.oid AND w.fdwname IN (${VETTED_FDW.map((name) => `'${name}'`).join(', ')})) AS unsafe_foreign,
       EXISTS (SELECT 1 FROM pg_rewrite rw WHERE rw.ev_class = c.oid AND rw.ev_type <> '1') AS has_rules,
       CASE WHEN c.relkind = 'v' THEN pg_get_viewdef(c.oid) END AS view_code,
       (SELECT 'SELECT ' || string_agg(concat_ws(', ', pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid)), ', ')
        FROM pg_policy p WHERE p.polrelid = c.oid AND (p.polqual IS NOT NULL OR p.polwithcheck IS NOT NULL)) AS policy_code,
       'SELECT ' || NULLIF(concat_ws(', ',
         (SELECT string_agg(concat_ws(', ', pg_get_expr(ix.indexprs, ix.indrelid), pg_get_expr(ix.indpred, ix.indrelid)), ', ')
          FROM pg_index ix WHERE ix.indrelid = c.oid AND (ix.indexprs IS NOT NULL OR ix.indpred IS NOT NULL)),
         (SELECT string_agg(x, ', ') FROM pg_statistic_ext s, unnest(pg_get_statisticsobjdef_expressions(s.oid)) AS x WHERE s.stxrelid = c.oid),
         (SELECT string_agg(pg_get_expr(co.conbin, co.conrelid), ', ') FROM pg_constraint co WHERE co.conrelid = c.oid AND co.contype = 'c'),
         (SELECT pg_get_expr(pt.partexprs, pt.partrelid) FROM pg_partitioned_table pt WHERE pt.partrelid = c.oid AND pt.partexprs IS NOT NULL)
       ), '') AS plan_code,
       (SELECT 'SELECT ' || string_agg(pg_get_expr(d.adbin, d.adrelid), ', ') FROM pg_attrdef d WHERE d.adrelid = c.oid) AS write_code
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'v', 'm', 'f', 'p', 'c')`;

const oids = (value: unknown): number[] =>
  value === null || value === undefined || value === '' ? [] : String(value).split(',').map(Number);
const str = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));
const flag = (value: unknown): boolean => value === true || value === 't';

/** The catalog as six JSON texts: one string per query crosses to the worker thread, where
 * the ~5,000 row objects are made (parseCatalogRows), not on the event loop. */
export type CatalogText = Record<keyof CatalogRows, string>;

const QUERIES: Record<keyof CatalogRows, string> = {
  functions: FUNCTIONS,
  operators: OPERATORS,
  types: TYPES,
  casts: CASTS,
  families: FAMILIES,
  relations: RELATIONS,
};

export async function readCatalogText(query: CatalogQuery): Promise<CatalogText> {
  const result = {} as CatalogText;
  for (const [key, sql] of Object.entries(QUERIES) as [keyof CatalogRows, string][]) {
    const answer = await query(`SELECT coalesce(json_agg(q), '[]')::text AS rows FROM (${sql}) q`);
    result[key] = String(answer.rows[0]?.rows ?? '[]');
  }
  return result;
}

/** Where the rows are used in-thread (tests, benches). */
export async function readCatalogRows(query: CatalogQuery): Promise<CatalogRows> {
  return parseCatalogRows(await readCatalogText(query));
}

type Row = Record<string, unknown>;

export function parseCatalogRows(text: CatalogText): CatalogRows {
  const parse = (json: string) => JSON.parse(json) as Row[];
  const [functions, operators, types, casts, families, relations] = [
    parse(text.functions),
    parse(text.operators),
    parse(text.types),
    parse(text.casts),
    parse(text.families),
    parse(text.relations),
  ];
  return {
    functions: functions.map((r) => ({
      oid: Number(r.oid),
      schema: String(r.schema),
      name: String(r.name),
      volatility: String(r.volatility),
      requiredArgs: Number(r.required_args),
      args: Number(r.args),
      extension: str(r.extension),
      user: flag(r.user_defined),
      securityDefiner: flag(r.security_definer),
      unsafeConfig: flag(r.unsafe_config),
      language: String(r.language),
      internalSymbol: str(r.internal_symbol),
      sqlBody: str(r.sql_body),
      plpgsqlDefinition: str(r.plpgsql_definition),
      defaults: str(r.defaults),
      support: oids(r.support),
      argTypes: oids(r.arg_types),
      resultTypes: oids(r.result_types),
    })),
    operators: operators.map((r) => ({
      oid: Number(r.oid),
      schema: String(r.schema),
      name: String(r.name),
      left: Number(r.left),
      right: Number(r.right),
      result: Number(r.result),
      code: Number(r.code),
      restrict: Number(r.restrict),
      join: Number(r.join),
      commutator: Number(r.commutator),
      negator: Number(r.negator),
    })),
    types: types.map((r) => ({
      oid: Number(r.oid),
      schema: String(r.schema),
      name: String(r.name),
      builtin: flag(r.builtin),
      kind: String(r.kind),
      element: Number(r.element),
      base: Number(r.base),
      relation: Number(r.relation),
      functions: oids(r.functions),
      rangeSubtype: Number(r.range_subtype),
      rangeFunctions: oids(r.range_functions),
      rangeFamily: Number(r.range_family),
      multirangeOf: Number(r.multirange_of),
      domainChecks: str(r.domain_checks),
      domainDefault: str(r.domain_default),
    })),
    casts: casts.map((r) => ({ source: Number(r.source), target: Number(r.target), func: Number(r.func), context: String(r.context) })),
    families: families.map((r) => ({ family: Number(r.family), types: oids(r.types), operators: oids(r.operators), procs: oids(r.procs) })),
    relations: relations.map((r) => ({
      oid: Number(r.oid),
      schema: String(r.schema),
      name: String(r.name),
      rowType: Number(r.row_type),
      columnTypes: oids(r.column_types),
      children: oids(r.children),
      indexFamilies: oids(r.index_families),
      unsafeForeign: flag(r.unsafe_foreign),
      hasRules: flag(r.has_rules),
      viewCode: str(r.view_code),
      policyCode: str(r.policy_code),
      planCode: str(r.plan_code),
      writeCode: str(r.write_code),
    })),
  };
}
