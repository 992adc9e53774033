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
// Past 400 lines on purpose: the passes (shape, assemble, unsafe types, relations, compact)
// are one fixed-point computation over intermediate maps that no other module should see;
// the row types are the engine's (postgres-catalog-rows.ts) and the per-statement check is
// read-policy-check.ts.
import {
  DISTRUSTED_EXTENSIONS,
  HARMLESS_VOLATILE_CORE,
  HARMLESS_VOLATILE_EXTENSION,
  STABLE_WITH_EFFECTS,
  runsSqlText,
} from './allowlist-postgres.ts';
import { findRefusal } from './read-policy-check.ts';
import type { PostgresReferences } from './verdict.ts';
import type { CatalogFunctionRow, CatalogRows, CatalogTypeRow } from '../engines/postgres/postgres-catalog-rows.ts';

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

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else if (!list.includes(value)) list.push(value);
}

/** The parts of the catalog that do not depend on which functions are safe. */
interface Shape {
  types: Map<number, CatalogTypeRow>;
  userTypes: Set<number>;
  typeNames: Map<string, number[]>;
  valueEdges: Map<number, number[]>;
  coerceEdges: Map<number, number[]>;
  alwaysCoercible: Set<number>;
  relationValues: Map<number, number[]>;
  relationNames: Map<number, string[]>;
}

function shapeOf(rows: CatalogRows, viewRelations: Map<number, readonly string[]>): Shape {
  const types = new Map(rows.types.map((t) => [t.oid, t]));
  const userTypes = new Set(rows.types.filter((t) => !t.builtin).map((t) => t.oid));
  const typeNames = new Map<string, number[]>();
  const valueEdges = new Map<number, number[]>();
  const coerceEdges = new Map<number, number[]>();
  const alwaysCoercible = new Set<number>();
  const isUser = (oid: number) => userTypes.has(oid);
  const columnsOf = new Map(rows.relations.map((r) => [r.oid, r.columnTypes]));
  for (const t of rows.types) {
    if (!isUser(t.oid)) continue;
    push(typeNames, t.name, t.oid);
    push(typeNames, `${t.schema}.${t.name}`, t.oid);
    const brings = [t.element, t.base, t.rangeSubtype, t.multirangeOf, ...(t.relation !== 0 ? (columnsOf.get(t.relation) ?? []) : [])];
    for (const oid of brings) if (isUser(oid)) push(valueEdges, t.oid, oid);
    // ARRAY[x], array_agg(x): an array of a type in play is in play; so is a range's multirange.
    if (isUser(t.element)) push(valueEdges, t.element, t.oid);
    if (isUser(t.multirangeOf)) push(valueEdges, t.multirangeOf, t.oid);
    // A base value passes into a domain over it wherever the domain is wanted.
    if (t.kind === 'd') {
      if (isUser(t.base)) push(coerceEdges, t.base, t.oid);
      else alwaysCoercible.add(t.oid);
    }
  }
  for (const cast of rows.casts) {
    if (cast.context === 'e' || !isUser(cast.target)) continue;
    if (isUser(cast.source)) push(coerceEdges, cast.source, cast.target);
    else alwaysCoercible.add(cast.target);
  }
  for (const stack = [...alwaysCoercible]; stack.length > 0;) {
    for (const next of coerceEdges.get(stack.pop()!) ?? []) {
      if (!alwaysCoercible.has(next)) {
        alwaysCoercible.add(next);
        stack.push(next);
      }
    }
  }
  // A relation brings its columns' and row type's values, its children's, and those of what
  // its view and policies read (flattened into the statement, sorted and hashed with it).
  const relationNames = new Map<number, string[]>();
  const byName = new Map<string, number[]>();
  for (const r of rows.relations) {
    relationNames.set(r.oid, [r.name, `${r.schema}.${r.name}`]);
    push(byName, r.name, r.oid);
    push(byName, `${r.schema}.${r.name}`, r.oid);
  }
  const direct = new Map<number, number[]>();
  for (const r of rows.relations) {
    const reads = [...r.children, ...(viewRelations.get(r.oid) ?? []).flatMap((name) => byName.get(name) ?? [])];
    direct.set(r.oid, reads);
  }
  const relationValues = new Map<number, number[]>();
  const closeValues = (seeds: number[]): number[] => {
    const seen = new Set<number>();
    for (const stack = seeds.filter(isUser); stack.length > 0;) {
      const oid = stack.pop()!;
      if (seen.has(oid)) continue;
      seen.add(oid);
      stack.push(...(valueEdges.get(oid) ?? []));
    }
    return [...seen];
  };
  for (const r of rows.relations) {
    const seeds: number[] = [];
    const seenRelations = new Set<number>();
    for (const stack = [r.oid]; stack.length > 0;) {
      const oid = stack.pop()!;
      if (seenRelations.has(oid)) continue;
      seenRelations.add(oid);
      seeds.push(...(columnsOf.get(oid) ?? []));
      stack.push(...(direct.get(oid) ?? []));
    }
    seeds.push(r.rowType);
    relationValues.set(r.oid, closeValues(seeds));
  }
  return { types, userTypes, typeNames, valueEdges, coerceEdges, alwaysCoercible, relationValues, relationNames };
}

interface RelationCode {
  view?: PostgresReferences;
  policy?: PostgresReferences;
  plan?: PostgresReferences;
  write?: PostgresReferences;
  /** Why its code could not be read as reads: reading it, or planning a write into it. */
  unreadable?: string;
  unwritable?: string;
}

interface Parsed {
  /** Per user function: the references of its body and default arguments. */
  functions: Map<number, (PostgresReferences | undefined)[]>;
  domainChecks: Map<number, PostgresReferences | undefined>;
  domainDefaults: Map<number, PostgresReferences | undefined>;
  relations: Map<number, RelationCode>;
}

/** View, policy, index and default text was deparsed with an empty search_path: an unqualified
 * name there is pg_catalog's, whatever other schemas hold. */
function qualifyCatalogNames(refs: PostgresReferences | undefined): PostgresReferences | undefined {
  if (refs === undefined) return undefined;
  const qualify = (names: readonly string[]) => names.map((name) => (name.lastIndexOf('.') <= 0 ? `pg_catalog.${name}` : name));
  return { ...refs, functions: qualify(refs.functions), operators: qualify(refs.operators) };
}

function parseCode(rows: CatalogRows, collect: Collectors): Parsed {
  const functions = new Map<number, (PostgresReferences | undefined)[]>();
  for (const row of rows.functions) {
    if (!row.user) continue;
    functions.set(row.oid, [
      ...(row.defaults === null ? [] : [collect.sql(`SELECT ${row.defaults}`)]),
      ...(row.language === 'sql' && row.support.length === 0 ? [collect.sql(row.sqlBody ?? '')] : []),
      ...(row.language === 'plpgsql' ? [collect.plpgsql(row.plpgsqlDefinition ?? '')] : []),
    ]);
  }
  const domainChecks = new Map<number, PostgresReferences | undefined>();
  const domainDefaults = new Map<number, PostgresReferences | undefined>();
  for (const t of rows.types) {
    if (t.domainChecks !== null) domainChecks.set(t.oid, qualifyCatalogNames(collect.sql(t.domainChecks)));
    if (t.domainDefault !== null) domainDefaults.set(t.oid, qualifyCatalogNames(collect.sql(t.domainDefault)));
  }
  const relations: Parsed['relations'] = new Map();
  for (const r of rows.relations) {
    if (r.viewCode === null && r.policyCode === null && r.planCode === null && r.writeCode === null) continue;
    const entry: RelationCode = {};
    const read = (sql: string | null, what: string, writes = false): PostgresReferences | undefined => {
      if (sql === null) return undefined;
      const refs = qualifyCatalogNames(collect.sql(sql));
      const why = `has ${what} that dbq cannot read as reads`;
      if (refs === undefined && writes) entry.unwritable ??= why;
      else if (refs === undefined) entry.unreadable ??= why;
      return refs;
    };
    entry.view = read(r.viewCode, 'a view query');
    entry.policy = read(r.policyCode, 'row security policies');
    entry.plan = read(r.planCode, 'index, statistics or constraint expressions');
    entry.write = read(r.writeCode, 'column defaults or generated columns', true);
    relations.set(r.oid, entry);
  }
  return { functions, domainChecks, domainDefaults, relations };
}

/** The core functions that read the session's random() sequence, the state setseed() sets. */
export const SESSION_RANDOM_FUNCTIONS: ReadonlySet<string> = new Set(['random', 'random_normal']);

function namesSessionRandom(refs: PostgresReferences | undefined): boolean {
  if (refs === undefined) return false;
  const named = (name: string) => SESSION_RANDOM_FUNCTIONS.has(name.slice(name.lastIndexOf('.') + 1));
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

/** The catalog as it stands with `safe` the functions known to be free of side effects. */
function assemble(rows: CatalogRows, shape: Shape, parsed: Parsed, safe: ReadonlySet<number>): PostgresCatalog {
  const volatility = new Map(rows.functions.map((row) => [row.oid, row.volatility]));
  const userOf = (oids: number[]) => [...new Set(oids.filter((oid) => shape.userTypes.has(oid)))];
  const gateOf = (args: number[]) => (args.length > 0 && args.every((oid) => shape.userTypes.has(oid)) ? [...new Set(args)] : null);

  const functions = new Map<string, NameEntry>();
  const supportUnsafe = (row: CatalogFunctionRow) => row.support.some((oid) => !safe.has(oid));
  for (const row of rows.functions) {
    const unsafe = !safe.has(row.oid);
    addOverload(functions, row.name, {
      schema: row.schema,
      unsafe,
      foldUnsafe: unsafe && (row.volatility !== 'v' || supportUnsafe(row)),
      oneArg: row.args >= 1 && row.requiredArgs <= 1,
      gate: gateOf(row.argTypes),
      produces: userOf([...row.argTypes, ...row.resultTypes]),
    });
  }

  // An operator is judged with its commutator and negator: the planner may run either instead.
  const operatorsByOid = new Map(rows.operators.map((row) => [row.oid, row]));
  const group = new Map<number, number>();
  const find = (oid: number): number => {
    let root = oid;
    while ((group.get(root) ?? root) !== root) root = group.get(root)!;
    group.set(oid, root);
    return root;
  };
  for (const row of rows.operators) {
    for (const other of [row.commutator, row.negator]) {
      if (other !== 0 && operatorsByOid.has(other)) group.set(find(row.oid), find(other));
    }
  }
  const runs = (oid: number) => oid === 0 || safe.has(oid);
  const groupUnsafe = new Set<number>();
  const groupFoldUnsafe = new Set<number>();
  for (const row of rows.operators) {
    const codeUnsafe = !runs(row.code);
    const estimatorUnsafe = !runs(row.restrict) || !runs(row.join);
    if (codeUnsafe || estimatorUnsafe) groupUnsafe.add(find(row.oid));
    if ((codeUnsafe && volatility.get(row.code) !== 'v') || estimatorUnsafe) groupFoldUnsafe.add(find(row.oid));
  }
  // Sorting, merging or hashing by an operator (ORDER BY … USING, merge and hash joins, hashed
  // IN lists) runs the support functions of a family holding it: an unsafe one makes every
  // operator in that family unsafe. A family is unsafe for its types and indexes when its
  // support functions or its operators' own code are (the planner runs both); an operator made
  // unsafe only by another family does not spread further.
  const ownUnsafe = new Set(groupUnsafe);
  const unsafeFamilies = new Set<number>();
  for (const family of rows.families) {
    const procsUnsafe = family.procs.some((oid) => !safe.has(oid));
    const members = family.operators.map((oid) => (operatorsByOid.has(oid) ? find(oid) : -1));
    if (procsUnsafe || members.some((group) => group === -1 || ownUnsafe.has(group))) unsafeFamilies.add(family.family);
    if (procsUnsafe) for (const group of members) if (group !== -1) groupUnsafe.add(group);
  }
  const unsafeOperators = new Set(rows.operators.filter((row) => groupUnsafe.has(find(row.oid))).map((row) => row.oid));
  const operators = new Map<string, NameEntry>();
  for (const row of rows.operators) {
    addOverload(operators, row.name, {
      schema: row.schema,
      unsafe: unsafeOperators.has(row.oid),
      foldUnsafe: groupFoldUnsafe.has(find(row.oid)),
      oneArg: false,
      gate: gateOf([row.left, row.right].filter((oid) => oid !== 0)),
      produces: userOf([row.left, row.right, row.result]),
    });
  }
  for (const entries of [functions, operators]) {
    for (const entry of entries.values())
      entry.plain = entry.overloads.every((o) => !o.unsafe && o.gate === null && o.produces.length === 0);
  }

  const unsafeCastTargets = new Set<string>();
  const unsafeTypeOids = new Set<number>();
  for (const cast of rows.casts) {
    if (cast.func === 0 || safe.has(cast.func)) continue;
    // The function runs on a value of the source. A user type's: wherever one is in play
    // (implicitly where the target is wanted; to_json() and friends look up a cast to json of a
    // user type whatever its context). A built-in type's: only where PostgreSQL converts it
    // unasked, which brings the target into play; a written cast is judged by its target's name.
    if (shape.userTypes.has(cast.source)) unsafeTypeOids.add(cast.source);
    else if (cast.context !== 'e') unsafeTypeOids.add(cast.target);
    const target = shape.types.get(cast.target);
    if (target) {
      unsafeCastTargets.add(target.name);
      unsafeCastTargets.add(`${target.schema}.${target.name}`);
    }
  }
  for (const family of rows.families) {
    if (unsafeFamilies.has(family.family)) for (const oid of family.types) unsafeTypeOids.add(oid);
  }
  for (const t of rows.types) {
    if (t.functions.some((oid) => !safe.has(oid)) || t.rangeFunctions.some((oid) => !safe.has(oid)) || unsafeFamilies.has(t.rangeFamily)) {
      unsafeTypeOids.add(t.oid);
    }
  }

  const catalog = {
    functions,
    operators,
    types: shape.typeNames,
    valueEdges: shape.valueEdges,
    coerceEdges: shape.coerceEdges,
    alwaysCoercible: shape.alwaysCoercible,
    unsafeTypes: new Map<number, string>(),
    unsafeThroughParts: new Set<number>(),
    unsafeCastTargets,
    relations: new Map<string, RelationEntry[]>(),
    builtinUnsafe: undefined as string | undefined,
  } satisfies PostgresCatalog;
  const own = new Set(unsafeTypeOids);
  markUnsafeTypes(rows, shape, parsed, catalog, unsafeTypeOids, own);
  for (const oid of unsafeTypeOids) if (!own.has(oid)) catalog.unsafeThroughParts.add(oid);
  for (const oid of unsafeTypeOids) {
    const t = shape.types.get(oid);
    const name = t === undefined ? String(oid) : `${t.schema}.${t.name}`;
    catalog.unsafeTypes.set(oid, name);
    if (t !== undefined && t.builtin && t.kind !== 'p') catalog.builtinUnsafe ??= name;
  }
  markRelations(rows, shape, parsed, catalog, unsafeFamilies);
  return catalog;
}

function addOverload(map: Map<string, NameEntry>, name: string, overload: Overload): void {
  const entry = map.get(name);
  if (entry === undefined) map.set(name, { schemas: [overload.schema], overloads: [overload], plain: true });
  else {
    entry.overloads.push(overload);
    if (!entry.schemas.includes(overload.schema)) (entry.schemas as string[]).push(overload.schema);
  }
}

/** Types whose values run unsafe code, closed over what they are made of: a domain's checks
 * and base, an array's element, a composite's fields, a range's subtype, a multirange's range. */
function markUnsafeTypes(
  rows: CatalogRows,
  shape: Shape,
  parsed: Parsed,
  catalog: PostgresCatalog,
  unsafe: Set<number>,
  ownReasons: Set<number>,
): void {
  const columnsOf = new Map(rows.relations.map((r) => [r.oid, r.columnTypes]));
  const partsOf = (t: CatalogTypeRow) => [
    t.element,
    t.base,
    t.rangeSubtype,
    t.multirangeOf,
    ...(t.relation !== 0 ? (columnsOf.get(t.relation) ?? []) : []),
  ];
  const view = { ...catalog, unsafeTypes: new Map<number, string>() };
  for (let changed = true; changed;) {
    changed = false;
    for (const oid of unsafe) view.unsafeTypes.set(oid, String(oid));
    for (const t of rows.types) {
      if (unsafe.has(t.oid)) continue;
      const checks = parsed.domainChecks.get(t.oid);
      // information_schema's domains are PostgreSQL's own, their casts resolved when it made
      // them: judged by name they would meet every cast a user added to text.
      const badCheck =
        !t.builtin &&
        parsed.domainChecks.has(t.oid) &&
        (checks === undefined ||
          findRefusal(view, { ...checks, relations: [] }, 'run', shape.userTypes.has(t.base) ? [t.base] : []) !== undefined);
      if (badCheck || partsOf(t).some((oid) => oid !== 0 && unsafe.has(oid))) {
        unsafe.add(t.oid);
        if (badCheck) ownReasons.add(t.oid);
        changed = true;
      }
    }
  }
}

/** Relations whose reading (or plan-only writing) reaches unsafe code; views over views and
 * parents of children are judged until nothing changes. */
function markRelations(
  rows: CatalogRows,
  shape: Shape,
  parsed: Parsed,
  catalog: PostgresCatalog & { relations: Map<string, RelationEntry[]> },
  unsafeFamilies: ReadonlySet<number>,
): void {
  const entries = new Map<number, RelationEntry>();
  for (const r of rows.relations) {
    const entry: RelationEntry = {
      schema: r.schema,
      unsafe: undefined,
      writeUnsafe: undefined,
      values: shape.relationValues.get(r.oid) ?? [],
    };
    entries.set(r.oid, entry);
    for (const name of shape.relationNames.get(r.oid) ?? []) push(catalog.relations, name, entry);
    if (r.unsafeForeign) entry.unsafe = 'is a foreign table of a wrapper that is not known to only read';
    else if (parsed.relations.get(r.oid)?.unreadable !== undefined) entry.unsafe = parsed.relations.get(r.oid)!.unreadable;
  }
  const domainDefaultUnsafe = (oid: number): boolean => {
    for (let t = shape.types.get(oid); t !== undefined; t = shape.types.get(t.base)) {
      const refs = parsed.domainDefaults.get(t.oid);
      if (refs !== undefined) return findRefusal(catalog, { ...refs, relations: [] }, 'plan') !== undefined;
      if (t.kind !== 'd') return false;
    }
    return false;
  };
  for (let changed = true; changed;) {
    changed = false;
    for (const r of rows.relations) {
      const entry = entries.get(r.oid)!;
      if (entry.unsafe !== undefined) continue;
      const code = parsed.relations.get(r.oid);
      const why = r.indexFamilies.some((family) => unsafeFamilies.has(family))
        ? 'has an index or partition key whose operator class runs code that may have side effects'
        : r.children.some((oid) => entries.get(oid)?.unsafe !== undefined)
          ? 'reads a partition or child table whose reading reaches code that may have side effects'
          : code?.view !== undefined && findRefusal(catalog, code.view, 'run') !== undefined
            ? 'is a view whose query reaches code that may have side effects'
            : code?.policy !== undefined && findRefusal(catalog, code.policy, 'run', entry.values) !== undefined
              ? 'has row security policies reaching code that may have side effects'
              : code?.plan !== undefined && findRefusal(catalog, { ...code.plan, relations: [] }, 'plan', entry.values) !== undefined
                ? 'has index, statistics or constraint expressions the planner evaluates, reaching code that may have side effects'
                : undefined;
      if (why !== undefined) {
        entry.unsafe = why;
        changed = true;
      }
    }
  }
  for (const r of rows.relations) {
    const entry = entries.get(r.oid)!;
    const write = parsed.relations.get(r.oid)?.write;
    if (r.hasRules) entry.writeUnsafe = 'has rewrite rules, whose actions a plan-only write would plan';
    else if (parsed.relations.get(r.oid)?.unwritable !== undefined) entry.writeUnsafe = parsed.relations.get(r.oid)!.unwritable;
    else if (write !== undefined && findRefusal(catalog, { ...write, relations: [] }, 'plan', entry.values) !== undefined) {
      entry.writeUnsafe = 'has column defaults or generated columns the planner evaluates, reaching code that may have side effects';
    } else if (r.columnTypes.some(domainDefaultUnsafe)) {
      entry.writeUnsafe = 'has a column whose domain default the planner evaluates, reaching code that may have side effects';
    }
  }
  // A write into an auto-updatable view is a write into what it reads: its defaults, rules and
  // generated columns apply once the view is expanded.
  for (let changed = true; changed;) {
    changed = false;
    for (const r of rows.relations) {
      const entry = entries.get(r.oid)!;
      const view = parsed.relations.get(r.oid)?.view;
      if (entry.writeUnsafe !== undefined || view === undefined) continue;
      const base = view.relations.flatMap((name) => catalog.relations.get(name) ?? []).find((b) => b.writeUnsafe !== undefined);
      if (base !== undefined) {
        entry.writeUnsafe = `is a view over a relation that ${base.writeUnsafe!}`;
        changed = true;
      }
    }
  }
}
