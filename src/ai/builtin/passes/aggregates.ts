// Pass: aggregates asked for in the SELECT list. "the average price", "average, minimum and
// maximum age", "the total of order 42", "… and the number of singers in each country",
// bare measure words ("revenue per category", "units sold by month") → state.selectAggregates,
// turning a list question into an aggregate one.
import { AGG_WORDS, FILLER, REVENUE_WORDS, UNITS_WORDS } from '../lexicon.ts';
import type { AggregateFn, Item, Measure } from '../plan.ts';
import { consume, matchWords, skipWords, word, type ParseState } from '../parse-state.ts';
import { measurePhraseAt } from '../parse-phrases.ts';
import { columnInfo, defaultMeasure, resolveColumn, revenueMeasure, unitsMeasure } from '../parse-schema.ts';

export function readAggregates(state: ParseState): void {
  const { tokens, mentionAt } = state;
  for (let i = 0; i < tokens.length; i++) {
    if (state.consumed[i]) continue;
    // "average, minimum and maximum age": several functions, one column.
    const fns: AggregateFn[] = [];
    let j = i;
    while (j < tokens.length && !state.consumed[j]) {
      const f = AGG_WORDS[word(state, j)];
      const m = mentionAt[j];
      // "first"/"last"/"latest" aggregate only a date or number ("the first order date"),
      // never a name ("first name").
      if (f && ['first', 'last', 'latest', 'earliest', 'top'].includes(word(state, j))) {
        const next = mentionAt[j + 1];
        if (!next || next.kind !== 'column') break;
        const info = columnInfo(state, resolveColumn(state, next));
        if (!info.date && !info.numeric) break;
      }
      if (f && !(m && !m.weak)) {
        fns.push(f);
        j++;
        j = skipWords(state, j, ['and', ',', 'or', 'the']);
        continue;
      }
      break;
    }
    if (fns.length === 0) continue;
    if (matchWords(state, j, ['number|count', 'of']) && fns.length === 1 && word(state, i) === 'total') {
      continue; // "total number of" is a count, handled by the head.
    }
    const measure = measurePhraseAt(state, skipWords(state, j, ['of', 'the']));
    let item: Item | null = measure?.item ?? null;
    let end = measure?.end ?? j;
    if (!item) {
      // "the total of order 42" (orders.total) or "the average" with the subject's measure.
      const m = mentionAt[i];
      if (m && m.kind === 'column') continue;
      const c = defaultMeasure(state, state.subject);
      if (!c || fns.length !== 1) continue;
      item = { kind: 'column', column: c };
      end = i + 1;
    }
    const base =
      item.kind === 'aggregate'
        ? item.aggregate.measure
        : item.kind === 'column'
          ? ({ kind: 'column', column: item.column } as Measure)
          : null;
    if (!base) continue;
    consume(state, i, end);
    for (const f of fns) {
      if (item.kind === 'aggregate' && fns.length === 1 && item.aggregate.fn !== 'count')
        state.selectAggregates.push({ ...item.aggregate, fn: item.aggregate.measure.kind === 'rows' ? 'count' : f });
      else state.selectAggregates.push({ fn: base.kind === 'rows' ? 'count' : f, measure: base });
    }
    if (state.intent === 'list') state.intent = 'aggregate';
    i = end - 1;
  }
  // "… and the number of singers in each country": a count anywhere in the question.
  for (let i = 0; i < tokens.length; i++) {
    if (state.consumed[i] || !matchWords(state, i, ['number|count|total', 'of'])) continue;
    // "staff number of the museum" names a column, not a count.
    if (i > 0 && !FILLER.has(word(state, i - 1)) && !mentionAt[i - 1]) continue;
    if (i > 0 && mentionAt[i - 1]?.kind === 'column') continue;
    if (word(state, i) === 'total' && !matchWords(state, i, ['total', 'number|count'])) continue;
    const measure = measurePhraseAt(state, i);
    if (!measure || measure.item.kind !== 'aggregate') continue;
    consume(state, i, measure.end);
    state.selectAggregates.push(measure.item.aggregate);
    if (state.intent === 'list') state.intent = 'aggregate';
  }
  // Bare measure words: "revenue per category", "units sold by month".
  for (let i = 0; i < tokens.length; i++) {
    if (state.consumed[i] || mentionAt[i]) continue;
    const w = word(state, i);
    if (REVENUE_WORDS.has(w) || (UNITS_WORDS.has(w) && (state.intent === 'count' || word(state, i + 1) === 'sold' || w === 'sold'))) {
      const m = REVENUE_WORDS.has(w) ? revenueMeasure(state) : unitsMeasure(state);
      if (!m) continue;
      consume(state, i, i + 1);
      if (word(state, i + 1) === 'sold') consume(state, i + 1, i + 2);
      if (state.selectAggregates.some((a) => JSON.stringify(a.measure) === JSON.stringify(m))) continue;
      if (state.intent === 'count' && UNITS_WORDS.has(w)) state.intent = 'aggregate';
      if (state.intent === 'list' || state.intent === 'aggregate') {
        state.selectAggregates.push({ fn: 'sum', measure: m });
        state.intent = 'aggregate';
      }
    }
  }
}
