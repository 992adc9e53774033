// Pass: a row limit. "top 5 customers by revenue", "the first 10 orders", "the 3 most
// expensive products" (the superlative pass adds the sort), "top customer(s)" without a number
// (1, or 10 for a plural) → state.limit, and for "top" the sort by the measure after "by".
import { SUPERLATIVES } from '../lexicon.ts';
import { consume, isYearAt, matchWords, numberAt, skipWords, word, type ParseState } from '../parse-state.ts';
import { measurePhraseAt } from '../parse-phrases.ts';

export function readTopN(state: ParseState): void {
  const { tokens, mentionAt } = state;
  for (let i = 0; i < tokens.length; i++) {
    const w = word(state, i);
    if (state.consumed[i]) continue;
    if ((w === 'top' || w === 'first' || w === 'limit') && numberAt(state, i + 1) !== null) {
      if (w === 'first' && mentionAt[i] && mentionAt[i]!.kind === 'column') continue;
      state.limit = numberAt(state, i + 1);
      consume(state, i, i + 2);
      if (w === 'top') readTopBy(state, i + 2, 'DESC');
      continue;
    }
    if (w === 'top' && !mentionAt[i] && !matchWords(state, i, ['top', 'selling|rated'])) {
      // "top customer(s) by revenue" without a number.
      const next = mentionAt[skipWords(state, i + 1, ['the'])];
      if (next && next.kind === 'table') {
        const last = tokens[next.end - 1];
        state.limit = last.lower.endsWith('s') && last.lower !== last.lemma ? 10 : 1;
        consume(state, i, i + 1);
        readTopBy(state, i + 1, 'DESC');
      }
      continue;
    }
    const n = numberAt(state, i);
    if (n !== null && !isYearAt(state, i)) {
      const next = word(state, i + 1);
      const isSuperlative = SUPERLATIVES.some(([s]) => s[0] === next) || ['most', 'least', 'top'].includes(next);
      const prev = word(state, i - 1);
      if (isSuperlative && !['than', 'least', 'most', 'over', 'under', 'above', 'below'].includes(prev)) {
        state.limit = n;
        consume(state, i, i + 1);
      } else if (
        ['the', 'last'].includes(prev) &&
        mentionAt[i + 1]?.kind === 'table' &&
        ['most', 'highest', 'lowest', 'latest', 'newest', 'recent', 'largest', 'cheapest', 'with'].some((x) =>
          tokens.slice(i + 1, i + 6).some((y) => y.lower === x),
        )
      ) {
        state.limit = n;
        consume(state, i, i + 1);
        if (prev === 'last') consume(state, i - 1, i);
      } else if (
        mentionAt[i + 1]?.kind === 'table' &&
        matchWords(state, mentionAt[i + 1]!.end, [
          'with|by|having',
          'the?',
          'most|highest|lowest|largest|fewest|least|biggest|smallest|greatest|best|worst',
        ])
      ) {
        state.limit = n;
        consume(state, i, i + 1);
      }
    }
  }
}

/** After "top N": "[entity] by <measure>" sorts by the measure. */
function readTopBy(state: ParseState, i: number, dir: 'ASC' | 'DESC'): void {
  let j = i;
  const m = state.mentionAt[skipWords(state, j, ['the'])];
  if (m && m.kind === 'table') j = m.end;
  else if (m && m.kind === 'column' && state.asked?.kind === 'column') j = m.end;
  const by = matchWords(state, j, ['by|in|for']);
  if (!by) return;
  const measure = measurePhraseAt(state, j + by);
  if (!measure) return;
  consume(state, j, j + by);
  consume(state, j + by, measure.end);
  state.orderBy.push({ item: measure.item, dir });
}
