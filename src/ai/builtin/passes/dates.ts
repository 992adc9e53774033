// Pass: date conditions. "in 2025", "in March 2025", "in Q1 2025", "since 2024", "before
// 2020", "between 2019 and 2021", "in 2014 or 2015", "in 2010 or later", a bare ISO date →
// a range on the date column the phrase applies to (from inclusive, to exclusive), or year
// comparisons on an integer year column.
import type { ColumnRef, Condition } from '../plan.ts';
import { addCondition, consume, fail, isYearAt, matchWords, word, type ParseState } from '../parse-state.ts';
import { dateColumnFor } from '../parse-phrases.ts';
import { columnInfo } from '../parse-schema.ts';
import { MONTHS } from '../text.ts';

export interface DateRange {
  from: string;
  to: string;
  /** Tokens the date phrase spans. */
  length: number;
  year: number;
  /** Granularity, for year columns (integers). */
  part: 'year' | 'month' | 'day';
}

const pad = (n: number): string => String(n).padStart(2, '0');
const iso = (y: number, m: number, d: number): string => `${y}-${pad(m)}-${pad(d)}`;

/** A date phrase at i: ISO date, [the] [year] YYYY, month [of] YYYY, Qn YYYY. */
export function dateRangeAt(state: ParseState, i: number): DateRange | null {
  const tok = state.tokens[i];
  if (!tok) return null;
  if (tok.kind === 'date') {
    const [y, m, d] = tok.raw.slice(0, 10).split('-').map(Number);
    const next = new Date(Date.UTC(y, m - 1, d + 1));
    return {
      from: iso(y, m, d),
      to: iso(next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate()),
      length: 1,
      year: y,
      part: 'day',
    };
  }
  let j = i;
  if (word(state, j) === 'the') j++;
  if (word(state, j) === 'year' && isYearAt(state, j + 1)) j++;
  const month = MONTHS[word(state, j)];
  // "may" is a month only right before a year.
  if ((month && word(state, j) !== 'may') || (word(state, j) === 'may' && isYearAt(state, j + 1))) {
    const m = MONTHS[word(state, j)];
    const k = word(state, j + 1) === 'of' ? j + 2 : j + 1;
    if (isYearAt(state, k)) {
      const y = state.tokens[k].num!;
      const nextYear = m === 12 ? y + 1 : y;
      const nextMonth = m === 12 ? 1 : m + 1;
      return { from: iso(y, m, 1), to: iso(nextYear, nextMonth, 1), length: k + 1 - i, year: y, part: 'month' };
    }
    return null;
  }
  const quarter = word(state, j).match(/^q([1-4])$/);
  if (quarter && isYearAt(state, j + 1)) {
    const q = Number(quarter[1]);
    const y = state.tokens[j + 1].num!;
    const startMonth = (q - 1) * 3 + 1;
    return {
      from: iso(y, startMonth, 1),
      to: q === 4 ? iso(y + 1, 1, 1) : iso(y, startMonth + 3, 1),
      length: j + 2 - i,
      year: y,
      part: 'month',
    };
  }
  if (isYearAt(state, j)) {
    const y = state.tokens[j].num!;
    return { from: iso(y, 1, 1), to: iso(y + 1, 1, 1), length: j + 1 - i, year: y, part: 'year' };
  }
  return null;
}

/** Records from ≤ c < to (either end open when null): a range on a date column, year
 * comparisons on an integer year column. */
function addDateCondition(state: ParseState, c: ColumnRef, from: string | null, to: string | null, pos: number): void {
  const info = columnInfo(state, c);
  if (info.year && !info.date) {
    const fromYear = from ? Number(from.slice(0, 4)) : null;
    const toYear = to ? Number(to.slice(0, 4)) - (to.slice(5) === '01-01' ? 0 : -1) : null;
    let cond: Condition;
    if (fromYear !== null && toYear !== null && toYear - fromYear === 1) cond = { kind: 'compare', column: c, op: '=', value: fromYear };
    else if (fromYear !== null && toYear !== null) {
      addCondition(state, { kind: 'compare', column: c, op: '>=', value: fromYear }, pos);
      cond = { kind: 'compare', column: c, op: '<', value: toYear };
    } else if (fromYear !== null) cond = { kind: 'compare', column: c, op: '>=', value: fromYear };
    else cond = { kind: 'compare', column: c, op: '<', value: toYear! };
    addCondition(state, cond, pos);
    return;
  }
  addCondition(state, { kind: 'range', column: c, from, to }, pos);
}

const PREPOSITIONS: Record<string, 'in' | 'since' | 'after' | 'before' | 'until'> = {
  in: 'in',
  during: 'in',
  for: 'in',
  of: 'in',
  on: 'in',
  within: 'in',
  throughout: 'in',
  since: 'since',
  from: 'since',
  starting: 'since',
  after: 'after',
  before: 'before',
  until: 'until',
  till: 'until',
  through: 'until',
  by: 'until',
};

export function readDates(state: ParseState): void {
  for (let i = 0; i < state.tokens.length; i++) {
    if (state.consumed[i]) continue;
    const w = word(state, i);
    // between A and B / from A to B
    if (matchWords(state, i, ['between|from'])) {
      const a = dateRangeAt(state, i + 1);
      if (a && matchWords(state, i + 1 + a.length, ['and|to|until|till|through|-'])) {
        const b = dateRangeAt(state, i + 2 + a.length);
        if (b) {
          const c = dateColumnFor(state, i);
          if (!c) fail('no date column to apply the date range to');
          consume(state, i, i + 2 + a.length + b.length);
          addDateCondition(state, c, a.from, b.to, i);
          continue;
        }
      }
    }
    const kind = PREPOSITIONS[w];
    let at = i + 1;
    if (w === 'starting' && word(state, i + 1) === 'from') at++;
    if (kind && (w !== 'by' || isYearAt(state, at))) {
      const r = dateRangeAt(state, at);
      if (!r) continue;
      const c = dateColumnFor(state, i);
      if (!c) fail('no date column to apply the date to');
      const after = at + r.length;
      consume(state, i, after);
      // "in 2014 or 2015": consecutive periods make one range.
      if (kind === 'in' && word(state, after) === 'or') {
        const r2 = dateRangeAt(state, after + 1);
        if (r2 && r2.from === r.to) {
          consume(state, after, after + 1 + r2.length);
          addDateCondition(state, c, r.from, r2.to, i);
          continue;
        }
        if (r2 && r2.part === 'year' && r.part === 'year' && columnInfo(state, c).year) {
          consume(state, after, after + 1 + r2.length);
          addCondition(state, { kind: 'in', column: c, values: [r.year, r2.year], negate: false }, i);
          continue;
        }
      }
      const onwards =
        matchWords(state, after, ['or|and', 'after|later|since|onwards|beyond']) || matchWords(state, after, ['onwards|onward']);
      const upTo = matchWords(state, after, ['or|and', 'before|earlier|prior']);
      if (kind === 'in' && onwards) {
        consume(state, after, after + onwards);
        addDateCondition(state, c, r.from, null, i);
      } else if (kind === 'in' && upTo) {
        consume(state, after, after + upTo);
        addDateCondition(state, c, null, r.to, i);
      } else if (kind === 'in') addDateCondition(state, c, r.from, r.to, i);
      else if (kind === 'since') addDateCondition(state, c, r.from, null, i);
      else if (kind === 'after') addDateCondition(state, c, r.to, null, i);
      else if (kind === 'before') addDateCondition(state, c, null, r.from, i);
      else addDateCondition(state, c, null, r.to, i);
      continue;
    }
    // A bare month + year or ISO date ("orders March 2025") is a range too.
    if (state.tokens[i].kind === 'date' || (MONTHS[w] && w !== 'may' && isYearAt(state, i + 1))) {
      const r = dateRangeAt(state, i);
      if (!r) continue;
      const c = dateColumnFor(state, i);
      if (!c) fail('no date column to apply the date to');
      consume(state, i, i + r.length);
      addDateCondition(state, c, r.from, r.to, i);
    }
  }
}
