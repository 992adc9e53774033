// Phrase readers several passes share: the date column a date phrase applies to, and the
// measure a phrase names ("by revenue", "the number of orders", "average price"). Unlike the
// look-ups in parse-schema.ts they consume the words they read.
import { AGG_WORDS, DATE_VERBS, FILLER, REVENUE_WORDS, UNITS_WORDS, VERBS } from './lexicon.ts';
import type { AggregateFn, ColumnRef, Item } from './plan.ts';
import { claim, consume, matchWords, skipWords, word, type ParseState } from './parse-state.ts';
import {
  columnInfo,
  defaultAggregate,
  defaultMeasure,
  findColumn,
  isChildTable,
  measuredTables,
  nearbyTables,
  resolveColumn,
  resolveTable,
  revenueMeasure,
  unitsMeasure,
} from './parse-schema.ts';
import type { ColInfo } from './schema-index.ts';

/** The date (or year) column a date phrase at `pos` applies to. */
export function dateColumnFor(state: ParseState, pos: number): ColumnRef | null {
  const { index } = state;
  const dateLike = (c: ColInfo): boolean => c.date || c.year;
  // 1. a verb before the date: "ordered in", "joined in", "released in".
  for (let j = pos - 1; j >= Math.max(0, pos - 5); j--) {
    const verb = word(state, j);
    const dateWords = DATE_VERBS[verb];
    if (dateWords) {
      const c = findColumn(state, dateWords, nearbyTables(state), dateLike);
      if (c) {
        // "signed up since …": the verb named the column; it is not a projection.
        const verbMention = state.mentionAt[j];
        if (verbMention && verbMention.kind === 'column') claim(state, verbMention);
        consume(state, j, j + 1);
        return c;
      }
    }
    const verbTables = VERBS[verb];
    if (verbTables) {
      for (const t of nearbyTables(state)) {
        const info = index.table(t);
        if (info.words.some((x) => verbTables.includes(x))) {
          const c = info.cols.find(dateLike);
          if (c) return { table: t, column: c.name };
        }
      }
    }
    const m = state.mentionAt[j];
    if (m && m.kind === 'column') {
      const c = resolveColumn(state, m);
      if (dateLike(columnInfo(state, c))) {
        claim(state, m);
        return c;
      }
    }
  }
  // 2. the table named just before ("orders in 2025", "orders that were placed in 2025").
  for (let j = pos - 1; j >= Math.max(0, pos - 4); j--) {
    const m = state.mentionAt[j];
    if (m && m.kind === 'table') {
      const info = index.table(resolveTable(m));
      const c = info.cols.find((x) => x.date) ?? info.cols.find(dateLike);
      if (c) return { table: info.name, column: c.name };
      break;
    }
    if (m || !FILLER.has(word(state, j))) break;
  }
  // 3. for a measure ("revenue in 2025"), the event date nearest the measured table:
  //    ordered_at rather than a product's created_at.
  const measured = measuredTables(state);
  if (measured.length > 0) {
    const from = measured[0];
    const cands = [...index.tables.values()]
      .map((info) => ({ info, d: index.distance(from, info.name), column: info.cols.find((x) => x.date) }))
      .filter((x) => x.column && x.d < Infinity)
      .sort(
        (a, b) =>
          a.d - b.d || Number(/created|updated|modified/i.test(a.column!.name)) - Number(/created|updated|modified/i.test(b.column!.name)),
      );
    if (cands[0]) return { table: cands[0].info.name, column: cands[0].column!.name };
  }
  // 4. the subject's, then the nearest table's.
  for (const t of nearbyTables(state)) {
    const info = index.table(t);
    const c = info.cols.find((x) => x.date) ?? info.cols.find(dateLike);
    if (c) return { table: t, column: c.name };
  }
  return null;
}

/** A measure phrase at i: [agg] column | revenue/units word | "number of" T | T. */
export function measurePhraseAt(state: ParseState, i: number): { item: Item; end: number } | null {
  let j = skipWords(state, i, ['the', 'a', 'an', 'their', 'its', 'of', 'total']);
  let fn: AggregateFn | null = null;
  // "number of products" that is itself a column (shop.number_products) is that column.
  const named = state.mentionAt[j];
  const namesColumn = named && named.kind === 'column' && named.start === j && !named.weak && named.end - j > 2;
  if (!namesColumn && matchWords(state, j, ['number|count', 'of'])) {
    j = skipWords(state, j + 2, ['the', 'different', 'distinct']);
    const m = state.mentionAt[j];
    if (m && m.kind === 'table') {
      claim(state, m);
      return { item: { kind: 'aggregate', aggregate: { fn: 'count', measure: { kind: 'rows', table: resolveTable(m) } } }, end: m.end };
    }
    return null;
  }
  if (AGG_WORDS[word(state, j)] && !state.mentionAt[j]) {
    fn = AGG_WORDS[word(state, j)];
    j = skipWords(state, j + 1, ['the', 'of']);
  }
  const w = word(state, j);
  // A column named exactly so ("earnings", "sales") is that column, not the revenue formula.
  const exact = state.mentionAt[j];
  const exactColumn = exact && exact.kind === 'column' && exact.cands.some((c) => c.score >= 0.95);
  if (REVENUE_WORDS.has(w) && !exactColumn) {
    const m = revenueMeasure(state);
    if (!m) return null;
    return { item: { kind: 'aggregate', aggregate: { fn: fn && fn !== 'max' && fn !== 'min' ? fn : 'sum', measure: m } }, end: j + 1 };
  }
  if (UNITS_WORDS.has(w) && !state.mentionAt[j]) {
    const m = unitsMeasure(state);
    if (!m) return null;
    return { item: { kind: 'aggregate', aggregate: { fn: 'sum', measure: m } }, end: j + 1 };
  }
  const m = state.mentionAt[j];
  if (m && m.kind === 'column') {
    const c = resolveColumn(state, m);
    claim(state, m);
    if (fn) return { item: { kind: 'aggregate', aggregate: { fn, measure: { kind: 'column', column: c } } }, end: m.end };
    if (isChildTable(state, c.table) && columnInfo(state, c).numeric) {
      return {
        item: { kind: 'aggregate', aggregate: { fn: defaultAggregate(state, c), measure: { kind: 'column', column: c } } },
        end: m.end,
      };
    }
    return { item: { kind: 'column', column: c }, end: m.end };
  }
  if (m && m.kind === 'table') {
    const table = resolveTable(m);
    // "sorted by number of orders" said as "by orders" → count; "by order value" → measure.
    if (['value', 'amount', 'size', 'total'].includes(word(state, m.end))) {
      const c = defaultMeasure(state, table);
      if (c) {
        claim(state, m);
        consume(state, m.end, m.end + 1);
        return {
          item: fn ? { kind: 'aggregate', aggregate: { fn, measure: { kind: 'column', column: c } } } : { kind: 'column', column: c },
          end: m.end + 1,
        };
      }
    }
    if (table !== state.subject) {
      claim(state, m);
      return { item: { kind: 'aggregate', aggregate: { fn: 'count', measure: { kind: 'rows', table } } }, end: m.end };
    }
  }
  return null;
}
