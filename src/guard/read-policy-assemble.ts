// One round of read-policy.ts's fixed point: the judged catalog as it stands when `safe` holds
// the functions known (so far) to be free of side effects. Operators are judged with their
// commutator, negator and operator families; types by their own functions, casts and families,
// then closed over what they are made of; relations by what reading (or plan-only writing)
// them makes the planner run. A round may find more user functions unsafe (their code reaches
// what it marked), so read-policy.ts calls it until nothing changes.
import { findRefusal } from './read-policy-check.ts';
import { push, type Parsed, type Shape } from './read-policy-shape.ts';
import type { NameEntry, Overload, PostgresCatalog, RelationEntry } from './read-policy.ts';
import type { CatalogFunctionRow, CatalogRows, CatalogTypeRow } from '../engines/postgres/postgres-catalog-rows.ts';

/** The catalog as it stands with `safe` the functions known to be free of side effects. */
export function assemble(rows: CatalogRows, shape: Shape, parsed: Parsed, safe: ReadonlySet<number>): PostgresCatalog {
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
