// Pass: grouping phrases. "per category", "for each customer", "by month", "broken down by
// country", "monthly" → state.groupCandidates. Whether a candidate becomes GROUP BY (something
// is aggregated) or, said with "by", ORDER BY (nothing is) is decided in assemble.ts, once
// every aggregate is known.
import { DATE_VERBS, VERBS } from '../lexicon.ts';
import type { DatePart } from '../../dialect.ts';
import { claim, consume, fail, matchWords, skipWords, word, type ParseState } from '../parse-state.ts';
import { dateColumnFor } from '../parse-phrases.ts';
import type { Item } from '../plan.ts';
import { columnInfo, resolveColumn, resolveTable } from '../parse-schema.ts';

const DATE_UNITS: Record<string, DatePart> = {
  year: 'year',
  month: 'month',
  day: 'day',
  date: 'day',
  yearly: 'year',
  annually: 'year',
  annual: 'year',
  monthly: 'month',
  daily: 'day',
};

export function readGroupPhrases(state: ParseState): void {
  const { tokens, mentionAt } = state;
  for (let i = 0; i < tokens.length; i++) {
    if (state.consumed[i]) continue;
    const n =
      matchWords(state, i, ['for|in|of|within', 'each|every']) ||
      // "the maximum accelerate for (all) the different numbers of cylinders"
      matchWords(state, i, ['for|across|among', 'all?', 'the?', 'different|various|distinct', 'number|numbers?', 'of?']) ||
      matchWords(state, i, ['per|each|every']) ||
      matchWords(state, i, ['grouped|broken|split|break', 'down?', 'by|per']) ||
      matchWords(state, i, ['by']) ||
      matchWords(state, i, ['across', 'all?']);
    const viaBy = n > 0 && word(state, i) === 'by';
    // "placed by customers": the agent of a verb, not a grouping.
    const prev = word(state, i - 1);
    if (viaBy && (VERBS[prev] || DATE_VERBS[prev] || /ed$/.test(prev) || ['made', 'written', 'given', 'sold', 'bought'].includes(prev)))
      continue;
    if (!n) {
      const unit = DATE_UNITS[word(state, i)];
      if (unit && ['yearly', 'annually', 'annual', 'monthly', 'daily'].includes(word(state, i))) {
        const c = dateColumnFor(state, i);
        if (c) {
          consume(state, i, i + 1);
          state.groupCandidates.push({ item: { kind: 'bucket', column: c, part: unit }, pos: i, viaBy: false });
        }
      }
      continue;
    }
    const j = skipWords(state, i + n, ['the', 'their', 'its', 'a', 'an', 'single', 'individual', 'different']);
    const unit = DATE_UNITS[tokens[j]?.lemma ?? ''];
    if (unit && !(mentionAt[j] && mentionAt[j]!.kind === 'column' && !mentionAt[j]!.weak)) {
      const c = dateColumnFor(state, i);
      if (!c) fail(`no date column to group by ${unit}`);
      consume(state, i, j + 1);
      // A year stored as a number ("cars_data.year") is grouped as it is.
      const info = columnInfo(state, c);
      const item: Item =
        unit === 'year' && info.year && !info.date ? { kind: 'column', column: c } : { kind: 'bucket', column: c, part: unit };
      state.groupCandidates.push({ item, pos: i, viaBy });
      continue;
    }
    const m = mentionAt[j];
    if (!m || m.kind === 'value') continue;
    if (m.kind === 'table') {
      // "song names by singers" where singers is what the question lists: an author, not a
      // grouping or a sort.
      if (viaBy && resolveTable(m) === state.subject) continue;
      claim(state, m);
      consume(state, i, j);
      state.groupCandidates.push({ item: { kind: 'label', table: resolveTable(m) }, pos: i, viaBy });
    } else {
      const c = resolveColumn(state, m);
      claim(state, m);
      consume(state, i, j);
      state.groupCandidates.push({ item: { kind: 'column', column: c }, pos: i, viaBy });
    }
  }
}
