// The final check on a plan: refuse when the thing asked about is unknown ("how many
// unicorns"), a negation was left unplaced (it would turn the answer around), too much of the
// question matched nothing, or nothing is selected. An answer without grounds would look
// right and be wrong.
import { AGG_WORDS, DATE_VERBS, FILLER, REVENUE_WORDS, SUPERLATIVES, UNITS_WORDS, VERBS } from '../lexicon.ts';
import type { Plan } from '../plan.ts';
import { fail, word, type ParseState } from '../parse-state.ts';
import { MONTHS, STOPWORDS, type Token } from '../text.ts';

export function checkGrounds(state: ParseState, plan: Plan): void {
  const { tokens, mentionAt } = state;
  const content = (tok: Token): boolean =>
    tok.kind === 'word' && !STOPWORDS.has(tok.lower) && !FILLER.has(tok.lower) && !MONTHS[tok.lower] && tok.lower.length > 1;
  // The first content word after the head ("how many unicorns", "what is the meaning").
  for (let i = state.headEnd; i < tokens.length; i++) {
    const tok = tokens[i];
    if (state.consumed[i] || mentionAt[i]) break;
    if (!content(tok)) continue;
    if (
      AGG_WORDS[tok.lower] ||
      SUPERLATIVES.some(([s]) => s[0] === tok.lower) ||
      REVENUE_WORDS.has(tok.lower) ||
      UNITS_WORDS.has(tok.lower) ||
      VERBS[tok.lower] ||
      DATE_VERBS[tok.lower]
    )
      break;
    if (
      [
        'top',
        'most',
        'least',
        'first',
        'last',
        'new',
        'old',
        'recent',
        'biggest',
        'cheap',
        'expensive',
        'popular',
        'best',
        'worst',
      ].includes(tok.lower)
    )
      break;
    // A modifier of the noun that follows ("car models", "sports cars") is not the subject.
    if (mentionAt[i + 1] && mentionAt[i + 1]!.kind !== 'value') break;
    fail(`"${tok.raw}" does not match any table or column of this database`);
  }
  // A negation nobody placed would silently turn the answer around: refuse instead.
  for (let i = 0; i < tokens.length; i++) {
    const w = word(state, i);
    if (state.consumed[i] || mentionAt[i]) continue;
    if (
      ['not', 'never', 'without', 'except', 'excluding', 'neither', 'nor'].includes(w) ||
      (w === 'no' && i > 0 && !['no', 'yes'].includes(word(state, i - 1)))
    ) {
      fail(`could not tell what "${tokens[i].raw}" applies to`);
    }
  }
  let unknown = 0;
  let known = 0;
  for (let i = 0; i < tokens.length; i++) {
    if (mentionAt[i] || state.consumed[i]) {
      known++;
      continue;
    }
    if (content(tokens[i])) unknown++;
  }
  if (known === 0 || unknown > known + 1) fail('too much of the question does not match this database');
  if (plan.select.length === 0) fail('nothing to select');
}
