// The PostgreSQL allowlist, judged from the connection's own catalog. Pure: the rows (and their
// types) are the engine's, src/engines/postgres/postgres-catalog-rows.ts; this file decides what
// they mean, and read-policy-check.ts applies the result to one statement, so the rule can be
// tested without a server.
//
// User code is judged by what it does, not by its label: a user function (LANGUAGE sql or
// plpgsql) is safe when its body, default arguments and support functions only read; one in
// any other language, SECURITY DEFINER, or with a setting other than search_path is not.
// Built-in and extension functions are judged by their volatility and the vetted lists in
// allowlist-postgres.ts. From the functions follow:
// - operators: their function, selectivity estimators, and those of their commutator and
//   negator (the planner swaps either in), judged as one;
// - types: input/output/receive/send/typmod/analyze/subscript functions, casts from the type,
//   the operator families it belongs to (sorting, grouping, hashing, IN, min/max), a range's
//   canonical and subtype_diff functions and subtype opclass, a domain's checks, and what its
//   element, base, fields or subtype bring;
// - relations: a view's query, row security policies, and the expressions the planner folds
//   whenever it plans a read of it (index expressions and predicates, extended statistics,
//   CHECK constraints, partition keys); for a plan-only write, column defaults, generated
//   columns, domain defaults and rewrite rules.
// Everything is judged until nothing changes (functions reading views calling functions).
// What is not in the catalog is not known to be safe.
//
// The passes live apart and meet only here: read-policy-shape.ts (what does not depend on which
// functions are safe: type edges, what relations bring, the parsed code), read-policy-assemble.ts
// (one round: the catalog given the functions known safe so far); this file runs the rounds to
// a fixed point, compacts the result and answers whether a read may touch its session. The row
// types are the engine's (postgres-catalog-rows.ts); the per-statement check is
// read-policy-check.ts.
import {
  DISTRUSTED_EXTENSIONS,
  HARMLESS_VOLATILE_CORE,
  HARMLESS_VOLATILE_EXTENSION,
  STABLE_WITH_EFFECTS,
  runsSqlText,
} from './allowlist-postgres.ts';
import { assemble } from './read-policy-assemble.ts';
import { findRefusal, splitQualified } from './read-policy-check.ts';
import { parseCode, push, shapeOf, type Parsed } from './read-policy-shape.ts';
import type { PostgresReferences } from './verdict.ts';
import type { CatalogFunctionRow, CatalogRows } from '../engines/postgres/postgres-catalog-rows.ts';

export { findRefusal } from './read-policy-check.ts';
// The rows are the engine's (what its catalog queries return); the policy judges them.
export type {
  CatalogCastRow,
  CatalogFamilyRow,
  CatalogFunctionRow,
  CatalogOperatorRow,
  CatalogRelationRow,
  CatalogRows,
  CatalogTypeRow,
} from '../engines/postgres/postgres-catalog-rows.ts';

/** The names a SELECT's text refers to; undefined when it is not one plain read. */
export type CollectReferences = (sql: string) => PostgresReferences | undefined;

export interface Collectors {
  /** SQL text: views, policies, defaults, LANGUAGE sql bodies. */
  sql: CollectReferences;
  /** A PL/pgSQL function's definition. */
  plpgsql: CollectReferences;
}

/** One function or operator of a name, as far as a read is concerned. */
export interface Overload {
  schema: string;
  /** Not known to be free of side effects. */
  unsafe: boolean;
  /** Unsafe, and called by the planner itself (IMMUTABLE/STABLE, an estimator, support). */
  foldUnsafe: boolean;
  /** Callable with one argument: `(x).name` may call it. */
  oneArg: boolean;
  /** Its argument types when all are user types (pickable only when one is in play); null when
   * an argument is built-in or pseudo, or it takes none (always pickable). */
  gate: number[] | null;
  /** User types it takes or returns: in play once it can be picked. */
  produces: number[];
}

export interface NameEntry {
  /** The schemas holding an overload of the name. */
  schemas: readonly string[];
  /** Every overload safe, none gated, none producing a user type: nothing to compute per
   * statement (its overloads are then not kept). */
  plain: boolean;
  overloads: Overload[];
}

export interface RelationEntry {
  schema: string;
  /** Why reading it is not a read; undefined when it is. */
  unsafe: string | undefined;
  /** Why planning a write into it is not a read. */
  writeUnsafe: string | undefined;
  /** User types in play when it is read (closed). */
  values: number[];
}

/** The judged catalog: plain data (it crosses from the worker thread that builds it). */
export interface PostgresCatalog {
  functions: ReadonlyMap<string, NameEntry>;
  operators: ReadonlyMap<string, NameEntry>;
  /** `name` and `schema.name` → user type oids. */
  types: ReadonlyMap<string, number[]>;
  /** User type → user types its values bring (element, base, fields, subtype, array of it). */
  valueEdges: ReadonlyMap<number, number[]>;
  /** User type → user types it coerces into unasked (domains over it, implicit casts). */
  coerceEdges: ReadonlyMap<number, number[]>;
  /** User types a built-in value coerces into unasked. */
  alwaysCoercible: ReadonlySet<number>;
  /** Type oid → `schema.name`, for types whose values run unsafe code. */
  unsafeTypes: ReadonlyMap<number, string>;
  /** Those unsafe only through what they are made of (a table's row type with an unsafe
   * column): a refusal names the part instead. */
  unsafeThroughParts: ReadonlySet<number>;
  /** `name` and `schema.name` of types a cast with an unsafe function leads into. */
  unsafeCastTargets: ReadonlySet<string>;
  /** `name` and `schema.name` → relations. */
  relations: ReadonlyMap<string, RelationEntry[]>;
  /** A built-in type whose values run unsafe code: every read is refused. */
  builtinUnsafe?: string;
  /** Some user code (a function body or default, a view, policy, check or default expression,
   * or an operator, cast, aggregate, type or operator family built on it) reaches random() or
   * random_normal(): then any read may observe the session's random() sequence. */
  randomReachable?: boolean;
}

export interface Refusal {
  kind: 'function' | 'operator' | 'type' | 'relation';
  name: string;
  why: string;
  /** The name is not in the catalog at all (it may be newer than the cached catalog). */
  missing?: boolean;
}

/** Languages whose code dbq reads; a user function in any other (C, PL/Python, PL/Perl, …) is
 * not known to be free of side effects, whatever its label. */
const READABLE_LANGUAGES = new Set(['sql', 'plpgsql']);

/** Built-in C functions PostgreSQL itself attaches to user types (a range's constructors). */
const VETTED_INTERNAL_SYMBOLS = new Set([
  'range_constructor2',
  'range_constructor3',
  'multirange_constructor0',
  'multirange_constructor1',
  'multirange_constructor2',
]);

/** What the row alone says; user code is judged further in buildPostgresCatalog. */
export function isSafeFunction(row: CatalogFunctionRow): boolean {
  if (runsSqlText(row.name)) return false;
  if (row.user) {
    // Runs with its owner's rights: the reader role cannot hold it, and its label is the only
    // promise. A SET clause changes the session while it runs (a role, a setting).
    if (row.securityDefiner || row.unsafeConfig) return false;
    if (row.language === 'internal') return row.internalSymbol !== null && VETTED_INTERNAL_SYMBOLS.has(row.internalSymbol);
    // An aggregate is judged by its support functions; any other code only when dbq can read it.
    return row.support.length > 0 || READABLE_LANGUAGES.has(row.language);
  }
  if (row.extension !== null && DISTRUSTED_EXTENSIONS.has(row.extension)) return false;
  if (row.volatility === 'i' || row.volatility === 's') {
    return !(row.schema === 'pg_catalog' && STABLE_WITH_EFFECTS.has(row.name));
  }
  if (row.schema === 'pg_catalog' && row.extension === null) return HARMLESS_VOLATILE_CORE.has(row.name);
  return row.extension !== null && (HARMLESS_VOLATILE_EXTENSION.get(row.extension)?.has(row.name) ?? false);
}

/** The core functions that read the session's random() sequence, the state setseed() sets. */
export const SESSION_RANDOM_FUNCTIONS: ReadonlySet<string> = new Set(['random', 'random_normal']);

function namesSessionRandom(refs: PostgresReferences | undefined): boolean {
  if (refs === undefined) return false;
  const named = (name: string) => SESSION_RANDOM_FUNCTIONS.has(splitQualified(name)[1]);
  return refs.functions.some(named) || refs.attributes.some(named);
}

/** Whether any user code can reach random()/random_normal(): by name in code dbq read, or by
 * oid where a user object is built on one (an operator's function, a cast, an aggregate's
 * support, a type's or range's functions, an operator family's procedures). */
function userCodeReachesRandom(rows: CatalogRows, parsed: Parsed): boolean {
  const random = new Set(rows.functions.filter((f) => f.schema === 'pg_catalog' && SESSION_RANDOM_FUNCTIONS.has(f.name)).map((f) => f.oid));
  if (rows.functions.some((f) => f.user && f.support.some((oid) => random.has(oid)))) return true;
  if (rows.operators.some((o) => random.has(o.code))) return true;
  if (rows.casts.some((c) => random.has(c.func))) return true;
  if (rows.types.some((t) => t.functions.some((oid) => random.has(oid)) || t.rangeFunctions.some((oid) => random.has(oid)))) return true;
  if (rows.families.some((f) => f.procs.some((oid) => random.has(oid)))) return true;
  for (const bodies of parsed.functions.values()) if (bodies.some(namesSessionRandom)) return true;
  for (const refs of [...parsed.domainChecks.values(), ...parsed.domainDefaults.values()]) if (namesSessionRandom(refs)) return true;
  for (const code of parsed.relations.values()) {
    if ([code.view, code.policy, code.plan, code.write].some(namesSessionRandom)) return true;
  }
  return false;
}

/** Whether a read that passed findRefusal() can leave state in its session that outlives its
 * ROLLBACK. The guard refuses advisory locks, setseed() and every other volatile function not
 * known to only read; what remains is the random() sequence, which a read observes by calling
 * random()/random_normal() (or reaching user code that does) and which would let it predict
 * the next request's values on the same pooled backend. */
export function mayTouchSession(catalog: PostgresCatalog, refs: PostgresReferences): boolean {
  return catalog.randomReachable === true || namesSessionRandom(refs);
}

export function buildPostgresCatalog(rows: CatalogRows, collect: Collectors): PostgresCatalog {
  const parsed = parseCode(rows, collect);
  const randomReachable = userCodeReachesRandom(rows, parsed);
  const viewRelations = new Map<number, readonly string[]>();
  for (const [oid, entry] of parsed.relations)
    viewRelations.set(oid, [...(entry.view?.relations ?? []), ...(entry.policy?.relations ?? [])]);
  const shape = shapeOf(rows, viewRelations);
  const safe = new Set(rows.functions.filter(isSafeFunction).map((row) => row.oid));
  const judged = rows.functions.filter((row) => row.user && safe.has(row.oid));
  for (;;) {
    const catalog = assemble(rows, shape, parsed, safe);
    let changed = false;
    for (const row of judged) {
      if (!safe.has(row.oid)) continue;
      const params = row.argTypes.filter((oid) => shape.userTypes.has(oid));
      const ok =
        row.support.every((oid) => safe.has(oid)) &&
        (parsed.functions.get(row.oid) ?? []).every(
          (refs) => refs !== undefined && findRefusal(catalog, refs, 'run', params) === undefined,
        );
      if (!ok) {
        safe.delete(row.oid);
        changed = true;
      }
    }
    if (!changed) return { ...compact(catalog), randomReachable };
  }
}

/** The judged catalog without what no statement's decision can depend on: overloads of plain
 * names, and user types (with the relations and names that bring only them) that are neither
 * unsafe nor an overload's gate nor lead to one. A database of 5,000 plain tables then crosses
 * from the worker and is checked per statement as cheaply as an empty one. */
function compact(catalog: PostgresCatalog): PostgresCatalog {
  const schemaLists = new Map<string, readonly string[]>();
  const relevant = new Set<number>(catalog.unsafeTypes.keys());
  const squeeze = (entries: ReadonlyMap<string, NameEntry>) => {
    const out = new Map<string, NameEntry>();
    for (const [name, entry] of entries) {
      const schemas = [...new Set(entry.overloads.map((o) => o.schema))].sort();
      const key = schemas.join(',');
      if (!schemaLists.has(key)) schemaLists.set(key, schemas);
      if (!entry.plain) for (const o of entry.overloads) for (const oid of o.gate ?? []) relevant.add(oid);
      out.set(name, { schemas: schemaLists.get(key)!, plain: entry.plain, overloads: entry.plain ? NO_OVERLOADS : entry.overloads });
    }
    return out;
  };
  const functions = squeeze(catalog.functions);
  const operators = squeeze(catalog.operators);
  // A type matters when a value of it can lead (by what it brings or coerces into) to one that
  // matters: walk the edges backwards from those.
  const reverse = new Map<number, number[]>();
  for (const edges of [catalog.valueEdges, catalog.coerceEdges]) {
    for (const [from, targets] of edges) for (const to of targets) push(reverse, to, from);
  }
  for (const stack = [...relevant]; stack.length > 0;) {
    for (const from of reverse.get(stack.pop()!) ?? []) {
      if (!relevant.has(from)) {
        relevant.add(from);
        stack.push(from);
      }
    }
  }
  const keep = (oids: readonly number[]) => oids.filter((oid) => relevant.has(oid));
  const edges = (map: ReadonlyMap<number, number[]>) => {
    const out = new Map<number, number[]>();
    for (const [from, targets] of map) if (relevant.has(from) && keep(targets).length > 0) out.set(from, keep(targets));
    return out;
  };
  const types = new Map<string, number[]>();
  for (const [name, oids] of catalog.types) if (keep(oids).length > 0) types.set(name, keep(oids));
  const relations = new Map<string, RelationEntry[]>();
  for (const [name, entries] of catalog.relations) {
    const kept = entries
      .map((entry) => ({ ...entry, values: keep(entry.values) }))
      .filter((entry) => entry.unsafe !== undefined || entry.writeUnsafe !== undefined || entry.values.length > 0);
    if (kept.length > 0) relations.set(name, kept);
  }
  return {
    ...catalog,
    functions,
    operators,
    types,
    valueEdges: edges(catalog.valueEdges),
    coerceEdges: edges(catalog.coerceEdges),
    alwaysCoercible: new Set(keep([...catalog.alwaysCoercible])),
    relations,
  };
}

const NO_OVERLOADS: Overload[] = [];
