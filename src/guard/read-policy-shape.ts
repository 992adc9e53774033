// What the PostgreSQL catalog rows say before any function is judged (read-policy.ts runs the
// judgement to a fixed point and needs these once, not every round): which user types a value
// brings or coerces into, which values reading each relation brings, and the names every piece
// of user code refers to (function bodies and defaults, domain checks and defaults, views,
// policies, index/statistics/constraint expressions, column defaults), parsed once.
import type { Collectors } from './read-policy.ts';
import type { PostgresReferences } from './verdict.ts';
import type { CatalogRows, CatalogTypeRow } from '../engines/postgres/postgres-catalog-rows.ts';

export function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else if (!list.includes(value)) list.push(value);
}

/** The parts of the catalog that do not depend on which functions are safe. */
export interface Shape {
  types: Map<number, CatalogTypeRow>;
  userTypes: Set<number>;
  typeNames: Map<string, number[]>;
  valueEdges: Map<number, number[]>;
  coerceEdges: Map<number, number[]>;
  alwaysCoercible: Set<number>;
  relationValues: Map<number, number[]>;
  relationNames: Map<number, string[]>;
}

export function shapeOf(rows: CatalogRows, viewRelations: Map<number, readonly string[]>): Shape {
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

export interface Parsed {
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

export function parseCode(rows: CatalogRows, collect: Collectors): Parsed {
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
