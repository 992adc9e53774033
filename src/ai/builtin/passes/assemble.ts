// The last step: the parse state → a Plan. Moves conditions said inside a negated clause
// into its NOT EXISTS (and those on a counted table into its count), merges equalities on one
// column into IN, decides GROUP BY (explicit "per X", else the asked-for entity when another
// table is aggregated), the SELECT list (named columns, else the asked-for thing, plus the
// sort key where nothing was named), EXISTS for related tables and verbs left over, and the
// join route verbs imply.
import { VERBS } from '../lexicon.ts';
import type { Aggregate, Condition, Item, Plan } from '../plan.ts';
import { emptyPlan, measureTable, sameItem } from '../plan.ts';
import { claim, consume, word, type ParseState } from '../parse-state.ts';
import { columnInfo, isChildTable, resolveColumn, resolveTable, verbTarget } from '../parse-schema.ts';
import { AGGREGATE_SHOWN } from './order-by.ts';

export function assemblePlan(state: ParseState): Plan {
  const { tokens, index } = state;
  const subject = state.subject!;
  const plan = emptyPlan(subject);
  const asked = state.asked;
  const askedItem: Item | null = asked
    ? asked.kind === 'column' && asked.column
      ? { kind: 'column', column: asked.column }
      : { kind: 'label', table: asked.table }
    : null;

  // Conditions inside a negation's clause go into its NOT EXISTS.
  for (const ex of state.negatedExists) {
    for (const c of [...state.conditions]) {
      const pos = state.conditionPos.get(c) ?? -1;
      if (pos < ex.pos || pos > ex.end) continue;
      const t = c.column.table;
      if (t === subject) continue;
      const p = index.path(subject, t);
      if (!p || (t !== ex.target && !p.some((s) => s.table === ex.target))) continue;
      ex.conditions.push(c);
      state.conditions.splice(state.conditions.indexOf(c), 1);
    }
    plan.exists.push({ negate: ex.negate, target: ex.target, conditions: ex.conditions });
  }
  // Conditions on the related table of a "fewer than N orders" count go inside it.
  for (const count of state.relatedCounts) {
    for (const c of [...state.conditions]) {
      if (c.column.table === count.target) {
        count.conditions.push(c);
        state.conditions.splice(state.conditions.indexOf(c), 1);
      }
    }
    plan.counts.push(count);
  }
  // Two equalities on one column can only both hold as alternatives: "X or Y".
  const merged: Condition[] = [];
  for (const c of state.conditions) {
    const prev = merged.find(
      (m) =>
        m.kind === 'in' &&
        c.kind === 'in' &&
        !m.negate &&
        !c.negate &&
        m.column.table === c.column.table &&
        m.column.column === c.column.column,
    );
    if (prev && prev.kind === 'in' && c.kind === 'in') {
      for (const v of c.values) if (!prev.values.includes(v)) prev.values.push(v);
    } else merged.push(c);
  }
  plan.conditions = merged;
  const selectAggregates = state.selectAggregates.filter(
    (a, k) => state.selectAggregates.findIndex((b) => JSON.stringify(a) === JSON.stringify(b)) === k,
  );
  state.selectAggregates = selectAggregates;
  plan.having = state.having;
  plan.limit = state.limit;

  // Explicit projections: column mentions nobody consumed.
  const explicit: Item[] = [];
  for (const m of state.mentions) {
    if (state.claimed.has(m) || m.start < 0) continue;
    if (m.start < tokens.length && state.consumed[m.start] && !(asked && m.start === asked.start)) continue;
    if (m.kind === 'column' && (!m.weak || m.start < state.headEnd + 3)) {
      const c = resolveColumn(state, m);
      explicit.push({ kind: 'column', column: c });
    }
  }
  const aggregated = selectAggregates.length > 0 || state.having.length > 0 || state.orderBy.some((o) => o.item.kind === 'aggregate');

  // Grouping: explicit "per X", else the asked-for entity when something is aggregated
  // over another table ("customers with more than 5 orders", "city with most customers").
  const groupBy: Item[] = [];
  for (const g of state.groupCandidates) {
    const isAggregate = selectAggregates.length > 0 || state.intent === 'count' || aggregated;
    if (g.viaBy && !isAggregate) {
      plan.orderBy.push({ item: g.item, dir: 'ASC' });
      continue;
    }
    // "the email of every customer": without an aggregate, "every" only means all; a column
    // read as the group ("each owner's first name") is then a column to show.
    if (!isAggregate && g.item.kind !== 'bucket') {
      if (g.item.kind === 'column' && !explicit.some((e) => sameItem(e, g.item))) explicit.unshift(g.item);
      continue;
    }
    groupBy.push(g.item);
    if (g.item.kind === 'bucket' && state.orderBy.length === 0) plan.orderBy.push({ item: g.item, dir: 'ASC' });
  }

  // "template type codes and the number of templates for each", "nationalities and the
  // corresponding number of people": columns named beside an aggregate, with a word that
  // asks for one value per row, are what it is grouped by.
  const perRow = tokens.some((t) =>
    ['each', 'every', 'per', 'corresponding', 'respective', 'respectively', 'they', 'their', 'them', 'its'].includes(t.lower),
  );
  if (groupBy.length === 0 && perRow && (selectAggregates.length > 0 || state.intent === 'count') && explicit.length > 0) {
    for (const e of explicit) if (e.kind === 'column' && !groupBy.some((g) => sameItem(g, e))) groupBy.push(e);
  }

  if (state.intent === 'count') {
    if (asked?.kind === 'column' && asked.column && state.distinct) {
      selectAggregates.unshift({ fn: 'count', measure: { kind: 'column', column: asked.column }, distinct: true });
    } else if (
      asked?.kind === 'column' &&
      asked.column &&
      !columnInfo(state, asked.column).pk &&
      groupBy.length === 0 &&
      columnInfo(state, asked.column).text
    ) {
      selectAggregates.unshift({ fn: 'count', measure: { kind: 'column', column: asked.column }, distinct: true });
    } else {
      selectAggregates.unshift({ fn: 'count', measure: { kind: 'rows', table: subject } });
    }
  }

  const entityGroupNeeded =
    groupBy.length === 0 &&
    (state.wantsEntityGroup || state.orderBy.some((o) => o.item.kind === 'aggregate')) &&
    askedItem !== null &&
    (state.having.length > 0 || state.orderBy.some((o) => o.item.kind === 'aggregate')) &&
    !(state.intent === 'count');
  if (entityGroupNeeded) {
    // The aggregate counts/sums rows of another table per asked-for entity (or column).
    const aggregatedTables = [
      ...state.having.map((h) => measureTable(h.aggregate.measure)),
      ...state.orderBy
        .filter((o) => o.item.kind === 'aggregate')
        .map((o) => measureTable((o.item as { aggregate: Aggregate }).aggregate.measure)),
    ];
    const overSelf =
      asked?.kind === 'table' &&
      aggregatedTables.every((t) => t === asked.table) &&
      state.orderBy.every((o) => o.item.kind !== 'aggregate' || o.item.aggregate.measure.kind !== 'rows');
    if (!overSelf || asked?.kind === 'column') groupBy.push(askedItem!);
  }

  const select: Item[] = [];
  if (state.intent === 'count' || state.intent === 'aggregate') {
    // "the name and theme of each concert and the number of singers": the columns named for
    // a grouped table are shown in place of its label (still grouped by its key).
    const shownFor = (t: string): Item[] =>
      explicit.filter((e) => e.kind === 'column' && e.column.table === t && !groupBy.some((g) => sameItem(g, e)));
    for (const g of [...groupBy]) {
      const named = g.kind === 'label' ? shownFor(g.table) : [];
      if (named.length > 0) groupBy.splice(groupBy.indexOf(g), 1, ...named);
      select.push(...(named.length > 0 ? named : [g]));
    }
    for (const a of selectAggregates) select.push({ kind: 'aggregate', aggregate: a });
    if (selectAggregates.length === 0) {
      if (explicit.length > 0) select.push(...explicit);
      else if (askedItem) select.push(askedItem);
    }
  } else {
    const tablesUsed = new Set<string>([subject]);
    for (const c of plan.conditions) tablesUsed.add(c.column.table);
    if (explicit.length > 0) {
      select.push(...explicit);
      // "which cities …": an attribute asked for directly lists its distinct values.
      if (
        explicit.length === 1 &&
        asked?.kind === 'column' &&
        asked.column &&
        sameItem(explicit[0], { kind: 'column', column: asked.column }) &&
        groupBy.length === 0
      ) {
        const info = index.table(asked.table);
        if (!info.label.includes(asked.column.column) && word(state, asked.end ?? 0) !== 'of' && !columnInfo(state, asked.column).pk)
          plan.distinct = true;
      }
    } else if (groupBy.length > 0) {
      select.push(...groupBy);
    } else if (askedItem) {
      select.push(askedItem);
      if (asked?.kind === 'column') plan.distinct = true;
    }
    // Other tables named but not used by any condition: "products and their category".
    for (const m of state.mentions) {
      if (m.kind !== 'table' || state.claimed.has(m) || state.consumed[m.start]) continue;
      const t = resolveTable(m);
      if (t === subject || tablesUsed.has(t) || (asked && asked.table === t)) continue;
      if (index.distance(subject, t) === Infinity) continue;
      // A related table named after a value of one of its columns was already claimed;
      // here it is a projection only in "X and their Y" / "X with Y" phrasing.
      if (
        ['and', 'their', 'its', 'with', 'along', 'plus', 'including'].includes(word(state, m.start - 1)) ||
        ['and', 'their', 'its'].includes(word(state, m.start - 2))
      ) {
        if (isChildTable(state, t)) {
          // "customers with orders": an existence condition, not a projection.
          if (word(state, m.start - 1) === 'with' || word(state, m.start - 2) === 'with') {
            plan.exists.push({ negate: false, target: t, conditions: [] });
            continue;
          }
        }
        select.push({ kind: 'label', table: t });
      }
    }
    for (const g of groupBy) if (!select.some((s) => sameItem(s, g))) select.unshift(g);
    if (selectAggregates.length > 0) for (const a of selectAggregates) select.push({ kind: 'aggregate', aggregate: a });
  }
  // "students who have a pet", "dogs who have gone through any treatments": a related
  // table nobody else used is an existence condition.
  for (const m of state.mentions) {
    if (m.kind !== 'table' || state.claimed.has(m) || state.consumed[m.start]) continue;
    const t = resolveTable(m);
    if (t === subject || !isChildTable(state, t) || plan.exists.some((e) => e.target === t)) continue;
    if (select.some((x) => x.kind === 'label' && x.table === t)) continue;
    if (
      ['have', 'has', 'had', 'placed', 'made', 'with', 'any', 'some', 'written', 'through'].some(
        (x) => word(state, m.start - 1) === x || word(state, m.start - 2) === x,
      )
    ) {
      plan.exists.push({ negate: false, target: t, conditions: [] });
      claim(state, m);
    }
  }
  // Verb without object: "customers who ordered" → EXISTS on the verb's table.
  if (plan.exists.length === 0 && plan.conditions.every((c) => c.column.table === subject) && state.intent !== 'aggregate') {
    for (let i = state.headEnd; i < tokens.length; i++) {
      if (state.consumed[i]) continue;
      const verbWords = VERBS[word(state, i)];
      if (!verbWords || !['who', 'that', 'which', 'have', 'has', 'had'].includes(word(state, i - 1))) continue;
      const t = verbTarget(state, verbWords, subject);
      if (t && isChildTable(state, t)) {
        plan.exists.push({ negate: false, target: t, conditions: [] });
        consume(state, i, i + 1);
      }
    }
  }

  // Sorting: superlatives and explicit ORDER BY; the measure is shown when no columns
  // were asked for by name.
  plan.orderBy = [...state.orderBy, ...plan.orderBy];
  for (const o of plan.orderBy) {
    if (o.item.kind === 'label' && o.item.table === AGGREGATE_SHOWN) {
      const shown = select.find((s) => s.kind === 'aggregate');
      o.item =
        shown ??
        (state.intent === 'count'
          ? { kind: 'aggregate', aggregate: { fn: 'count', measure: { kind: 'rows', table: subject } } }
          : (askedItem ?? { kind: 'label', table: subject }));
    }
    if (o.item.kind === 'label' && o.item.table === '') o.item = askedItem ?? { kind: 'label', table: subject };
  }
  // With columns named in the question only an aggregate sort key is added ("which city
  // has the most customers" shows the count); without any, the sort key is shown too.
  const explicitOthers = explicit.filter(
    (e) => !(asked?.kind === 'column' && asked.column && sameItem(e, { kind: 'column', column: asked.column })),
  );
  if (state.intent === 'list' && explicitOthers.length === 0) {
    for (const o of plan.orderBy) {
      if (o.item.kind === 'label' || o.item.kind === 'bucket') continue;
      if (explicit.length > 0) continue;
      if (!select.some((s) => sameItem(s, o.item))) {
        if (
          o.item.kind === 'column' &&
          asked?.kind === 'table' &&
          index.table(asked.table).label.length === 0 &&
          o.item.column.table === asked.table
        )
          continue;
        select.push(o.item);
      }
    }
  }
  plan.select = select;
  plan.groupBy = groupBy;
  // Verbs pick the route between tables: "customers who bought X" goes through orders,
  // not through reviews, even when reviews is the shorter path to products.
  for (const tok of tokens) {
    const verbWords = VERBS[tok.lower];
    if (!verbWords) continue;
    const t = verbTarget(state, verbWords, subject);
    if (t && !plan.via.includes(t)) plan.via.push(t);
  }
  plan.distinct = plan.distinct || (state.distinct && state.intent === 'list');
  return plan;
}
