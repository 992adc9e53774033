// The PostgreSQL allowlist, decided from the connection's own catalog. Pure: the rows come
// from src/engines/postgres-catalog.ts; this file decides what they mean, so the rule can be
// tested without a server and read in one place.
//
// A name may run in a read when it is known to be free of side effects:
// - a function: every overload of the name (in the schema named, or in every schema when
//   unqualified — search_path is the caller's to choose) is IMMUTABLE or STABLE, or on the
//   vetted volatile list; never a function that runs SQL text; never a distrusted extension's;
// - `(expr).name` / `alias.name`: a field selection unless `name` is a function callable with
//   one argument, which PostgreSQL calls as name(expr): then the function rule applies;
// - an operator: every operator of the name runs an allowed function;
// - a cast target: its input function, the casts to it and a domain's checks are allowed;
// - a relation: a view (transitively) and a table's row-level security policies call only
//   allowed functions and operators.
// What is not in the catalog is not known to be safe: an unknown function is refused.
import {
  DISTRUSTED_EXTENSIONS,
  HARMLESS_VOLATILE_CORE,
  HARMLESS_VOLATILE_EXTENSION,
  STABLE_WITH_EFFECTS,
  runsSqlText,
} from './allowlist-postgres.ts';
import type { PostgresReferences } from './verdict.ts';

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
  /** The user function's language. */
  language: string;
  /** A user function in LANGUAGE sql: its body, checked like a read. */
  sqlBody: string | null;
  /** A user function in LANGUAGE plpgsql: its definition (pg_get_functiondef), every embedded
   * expression and query checked like a read. */
  plpgsqlDefinition: string | null;
  /** A user function's default argument expressions, `a, b`: they run in the caller. */
  defaults: string | null;
  /** A user aggregate's support functions (transition, final, combine, …). */
  support: number[];
  /** `schema.name` of its argument and result types outside pg_catalog: a value passing through
   * one of an unsafe type (a domain's check, a type's output function) runs code. */
  userTypes: string[];
}

export interface CatalogOperatorRow {
  oid: number;
  schema: string;
  name: string;
  functionOid: number;
  /** A support function of one of its operator families is volatile (sorting by it runs it). */
  familyUnsafe: boolean;
}

/** SQL text that runs when a relation is read: a view's query, a table's row security
 * policy (as `SELECT <expression>`). Read from the definitions, not from pg_depend: PostgreSQL
 * records no dependency on built-in (pinned) functions, so a view calling pg_read_file()
 * would look clean there. */
export interface CatalogRelationCode {
  schema: string;
  name: string;
  sql: string;
}

/** The names a SELECT's text refers to; undefined when it is not one plain read. */
export type CollectReferences = (sql: string) => PostgresReferences | undefined;

export interface Collectors {
  /** SQL text: views, policies, defaults, LANGUAGE sql bodies. */
  sql: CollectReferences;
  /** A PL/pgSQL function's definition. */
  plpgsql: CollectReferences;
}

/** Languages whose code dbq reads; a user function in any other (C, PL/Python, PL/Perl, …) is
 * not known to be free of side effects, whatever its label. */
const READABLE_LANGUAGES = new Set(['sql', 'plpgsql']);

export interface CatalogRows {
  functions: CatalogFunctionRow[];
  operators: CatalogOperatorRow[];
  /** Types whose values run a volatile function ('input': input or output function, implicit
   * cast from it, operator class member, arrays and domains of those), or that a cast with a
   * volatile function leads into ('cast'). */
  unsafeTypes: { schema: string; name: string; how: 'input' | 'cast' }[];
  /** Domains: their CHECK expressions as `SELECT a, b` (null without checks) and base type. */
  domainChecks: { schema: string; name: string; base: string; sql: string | null }[];
  relationCode: CatalogRelationCode[];
  /** Relations whose reading runs code by their nature: a column or row type of an unsafe value
   * type, a foreign table of an unvetted wrapper, a parent of any of those. */
  unsafeRelations: { schema: string; name: string }[];
  /** User composite types and the `schema.name` of each field's type. */
  compositeFields: { schema: string; name: string; fieldType: string }[];
}

interface FunctionName {
  safe: boolean;
  /** Some overload can be called with one argument: `(x).name` may be a call. */
  oneArg: boolean;
}

export interface PostgresCatalog {
  functions: ReadonlyMap<string, ReadonlyMap<string, FunctionName>>;
  operators: ReadonlyMap<string, ReadonlyMap<string, boolean>>;
  /** `name` and `schema.name` of types whose input function or domain checks are refused. */
  unsafeInputTypes: ReadonlySet<string>;
  /** … and of types a refused cast function leads into. */
  unsafeCastTargets: ReadonlySet<string>;
  /** `name` and `schema.name` of refused relations. */
  unsafeRelations: ReadonlySet<string>;
}

export interface Refusal {
  kind: 'function' | 'operator' | 'type' | 'relation';
  name: string;
  why: string;
}

/** What the row alone says; user functions are checked further in buildPostgresCatalog. */
export function isSafeFunction(row: CatalogFunctionRow): boolean {
  if (runsSqlText(row.name)) return false;
  // Runs with its owner's rights: a reader role calling it would act as the owner, so the
  // database layer cannot hold, and its label is the only promise. Not in a read.
  if (row.user && row.securityDefiner) return false;
  if (row.user && row.support.length === 0 && !READABLE_LANGUAGES.has(row.language)) return false;
  if (row.extension !== null && DISTRUSTED_EXTENSIONS.has(row.extension)) return false;
  if (row.volatility === 'i' || row.volatility === 's') {
    return !(row.schema === 'pg_catalog' && STABLE_WITH_EFFECTS.has(row.name));
  }
  if (row.schema === 'pg_catalog' && row.extension === null) return HARMLESS_VOLATILE_CORE.has(row.name);
  return row.extension !== null && (HARMLESS_VOLATILE_EXTENSION.get(row.extension)?.has(row.name) ?? false);
}

export function buildPostgresCatalog(rows: CatalogRows, collect: Collectors): PostgresCatalog {
  const safe = new Set(rows.functions.filter(isSafeFunction).map((row) => row.oid));
  // A user function's label is only its author's promise (a PL/pgSQL function marked STABLE
  // may still call brin_summarize_new_values), so its code is read too: a LANGUAGE sql or
  // plpgsql body, default argument expressions, an aggregate's support functions. Parsed once,
  // judged until nothing changes (functions calling functions, functions reading views).
  const derived = rows.functions
    .filter((row) => safe.has(row.oid) && (row.user || row.userTypes.length > 0))
    .map((row) => ({
      row,
      refs: [
        ...(row.defaults === null ? [] : [collect.sql(`SELECT ${row.defaults}`)]),
        ...(row.language === 'sql' && row.support.length === 0 ? [collect.sql(row.sqlBody ?? '')] : []),
        ...(row.language === 'plpgsql' ? [collect.plpgsql(row.plpgsqlDefinition ?? '')] : []),
      ],
    }));
  // View and policy code was deparsed with an empty search_path: an unqualified name there is
  // pg_catalog's, whatever other schemas hold.
  const relationCode = rows.relationCode.map((item) => ({
    names: [item.name, `${item.schema}.${item.name}`],
    refs: qualifyCatalogNames(collect.sql(item.sql)),
  }));
  const domains = rows.domainChecks.map((domain) => ({
    ...domain,
    refs: domain.sql === null ? null : qualifyCatalogNames(collect.sql(domain.sql)),
  }));
  for (;;) {
    const catalog = namesOf(rows, safe);
    markUnsafeTypes(catalog, domains, rows.compositeFields);
    markUnsafeRelations(catalog, relationCode);
    let changed = false;
    for (const { row, refs } of derived) {
      if (!safe.has(row.oid)) continue;
      const ok =
        row.support.every((oid) => safe.has(oid)) &&
        !row.userTypes.some((type) => catalog.unsafeInputTypes.has(type)) &&
        refs.every((r) => r !== undefined && findRefusal(catalog, r) === undefined);
      if (!ok) {
        safe.delete(row.oid);
        changed = true;
      }
    }
    if (!changed) return catalog;
  }
}

function namesOf(rows: CatalogRows, safeOids: ReadonlySet<number>): PostgresCatalog & { unsafeRelations: Set<string>; unsafeInputTypes: Set<string> } {
  const functions = new Map<string, Map<string, FunctionName>>();
  for (const row of rows.functions) {
    const bySchema = functions.get(row.name) ?? new Map<string, FunctionName>();
    const entry = bySchema.get(row.schema) ?? { safe: true, oneArg: false };
    entry.safe &&= safeOids.has(row.oid);
    entry.oneArg ||= row.args >= 1 && row.requiredArgs <= 1;
    bySchema.set(row.schema, entry);
    functions.set(row.name, bySchema);
  }
  const operators = new Map<string, Map<string, boolean>>();
  for (const row of rows.operators) {
    const bySchema = operators.get(row.name) ?? new Map<string, boolean>();
    bySchema.set(row.schema, (bySchema.get(row.schema) ?? true) && safeOids.has(row.functionOid) && !row.familyUnsafe);
    operators.set(row.name, bySchema);
  }
  const unsafeInputTypes = new Set<string>();
  const unsafeCastTargets = new Set<string>();
  for (const type of rows.unsafeTypes) {
    const into = type.how === 'input' ? unsafeInputTypes : unsafeCastTargets;
    into.add(type.name);
    into.add(`${type.schema}.${type.name}`);
  }
  const unsafeRelations = new Set<string>();
  for (const relation of rows.unsafeRelations) {
    unsafeRelations.add(relation.name);
    unsafeRelations.add(`${relation.schema}.${relation.name}`);
  }
  return { functions, operators, unsafeInputTypes, unsafeCastTargets, unsafeRelations };
}

/** A domain whose checks refer to a refused name, or whose base domain is unsafe. */
/** A domain whose checks refer to a refused name or whose base domain is unsafe, and a
 * composite with a field of an unsafe type (a value cast to it runs its fields' checks). */
function markUnsafeTypes(
  catalog: PostgresCatalog & { unsafeInputTypes: Set<string> },
  domains: readonly { schema: string; name: string; base: string; refs: PostgresReferences | undefined | null }[],
  composites: readonly { schema: string; name: string; fieldType: string }[],
): void {
  const mark = (schema: string, name: string) => {
    catalog.unsafeInputTypes.add(`${schema}.${name}`);
    catalog.unsafeInputTypes.add(name);
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (const domain of domains) {
      if (catalog.unsafeInputTypes.has(`${domain.schema}.${domain.name}`)) continue;
      const refused = domain.refs === undefined || (domain.refs !== null && findRefusal(catalog, { ...domain.refs, relations: [] }) !== undefined);
      if (refused || catalog.unsafeInputTypes.has(domain.base)) {
        mark(domain.schema, domain.name);
        changed = true;
      }
    }
    for (const composite of composites) {
      if (catalog.unsafeInputTypes.has(`${composite.schema}.${composite.name}`)) continue;
      if (catalog.unsafeInputTypes.has(composite.fieldType)) {
        mark(composite.schema, composite.name);
        changed = true;
      }
    }
  }
}

function qualifyCatalogNames(refs: PostgresReferences | undefined): PostgresReferences | undefined {
  if (refs === undefined) return undefined;
  const qualify = (names: readonly string[]) => names.map((name) => (splitQualified(name)[0] === undefined ? `pg_catalog.${name}` : name));
  return { ...refs, functions: qualify(refs.functions), operators: qualify(refs.operators) };
}

/** A relation is unsafe when the code that runs on reading it (a view's query, a policy)
 * refers to a refused name, or reads an unsafe relation (views over views): a fixpoint. */
function markUnsafeRelations(
  catalog: PostgresCatalog & { unsafeRelations: Set<string> },
  code: readonly { names: string[]; refs: PostgresReferences | undefined }[],
): void {
  const pending: { names: string[]; relations: readonly string[] }[] = [];
  const mark = (names: string[]) => {
    for (const name of names) catalog.unsafeRelations.add(name);
  };
  for (const { names, refs } of code) {
    if (refs === undefined || findRefusal(catalog, { ...refs, relations: [] }) !== undefined) mark(names);
    else if (refs.relations.length > 0) pending.push({ names, relations: refs.relations });
  }
  for (let changed = true; changed; ) {
    changed = false;
    for (let i = pending.length - 1; i >= 0; i--) {
      if (pending[i].relations.some((name) => catalog.unsafeRelations.has(name))) {
        mark(pending[i].names);
        pending.splice(i, 1);
        changed = true;
      }
    }
  }
}

/** `a.b` → ['a', 'b']; `b` → [undefined, 'b']. Operator names may hold dots only when qualified. */
function splitQualified(name: string): [string | undefined, string] {
  const dot = name.lastIndexOf('.');
  return dot <= 0 ? [undefined, name] : [name.slice(0, dot), name.slice(dot + 1)];
}

function functionRefusal(catalog: PostgresCatalog, written: string): Refusal | undefined {
  const [schema, name] = splitQualified(written);
  if (runsSqlText(name)) return { kind: 'function', name: written, why: 'runs SQL text out of the guard\'s sight' };
  const bySchema = catalog.functions.get(name);
  const entries = schema === undefined ? [...(bySchema?.values() ?? [])] : [bySchema?.get(schema)].filter((e) => e !== undefined);
  if (entries.length === 0) return { kind: 'function', name: written, why: 'is not a known function of this database' };
  if (entries.some((entry) => !entry.safe)) return { kind: 'function', name: written, why: 'may have side effects (not IMMUTABLE or STABLE)' };
  return undefined;
}

function attributeRefusal(catalog: PostgresCatalog, name: string): Refusal | undefined {
  if (runsSqlText(name)) return { kind: 'function', name, why: 'runs SQL text out of the guard\'s sight (attribute notation calls it)' };
  const bySchema = catalog.functions.get(name);
  if (bySchema === undefined) return undefined;
  for (const entry of bySchema.values()) {
    if (entry.oneArg && !entry.safe) return { kind: 'function', name, why: 'may have side effects (attribute notation calls it)' };
  }
  return undefined;
}

function operatorRefusal(catalog: PostgresCatalog, written: string): Refusal | undefined {
  const [schema, name] = splitQualified(written);
  const bySchema = catalog.operators.get(name);
  const entries = schema === undefined ? [...(bySchema?.values() ?? [])] : [bySchema?.get(schema)].filter((e) => e !== undefined);
  if (entries.length === 0) return { kind: 'operator', name: written, why: 'is not a known operator of this database' };
  if (entries.some((safe) => !safe)) return { kind: 'operator', name: written, why: 'runs a function that may have side effects' };
  return undefined;
}

/** The first name in a read that the catalog does not show to be free of side effects. */
export function findRefusal(catalog: PostgresCatalog, refs: PostgresReferences): Refusal | undefined {
  for (const name of refs.functions) {
    const refusal = functionRefusal(catalog, name);
    if (refusal) return refusal;
  }
  for (const name of refs.attributes) {
    const refusal = attributeRefusal(catalog, name);
    if (refusal) return refusal;
  }
  for (const name of refs.operators) {
    const refusal = operatorRefusal(catalog, name);
    if (refusal) return refusal;
  }
  for (const name of [...refs.types, ...refs.literalTypes]) {
    if (catalog.unsafeInputTypes.has(name)) return { kind: 'type', name, why: 'runs a function that may have side effects when a value is cast to it' };
  }
  for (const name of refs.types) {
    if (catalog.unsafeCastTargets.has(name)) return { kind: 'type', name, why: 'is the target of a cast whose function may have side effects' };
  }
  for (const name of refs.relations) {
    if (catalog.unsafeRelations.has(name)) {
      return { kind: 'relation', name, why: 'is a view or has row security policies calling a function that may have side effects' };
    }
  }
  return undefined;
}
