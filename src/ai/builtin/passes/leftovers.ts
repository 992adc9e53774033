// Pass: what no earlier pass placed. Quoted text becomes an equality on the column or table
// named before it (or a verb's object's label, or the subject's label); a capitalised name
// after a text column is its value; an unknown proper noun goes to the column the question
// says it is a value of ("population of Brazil", "in Kabul"). A number, a date or a name with
// no such place is refused: an answer that ignored it would look right and be wrong.
import { FILLER, VERBS } from '../lexicon.ts';
import type { ColumnRef } from '../plan.ts';
import { addCondition, claim, consume, fail, skipWords, word, type ParseState } from '../parse-state.ts';
import { columnInfo, nearbyTables, resolveColumn, resolveTable } from '../parse-schema.ts';
import { MONTHS, STOPWORDS } from '../text.ts';

const LOCATION_WORDS = new Set([
  'city',
  'country',
  'region',
  'continent',
  'location',
  'place',
  'state',
  'district',
  'nation',
  'town',
  'area',
  'province',
  'county',
  'address',
]);
/** A column with this many sampled values may hold values the samples lack. */
const COMPLETE_SAMPLE_BELOW = 20;

export function readLeftovers(state: ParseState): void {
  const { tokens, mentionAt, index } = state;
  for (let i = 0; i < tokens.length; i++) {
    if (state.consumed[i]) continue;
    const tok = tokens[i];
    const m = mentionAt[i];
    if (tok.kind === 'quoted') {
      // 'X' after a column or table word: equality on that column / the table's label.
      const prev = mentionAt[i - 1] ?? mentionAt[skipWords(state, i - 1, [])];
      let c: ColumnRef | null = null;
      if (prev && prev.kind === 'column') {
        c = resolveColumn(state, prev);
        claim(state, prev);
      } else if (prev && prev.kind === 'table') {
        const info = index.table(resolveTable(prev));
        if (info.label.length === 1) c = { table: info.name, column: info.label[0] };
        if (info.name !== state.subject) claim(state, prev);
      } else {
        // After a verb ("bought 'X'") the value names the verb's object: the nearest
        // other table with a one-column label; otherwise the subject's label.
        const verbBefore = [1, 2, 3].some((d) => VERBS[word(state, i - d)]);
        const subject = state.subject ? index.table(state.subject) : null;
        if (verbBefore || !subject || subject.label.length !== 1) {
          for (const t of nearbyTables(state)) {
            const info = index.table(t);
            if (t !== state.subject && info.label.length === 1 && columnInfo(state, { table: t, column: info.label[0] }).text) {
              c = { table: t, column: info.label[0] };
              break;
            }
          }
        }
        if (!c && subject && subject.label.length === 1) c = { table: subject.name, column: subject.label[0] };
      }
      if (!c) fail(`could not tell which column "${tok.raw}" is a value of`);
      addCondition(state, { kind: 'in', column: c, values: [tok.raw], negate: word(state, i - 1) === 'not' }, i);
      consume(state, i, i + 1);
      continue;
    }
    if (tok.kind === 'number' || tok.kind === 'date') fail(`could not tell what ${tok.raw} refers to`);
    if (tok.capital && !m && !STOPWORDS.has(tok.lower) && !FILLER.has(tok.lower) && !MONTHS[tok.lower]) {
      const prev = mentionAt[i - 1];
      let k = i;
      const words: string[] = [];
      while (k < tokens.length && tokens[k].capital && !state.consumed[k] && !mentionAt[k]) words.push(tokens[k++].raw);
      const value = words.join(' ');
      if (prev && prev.kind === 'column' && columnInfo(state, resolveColumn(state, prev)).text) {
        const c = resolveColumn(state, prev);
        claim(state, prev);
        addCondition(state, { kind: 'in', column: c, values: [value], negate: false }, i);
        consume(state, i, k);
        continue;
      }
      const guess = guessValueColumn(state, i, k, value);
      if (guess) {
        addCondition(state, { kind: 'in', column: guess, values: [value], negate: false }, i);
        consume(state, i, k);
        i = k - 1;
        continue;
      }
      fail(`"${tok.raw}" does not match any table, column or known value`);
    }
  }
}

/**
 * A proper noun the samples do not contain ("Brazil", "Kabul"): the column it is a value of,
 * when the question says so ("population of Brazil", "in Brazil" with a country table or a
 * location column). A column whose sampled values are complete and lack the word is ruled
 * out, so "customers from Atlantis" is refused rather than answered with an empty list.
 */
export function guessValueColumn(state: ParseState, start: number, end: number, value: string): ColumnRef | null {
  const { index, mentionAt } = state;
  const mayHold = (c: ColumnRef): boolean => {
    const info = columnInfo(state, c);
    if (!info.text) return false;
    const sample = index.ctx.samples[`${c.table}.${c.column}`];
    if (!sample || sample.length >= COMPLETE_SAMPLE_BELOW) return true;
    return sample.some((v) => v.toLowerCase() === value.toLowerCase());
  };
  const labelOf = (table: string): ColumnRef | null => {
    const info = index.table(table);
    return info.label.length === 1 ? { table, column: info.label[0] } : null;
  };
  // "population of Brazil" / "Brazil population"
  const before = word(state, start - 1) === 'of' ? mentionAt[start - 2] : null;
  const after = mentionAt[end];
  for (const m of [before, after]) {
    if (m && m.kind === 'column') {
      const l = labelOf(resolveColumn(state, m).table);
      if (l && mayHold(l)) return l;
    }
    if (m && m.kind === 'table') {
      const l = labelOf(resolveTable(m));
      if (l && mayHold(l)) return l;
    }
  }
  // "in Brazil", "from Kabul": a location table's name or a location column.
  if (['in', 'from', 'at', 'of', 'for', 'to', 'by', 'near'].includes(word(state, start - 1)) || word(state, end) === 'in') {
    for (const t of nearbyTables(state)) {
      const info = index.table(t);
      if (info.words.some((w) => LOCATION_WORDS.has(w))) {
        const l = labelOf(t);
        if (l && mayHold(l)) return l;
      }
      for (const col of info.cols) {
        if (col.fk || col.pk || !col.words.some((w) => LOCATION_WORDS.has(w))) continue;
        const c = { table: t, column: col.name };
        if (mayHold(c)) return c;
      }
    }
  }
  // "Which continent is Anguilla in?": the subject's own name column.
  if (state.subject && word(state, end) === 'in') {
    const l = labelOf(state.subject);
    if (l && mayHold(l)) return l;
  }
  return null;
}
