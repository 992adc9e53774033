// The per-statement half of the PostgreSQL allowlist: given the catalog judged by
// read-policy.ts and the names a statement writes, finds the first thing the statement can
// reach that is not known to be free of side effects. Pure and synchronous; a few
// microseconds for an ordinary read (every name "plain", no user type in play).
//
// PostgreSQL picks an overload of a function or operator by the types of its arguments, and
// the planner adds operators and support functions of the types it meets (sorting, grouping,
// hashing, IN, CASE, JOIN USING, range estimates). So what a statement reaches is decided by
// the *types in play*: the user types whose values can appear in it. They come from the
// relations it reads (columns, row types, children, what their views read), the types it
// names, and what the overloads it can reach return. Built-in types are always in play.
// - An overload whose arguments are all user types is reachable only when one of them (or a
//   type it coerces from) is in play, or when the statement calls the name with untyped
//   arguments alone (`'a' = 'b'`, `f($1)`), which PostgreSQL may resolve to any candidate.
//   Any other overload (a built-in or pseudo argument, or none) is always reachable.
// - A type in play whose values run code that is not safe (I/O, operator families, range
//   support, domain checks, casts from it) refuses the statement, whether or not an operator
//   on it is written: the planner may call them on its own.
// This over-approximates PostgreSQL's resolution (it never misses a reachable candidate) and
// spares reads that cannot reach the unsafe one: `WHERE id = 3` on integers in a database
// that also holds a user type with a volatile `=`.
import { runsSqlText } from './allowlist-postgres.ts';
import type { NameEntry, Overload, PostgresCatalog, Refusal, RelationEntry } from './read-policy.ts';
import type { PostgresReferences } from './verdict.ts';

/** 'run': the statement runs; 'plan': code the planner only plans or folds (index and
 * statistics expressions, constraints, defaults of a plan-only write): only what PostgreSQL
 * calls while planning counts (IMMUTABLE/STABLE functions, estimators, support functions). */
export type RefusalMode = 'run' | 'plan';

/** `a.b` → ['a', 'b']; `b` → [undefined, 'b']. Operator names may hold dots only when qualified. */
export function splitQualified(name: string): [string | undefined, string] {
  const dot = name.lastIndexOf('.');
  return dot <= 0 ? [undefined, name] : [name.slice(0, dot), name.slice(dot + 1)];
}

interface Named {
  name: string;
  entry: NameEntry;
  schema: string | undefined;
  oneArgOnly: boolean;
}

function inScope(named: Named, overload: Overload): boolean {
  return (named.schema === undefined || overload.schema === named.schema) && (!named.oneArgOnly || overload.oneArg);
}

const NO_TYPES: readonly number[] = [];

/** The user types whose values a statement can hold, closed under what PostgreSQL derives
 * from them, with the overloads that decide it. */
class TypesInPlay {
  readonly values = new Set<number>();
  private coercible: Set<number> | undefined;

  constructor(private readonly catalog: PostgresCatalog) {}

  add(oid: number): void {
    if (this.values.has(oid)) return;
    const stack = [oid];
    this.values.add(oid);
    this.coercible = undefined;
    while (stack.length > 0) {
      for (const next of this.catalog.valueEdges.get(stack.pop()!) ?? []) {
        if (this.values.has(next)) continue;
        this.values.add(next);
        stack.push(next);
      }
    }
  }

  /** Types a value in play may be coerced into without a cast being written (a domain over
   * it, an implicit or assignment cast), with those reachable from built-in types. */
  private coercibleTypes(): Set<number> {
    if (this.coercible !== undefined) return this.coercible;
    const reached = new Set(this.catalog.alwaysCoercible);
    const stack = [...this.values];
    for (const oid of stack) reached.add(oid);
    while (stack.length > 0) {
      for (const next of this.catalog.coerceEdges.get(stack.pop()!) ?? []) {
        if (reached.has(next)) continue;
        reached.add(next);
        stack.push(next);
      }
    }
    this.coercible = reached;
    return reached;
  }

  reachable(overload: Overload, untyped: boolean): boolean {
    if (overload.gate === null || untyped) return true;
    if (this.values.size === 0 && this.catalog.alwaysCoercible.size === 0) return false;
    const coercible = this.coercibleTypes();
    return overload.gate.some((oid) => coercible.has(oid));
  }
}

/** The first name in a read that the catalog does not show to be free of side effects.
 * `seedTypes`: user types in play whatever the text says (a function's parameters, a domain
 * check's VALUE, a relation's columns for its own expressions). */
export function findRefusal(
  catalog: PostgresCatalog,
  refs: PostgresReferences,
  mode: RefusalMode = 'run',
  seedTypes: readonly number[] = NO_TYPES,
): Refusal | undefined {
  if (catalog.builtinUnsafe !== undefined) {
    return {
      kind: 'type',
      name: catalog.builtinUnsafe,
      why: 'is a built-in type whose operators or support functions were given code that may have side effects',
    };
  }
  // Plain loops and no allocation for the ordinary read: this runs for every statement.
  let named: Named[] | undefined;
  for (const written of refs.functions) {
    const [schema, name] = splitQualified(written);
    if (runsSqlText(name)) return { kind: 'function', name: written, why: "runs SQL text out of the guard's sight" };
    const entry = catalog.functions.get(name);
    if (entry === undefined || (schema !== undefined && !entry.schemas.includes(schema))) {
      return { kind: 'function', name: written, why: 'is not a known function of this database', missing: true };
    }
    if (!entry.plain) (named ??= []).push({ name: written, entry, schema, oneArgOnly: false });
  }
  for (const written of refs.attributes) {
    if (runsSqlText(written))
      return { kind: 'function', name: written, why: "runs SQL text out of the guard's sight (attribute notation calls it)" };
    const entry = catalog.functions.get(written);
    if (entry !== undefined && !entry.plain) (named ??= []).push({ name: written, entry, schema: undefined, oneArgOnly: true });
  }
  const firstOperator = named?.length ?? 0;
  for (const written of refs.operators) {
    const [schema, name] = splitQualified(written);
    const entry = catalog.operators.get(name);
    if (entry === undefined || (schema !== undefined && !entry.schemas.includes(schema))) {
      return { kind: 'operator', name: written, why: 'is not a known operator of this database', missing: true };
    }
    if (!entry.plain) (named ??= []).push({ name: written, entry, schema, oneArgOnly: false });
  }

  let play: TypesInPlay | undefined;
  const seed = (oids: readonly number[] | undefined) => {
    if (oids === undefined) return;
    for (const oid of oids) (play ??= new TypesInPlay(catalog)).add(oid);
  };
  seed(seedTypes);
  for (const name of refs.types) seed(catalog.types.get(name));
  for (const name of refs.literalTypes) seed(catalog.types.get(name));
  for (const name of refs.relations) for (const relation of catalog.relations.get(name) ?? []) seed(relation.values);
  for (const name of refs.writeTargets ?? NO_NAMES) for (const relation of catalog.relations.get(name) ?? []) seed(relation.values);

  if (named !== undefined) {
    play ??= new TypesInPlay(catalog);
    const untyped = refs.untypedCalls ?? NO_NAMES;
    // What a reachable overload takes and returns is in play too, which may make more
    // overloads reachable: repeat until nothing is added (rarely more than once).
    for (let size = -1; size !== play.values.size;) {
      size = play.values.size;
      for (const item of named) {
        const calledUntyped = untyped.includes(item.name);
        for (const overload of item.entry.overloads) {
          if (overload.produces.length > 0 && inScope(item, overload) && play.reachable(overload, calledUntyped)) {
            for (const oid of overload.produces) play.add(oid);
          }
        }
      }
    }
    for (let i = 0; i < named.length; i++) {
      const item = named[i];
      const calledUntyped = untyped.includes(item.name);
      for (const overload of item.entry.overloads) {
        if (!inScope(item, overload) || !play.reachable(overload, calledUntyped)) continue;
        const kind = i >= firstOperator ? 'operator' : 'function';
        if (mode === 'plan' ? overload.foldUnsafe : overload.unsafe) {
          if (kind === 'operator') return { kind, name: item.name, why: 'runs a function that may have side effects' };
          const why = item.oneArgOnly
            ? 'may have side effects (attribute notation calls it)'
            : 'may have side effects (not known to only read)';
          return { kind, name: item.name, why };
        }
        // A safe function whose argument or result is of an unsafe type: say which call brings it.
        for (const oid of overload.produces) {
          const type = catalog.unsafeTypes.get(oid);
          if (type !== undefined)
            return { kind, name: item.name, why: `takes or returns values of type ${type}, which run code that may have side effects` };
        }
      }
    }
  }
  for (const name of refs.types) {
    if (catalog.unsafeCastTargets.has(name))
      return { kind: 'type', name, why: 'is the target of a cast whose function may have side effects' };
  }
  if (play !== undefined) {
    let throughParts: string | undefined;
    for (const oid of play.values) {
      const name = catalog.unsafeTypes.get(oid);
      if (name === undefined) continue;
      if (!catalog.unsafeThroughParts.has(oid)) return { kind: 'type', name, why: UNSAFE_VALUES };
      throughParts ??= name;
    }
    if (throughParts !== undefined) return { kind: 'type', name: throughParts, why: UNSAFE_VALUES };
  }
  for (const name of refs.relations) {
    for (const relation of catalog.relations.get(name) ?? NO_RELATIONS) {
      if (relation.unsafe !== undefined) return { kind: 'relation', name, why: relation.unsafe };
    }
  }
  for (const name of refs.writeTargets ?? NO_NAMES) {
    for (const relation of catalog.relations.get(name) ?? NO_RELATIONS) {
      if (relation.writeUnsafe !== undefined) return { kind: 'relation', name, why: relation.writeUnsafe };
    }
  }
  return undefined;
}

const NO_NAMES: readonly string[] = [];
const UNSAFE_VALUES =
  'has values that run code that may have side effects (input/output, comparison, hashing, casts, range or domain support)';
const NO_RELATIONS: readonly RelationEntry[] = [];
