// Schema look-ups the parser's passes share: which table or column a mention means given the
// rest of the question, tables by relevance to the subject, the measures that revenue and
// units words stand for. They read the parse state and never change it.
import { REVENUE_WORDS } from './lexicon.ts';
import type { AggregateFn, ColumnRef, Measure } from './plan.ts';
import { measureTable } from './plan.ts';
import type { ColumnMention, ParseState, TableMention } from './parse-state.ts';
import type { ColInfo } from './schema-index.ts';

/** Tables the question names, first candidate of each table mention, in order. */
export function tablesInQuestion(state: ParseState): string[] {
  const out: string[] = [];
  for (const m of state.mentions) {
    if (m.kind === 'table' && !out.includes(m.cands[0].table)) out.push(m.cands[0].table);
  }
  return out;
}

export function resolveTable(m: TableMention): string {
  return m.cands[0].table;
}

/** Pick a column candidate: one next to a table mention, else the subject's, else a named
 * table's, else the best-scored nearest the subject. */
export function resolveColumn(state: ParseState, m: ColumnMention): ColumnRef {
  const cands = m.cands;
  if (cands.length === 1) return { table: cands[0].table, column: cands[0].column };
  const byTable = (t: string): ColumnRef | null => {
    const hit = cands.find((c) => c.table === t);
    return hit ? { table: hit.table, column: hit.column } : null;
  };
  // Adjacent table words: "product price", "price of products", "customers' city".
  for (let d = 1; d <= 3; d++) {
    for (const j of [m.start - d, m.end - 1 + d]) {
      const near = state.mentionAt[j];
      if (near && near.kind === 'table') {
        const r = byTable(resolveTable(near));
        if (r) return r;
      }
      // "a cat that is age 3": a value names its table too.
      if (near && near.kind === 'value' && near.cands.length === 1) {
        const r = byTable(near.cands[0].table);
        if (r) return r;
      }
    }
  }
  if (state.subject) {
    const r = byTable(state.subject);
    if (r) return r;
  }
  for (const t of tablesInQuestion(state)) {
    const r = byTable(t);
    if (r) return r;
  }
  const best = Math.max(...cands.map((c) => c.score));
  const top = cands.filter((c) => c.score >= best - 0.05);
  if (state.subject) {
    const subject = state.subject;
    top.sort((a, b) => state.index.distance(subject, a.table) - state.index.distance(subject, b.table));
  }
  return { table: top[0].table, column: top[0].column };
}

/** Like resolveColumn, but a table the question names wins over adjacency: used before the
 * subject is known. */
export function resolveColumnByNamedTables(state: ParseState, m: ColumnMention): ColumnRef {
  for (const t of tablesInQuestion(state)) {
    const hit = m.cands.find((c) => c.table === t);
    if (hit) return { table: hit.table, column: hit.column };
  }
  return resolveColumn(state, m);
}

export function columnInfo(state: ParseState, c: ColumnRef): ColInfo {
  return state.index.col(c.table, c.column)!;
}

/** A column of one of `tables` (searched in order) whose words include one of `words`. */
export function findColumn(
  state: ParseState,
  words: string[],
  tables: string[],
  accept: (c: ColInfo) => boolean = () => true,
): ColumnRef | null {
  for (const w of words) {
    for (const t of tables) {
      const info = state.index.tables.get(t);
      const hit = info?.cols.find((c) => accept(c) && (c.words.includes(w) || c.name.toLowerCase() === w));
      if (hit) return { table: t, column: hit.name };
    }
  }
  return null;
}

/** Tables ordered by relevance: subject, mentioned, then by FK distance from the subject. */
export function nearbyTables(state: ParseState): string[] {
  const out: string[] = [];
  const add = (t: string | null | undefined): void => {
    if (t && !out.includes(t)) out.push(t);
  };
  add(state.subject);
  for (const t of tablesInQuestion(state)) add(t);
  const all = [...state.index.tables.keys()];
  if (state.subject) {
    const s = state.subject;
    all.sort((a, b) => state.index.distance(s, a) - state.index.distance(s, b));
    for (const t of all) if (state.index.distance(s, t) < Infinity) add(t);
  }
  return out;
}

/** The nearest table of line items (quantity × unit price), if the schema has one. */
function lineItemsTable(state: ParseState): string | null {
  for (const t of nearbyTables(state)) if (state.index.table(t).line) return t;
  for (const info of state.index.tables.values()) if (info.line) return info.name;
  return null;
}

/** What "revenue"/"sales" sums: quantity × price of line items, else a revenue-like column. */
export function revenueMeasure(state: ParseState): Measure | null {
  const lineTable = lineItemsTable(state);
  if (lineTable) {
    const line = state.index.table(lineTable).line!;
    return { kind: 'line', table: lineTable, quantity: line.quantity, price: line.price };
  }
  const col = findColumn(state, ['revenue', 'sale', 'total', 'amount'], nearbyTables(state), (c) => c.numeric);
  return col ? { kind: 'column', column: col } : null;
}

/** What "units"/"sold" sums: the line items' quantity, else a quantity-like column. */
export function unitsMeasure(state: ParseState): Measure | null {
  const lineTable = lineItemsTable(state);
  if (lineTable) return { kind: 'column', column: { table: lineTable, column: state.index.table(lineTable).line!.quantity } };
  const col = findColumn(state, ['quantity', 'qty', 'unit', 'sold'], nearbyTables(state), (c) => c.numeric);
  return col ? { kind: 'column', column: col } : null;
}

/** The column "value", "amount", "over 500" mean for `table`, if it has one. */
export function defaultMeasure(state: ParseState, table: string | null): ColumnRef | null {
  if (!table) return null;
  const info = state.index.table(table);
  return info.measure ? { table, column: info.measure } : null;
}

/** Averaged rather than summed when its rows are aggregated: ratings, prices, ages. */
export function defaultAggregate(state: ParseState, c: ColumnRef): AggregateFn {
  const words = columnInfo(state, c).words;
  return words.some((x) => ['rating', 'score', 'price', 'age', 'grade', 'rate'].includes(x)) ? 'avg' : 'sum';
}

/** Is `table` on the "many" side of the subject (joining it multiplies subject rows)? */
export function isChildTable(state: ParseState, table: string): boolean {
  if (!state.subject || table === state.subject) return false;
  const p = state.index.path(state.subject, table);
  return !!p && !state.index.isUpPath(p);
}

/** Tables being aggregated so far (or named by a revenue word). */
export function measuredTables(state: ParseState): string[] {
  const out: string[] = [];
  for (const a of state.selectAggregates) out.push(measureTable(a.measure));
  for (const h of state.having) out.push(measureTable(h.aggregate.measure));
  for (const o of state.orderBy) if (o.item.kind === 'aggregate') out.push(measureTable(o.item.aggregate.measure));
  if (out.length === 0 && state.tokens.some((x) => REVENUE_WORDS.has(x.lower))) {
    const m = revenueMeasure(state);
    if (m) out.push(measureTable(m));
  }
  return out.filter((t) => !(state.intent === 'count' && t === state.subject));
}

/** The table a verb's words name ("ordered" → orders), nearest `exclude` and other than it. */
export function verbTarget(state: ParseState, words: string[], exclude: string): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const info of state.index.tables.values()) {
    if (info.name === exclude || !info.words.some((x) => words.includes(x))) continue;
    const d = state.index.distance(exclude, info.name);
    if (d < bestDistance) {
      best = info.name;
      bestDistance = d;
    }
  }
  return best;
}

export function nearestTableBefore(state: ParseState, i: number): string | null {
  for (let k = i - 1; k >= 0; k--) {
    const m = state.mentionAt[k];
    if (m && m.kind === 'table') return resolveTable(m);
  }
  return null;
}
