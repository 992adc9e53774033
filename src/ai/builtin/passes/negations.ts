// Pass: negated existence. "customers who never ordered", "products without reviews", "not
// have a cat pet", "all stadiums except those having a concert" → NOT EXISTS on the related
// table, with the span of the clause: conditions said inside it (recorded by later passes)
// go into the subquery. A "not" in front of a value or comparison is left to those passes.
import { VERBS } from '../lexicon.ts';
import { claim, consume, fail, skipWords, word, type ParseState } from '../parse-state.ts';
import { isChildTable, resolveTable, verbTarget } from '../parse-schema.ts';
import { STOPWORDS } from '../text.ts';

/** Words that end a negated clause ("customers who never ordered and live in Berlin"). */
const CLAUSE_END = ['and', 'but', 'or', 'who', 'that', 'which', 'whose', 'with'];

function clauseEnd(state: ParseState, from: number, stops: string[]): number {
  let end = from;
  while (end < state.tokens.length && !stops.includes(word(state, end))) end++;
  return end;
}

export function readNegations(state: ParseState): void {
  if (!state.subject) return;
  const { index, mentionAt } = state;
  const subject = state.subject;
  for (let i = 0; i < state.tokens.length; i++) {
    if (state.consumed[i]) continue;
    let start = -1;
    let j = i;
    const w = word(state, i);
    let afterNot = skipWords(state, i + 1, ['have', 'has', 'had', 'own', 'owns', 'possess', 'a', 'an', 'any']);
    // "did not operate any treatment": an unknown verb between "not" and the table.
    if (!mentionAt[afterNot] && state.tokens[afterNot]?.kind === 'word' && !STOPWORDS.has(word(state, afterNot))) {
      const k = skipWords(state, afterNot + 1, ['a', 'an', 'any', 'the', 'single', 'on', 'in', 'for', 'with', 'through']);
      const km = mentionAt[k];
      if (km && km.kind === 'table' && resolveTable(km) !== subject) afterNot = k;
    }
    const nextMention = mentionAt[afterNot];
    const notApplies =
      w === 'not' &&
      (!mentionAt[i + 1] ||
        (nextMention?.kind === 'table' && resolveTable(nextMention) !== subject) ||
        nextMention?.kind === 'value' ||
        VERBS[word(state, i + 1)] !== undefined);
    if (['except', 'excluding', 'besides'].includes(w)) {
      // "all stadiums except (for) stadiums having a concert in 2014"
      let k = skipWords(state, i + 1, [
        'for',
        'those',
        'the',
        'ones',
        'that',
        'which',
        'who',
        'having',
        'have',
        'has',
        'had',
        'with',
        'a',
        'an',
        'any',
        'some',
      ]);
      const subjectMention = mentionAt[k];
      if (subjectMention && subjectMention.kind === 'table' && resolveTable(subjectMention) === subject) {
        k = skipWords(state, subjectMention.end, [
          'that',
          'which',
          'who',
          'having',
          'have',
          'has',
          'had',
          'with',
          'a',
          'an',
          'any',
          'some',
        ]);
        const related = mentionAt[k];
        if (
          related &&
          related.kind === 'table' &&
          resolveTable(related) !== subject &&
          index.distance(subject, resolveTable(related)) < Infinity
        ) {
          claim(state, subjectMention);
          claim(state, related);
          consume(state, i, related.end);
          const scopeEnd = clauseEnd(state, related.end, ['and', 'but', 'or']);
          state.negatedExists.push({ negate: true, target: resolveTable(related), conditions: [], pos: i, end: scopeEnd });
          continue;
        }
      }
    }
    if (w === 'never' || notApplies || w === 'without' || (w === 'no' && i > 0)) {
      start = i;
      j = skipWords(state, i + 1, [
        'have',
        'has',
        'had',
        'been',
        'ever',
        'yet',
        'any',
        'a',
        'an',
        'the',
        'single',
        'even',
        'once',
        'made',
        'placed',
        'written',
        'got',
        'received',
        'did',
        'do',
        'does',
        'not',
        'own',
        'owns',
        'possess',
      ]);
    }
    if (start < 0) continue;
    // "do not have a cat pet": the value stays a condition inside the negation; the table
    // after it (or the value's own table) is what must not exist.
    const valueMention = mentionAt[j];
    if (valueMention && valueMention.kind === 'value' && (w === 'not' || w === 'no' || w === 'without' || w === 'never')) {
      const after = skipWords(state, valueMention.end, ['as', 'a', 'an', 'their', 'its']);
      const tableAfter = mentionAt[after];
      const valueTable = valueMention.cands[0].table;
      const target =
        tableAfter && tableAfter.kind === 'table' && resolveTable(tableAfter) !== subject
          ? resolveTable(tableAfter)
          : valueTable !== subject
            ? valueTable
            : null;
      if (target && isChildTable(state, target)) {
        if (tableAfter && tableAfter.kind === 'table' && resolveTable(tableAfter) === target) claim(state, tableAfter);
        consume(state, start, j);
        const scopeEnd = clauseEnd(
          state,
          Math.max(valueMention.end, tableAfter && state.claimed.has(tableAfter) ? tableAfter.end : valueMention.end),
          CLAUSE_END,
        );
        state.negatedExists.push({ negate: true, target, conditions: [], pos: start, end: scopeEnd });
        continue;
      }
    }
    let target: string | null = null;
    let end = j;
    const m = mentionAt[j];
    if (m && m.kind === 'table' && resolveTable(m) !== subject) {
      target = resolveTable(m);
      claim(state, m);
      end = m.end;
    } else if (w === 'not' && nextMention && nextMention.kind === 'table' && resolveTable(nextMention) !== subject) {
      target = resolveTable(nextMention);
      claim(state, nextMention);
      end = nextMention.end;
    } else if (VERBS[word(state, j)]) {
      target = verbTarget(state, VERBS[word(state, j)], subject);
      end = j + 1;
      // "never placed an order": the object names the table more precisely.
      const k = skipWords(state, end, ['a', 'an', 'any', 'the', 'single']);
      const object = mentionAt[k];
      if (object && object.kind === 'table' && resolveTable(object) !== subject) {
        target = resolveTable(object);
        claim(state, object);
        end = object.end;
      }
    } else {
      // "placed" etc. before a table: never placed any orders.
      const k = skipWords(state, j, ['placed', 'made', 'written', 'left', 'given', 'submitted', 'got', 'received', 'a', 'an', 'any']);
      const object = mentionAt[k];
      if (k !== j && object && object.kind === 'table' && resolveTable(object) !== subject) {
        target = resolveTable(object);
        claim(state, object);
        end = object.end;
      }
    }
    if (!target) continue;
    if (index.distance(subject, target) === Infinity) fail(`no foreign-key path connects ${subject} and ${target}`);
    consume(state, start, end);
    // The scope runs to the end of the clause: conditions there belong inside NOT EXISTS.
    const scopeEnd = clauseEnd(state, end, CLAUSE_END);
    state.negatedExists.push({ negate: true, target, conditions: [], pos: start, end: scopeEnd });
  }
}
