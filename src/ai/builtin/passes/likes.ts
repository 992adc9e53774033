// Pass: text patterns. "starting with 'A'", "ending in son", "containing 'x' in their name"
// → LIKE (or NOT LIKE after "not") on the column named after the literal, else a text column
// named just before, else the subject's label column.
import type { ColumnRef } from '../plan.ts';
import { addCondition, claim, consume, matchWords, skipWords, word, type ParseState } from '../parse-state.ts';
import { columnInfo, resolveColumn } from '../parse-schema.ts';

export function readLikePatterns(state: ParseState): void {
  const { tokens, mentionAt } = state;
  for (let i = 0; i < tokens.length; i++) {
    if (state.consumed[i]) continue;
    let how: 'prefix' | 'suffix' | 'contains' | null = null;
    let n: number;
    if ((n = matchWords(state, i, ['start|starts|starting|begin|begins|beginning|started|began', 'with|by|in']))) how = 'prefix';
    else if ((n = matchWords(state, i, ['end|ends|ending|ended', 'with|in']))) how = 'suffix';
    else if (
      (n = matchWords(state, i, [
        'contain|contains|containing|include|includes|including|like|with',
        'the?',
        'word|letter|string|text|substring|phrase?',
      ]))
    )
      how = 'contains';
    if (!how) continue;
    const j = skipWords(state, i + n, ['the', 'letter', 'word', 'string', 'a', 'an']);
    const tok = tokens[j];
    if (!tok || state.consumed[j]) continue;
    let pattern: string;
    if (tok.kind === 'quoted') pattern = tok.raw;
    // An unquoted pattern is one word that names nothing in the schema ("starting with A").
    else if (
      how !== 'contains' &&
      (tok.kind === 'word' || tok.kind === 'number') &&
      !(mentionAt[j] && mentionAt[j]!.kind !== 'value' && tok.raw.length > 1)
    )
      pattern = tok.raw;
    else continue;
    // "with 'x' in their name" names the column after the literal.
    let c: ColumnRef | null = null;
    let after = j + 1;
    const tail = matchWords(state, j + 1, ['in|within', 'the|their|its|his|her?']);
    if (tail) {
      const columnMention = mentionAt[j + 1 + tail];
      if (columnMention && columnMention.kind === 'column') {
        c = resolveColumn(state, columnMention);
        claim(state, columnMention);
        after = columnMention.end;
      }
    }
    if (!c) {
      for (let k = i - 1; k >= Math.max(0, i - 4); k--) {
        const columnMention = mentionAt[k];
        if (columnMention && columnMention.kind === 'column' && columnInfo(state, resolveColumn(state, columnMention)).text) {
          c = resolveColumn(state, columnMention);
          claim(state, columnMention);
          break;
        }
        if (columnMention && columnMention.kind === 'table') break;
      }
    }
    if (!c) {
      const subject = state.subject ? state.index.table(state.subject) : null;
      const col = subject?.label[0] ?? subject?.cols.find((x) => x.text && !x.pk)?.name;
      if (!subject || !col) continue;
      c = { table: subject.name, column: col };
    }
    const negate = word(state, i - 1) === 'not' || word(state, i - 2) === 'not';
    if (negate) consume(state, word(state, i - 1) === 'not' ? i - 1 : i - 2, i);
    consume(state, i, Math.max(after, j + 1));
    addCondition(state, { kind: 'like', column: c, pattern, negate, how }, i);
  }
}
