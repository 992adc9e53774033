// Pass: the question's head, what kind of answer it wants. "how many" / "number of" / "count"
// ask for a count, "how much" for an aggregate, anything else for a list; "different" or
// "distinct" there asks for distinct values. Sets state.intent, state.distinct and
// state.headEnd (where the head stops: the subject is looked for after it).
import { FILLER, UNITS_WORDS } from '../lexicon.ts';
import { claim, consume, matchWords, skipWords, word, type ParseState } from '../parse-state.ts';
import { unitsMeasure } from '../parse-schema.ts';

export function readHead(state: ParseState): void {
  const tokens = state.tokens;
  const reach = matchWords(state, 0, ['for|in', 'each|every']) ? 8 : 6;
  for (let i = 0; i < Math.min(tokens.length, reach); i++) {
    // "how many" / "number of" open the question only after filler ("what is the number of");
    // "which year has the most number of concerts" is not a count.
    if (i > 0 && !FILLER.has(tokens[i - 1].lower) && !matchWords(state, 0, ['for|in', 'each|every'])) break;
    let n: number;
    if ((n = matchWords(state, i, ['how', 'many']))) {
      consume(state, i, i + n);
      state.headEnd = i + n;
      state.intent = 'count';
      const j = skipWords(state, i + n, ['different', 'distinct', 'unique', 'separate', 'individual']);
      if (j > i + n) {
        state.distinct = true;
        consume(state, i + n, j);
      }
      // "how many units were sold": a sum, not a count of rows.
      const unitsMention = state.mentionAt[j];
      if (
        UNITS_WORDS.has(word(state, j)) &&
        (!unitsMention || unitsMention.kind === 'value' || unitsMention.cands.every((c) => c.score < 0.95))
      ) {
        const m = unitsMeasure(state);
        if (m) {
          state.intent = 'aggregate';
          state.selectAggregates.push({ fn: 'sum', measure: m });
          claim(state, unitsMention);
          consume(state, j, j + 1);
        }
      }
      return;
    }
    if ((n = matchWords(state, i, ['how', 'much']))) {
      consume(state, i, i + n);
      state.headEnd = i + n;
      state.intent = 'aggregate';
      return;
    }
    if (
      (n = matchWords(state, i, ['total?', 'number|count|amount', 'of'])) &&
      (word(state, i) !== 'amount' || word(state, i + 1) === 'of')
    ) {
      if (word(state, i + n - 2) === 'amount' && word(state, i) !== 'total') continue;
      consume(state, i, i + n);
      state.headEnd = i + n;
      state.intent = 'count';
      const j = skipWords(state, i + n, ['different', 'distinct', 'unique']);
      if (j > i + n) {
        state.distinct = true;
        consume(state, i + n, j);
      }
      return;
    }
    if (i === 0 && (n = matchWords(state, i, ['count']))) {
      n += matchWords(state, i + n, ['the?', 'total?', 'number|count', 'of']);
      consume(state, i, i + n);
      state.headEnd = i + n;
      state.intent = 'count';
      const j = skipWords(state, i + n, ['the', 'all', 'different', 'distinct', 'unique']);
      if ([...Array(j - i - n).keys()].some((k) => ['different', 'distinct', 'unique'].includes(word(state, i + n + k))))
        state.distinct = true;
      consume(state, i + n, j);
      return;
    }
  }
  // list / what / which / who …: the head is the leading run of filler words.
  let j = 0;
  while (j < tokens.length && FILLER.has(tokens[j].lower) && !state.mentionAt[j]) j++;
  state.headEnd = j;
  if (tokens.slice(0, j).some((x) => x.lower === 'different' || x.lower === 'distinct' || x.lower === 'unique')) state.distinct = true;
}
