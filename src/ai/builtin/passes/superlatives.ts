// Pass: superlatives. "the customer with the most orders", "the most expensive product",
// "the oldest employee", "best-selling", "highest rated" → a sort put first in state.orderBy
// and a limit of 1 unless one was given ("the 3 cheapest"). "what is the highest price" is
// left to the aggregate pass: there the column's value, not a row, is asked for.
import { AGG_WORDS, REVENUE_WORDS, SUPERLATIVES, UNITS_WORDS, type SuperKind } from '../lexicon.ts';
import type { ColumnRef, Item } from '../plan.ts';
import { claim, consume, fail, matchWords, skipWords, word, type ParseState } from '../parse-state.ts';
import { dateColumnFor, measurePhraseAt } from '../parse-phrases.ts';
import {
  columnInfo,
  defaultAggregate,
  defaultMeasure,
  findColumn,
  isChildTable,
  nearbyTables,
  resolveColumn,
  resolveTable,
  revenueMeasure,
  unitsMeasure,
} from '../parse-schema.ts';

/** The sort key a superlative of `kind` names, reading from `at` (just after it). */
export function superlativeItem(state: ParseState, superlative: SuperKind, at: number): Item | null {
  const tables = nearbyTables(state);
  const subject = state.asked?.kind === 'table' ? state.asked.table : state.subject;
  const preferTables = subject ? [subject, ...tables.filter((x) => x !== subject)] : tables;
  const asItem = (c: ColumnRef): Item => {
    // "the employee who got the biggest bonus": one bonus, the row with it; only a rating,
    // score or price is averaged over the related rows ("the best rated product").
    if (isChildTable(state, c.table) && state.asked?.kind === 'table' && defaultAggregate(state, c) === 'avg')
      return { kind: 'aggregate', aggregate: { fn: defaultAggregate(state, c), measure: { kind: 'column', column: c } } };
    return { kind: 'column', column: c };
  };
  switch (superlative.kind) {
    case 'column': {
      const c = findColumn(state, superlative.words, preferTables, (x) => x.numeric || x.date);
      if (c) return asItem(c);
      // An age or weight stored as text (common in SQLite files) in the table asked about.
      const own = subject ? findColumn(state, superlative.words, [subject], (x) => x.words.length === 1) : null;
      if (own) return { kind: 'column', column: own };
      if (superlative.words.includes('age')) {
        const d = dateColumnFor(state, at);
        return d ? { kind: 'column', column: d } : null;
      }
      return null;
    }
    case 'date': {
      const d = dateColumnFor(state, at);
      return d ? { kind: 'column', column: d } : null;
    }
    case 'measure': {
      const measure = measurePhraseAt(state, at);
      // One related row's value, not their total: "the employee with the biggest bonus".
      if (
        measure &&
        measure.item.kind === 'aggregate' &&
        measure.item.aggregate.fn === 'sum' &&
        measure.item.aggregate.measure.kind === 'column' &&
        !AGG_WORDS[word(state, skipWords(state, at, ['the', 'a', 'an']))]
      )
        return { kind: 'column', column: measure.item.aggregate.measure.column };
      if (measure) return measure.item;
      // "whose number of products is the largest": the column named just before.
      for (let k = at - 2; k >= Math.max(0, at - 6); k--) {
        const m = state.mentionAt[k];
        if (m && m.kind === 'column' && !state.claimed.has(m)) {
          const c = resolveColumn(state, m);
          if (columnInfo(state, c).numeric || columnInfo(state, c).date) {
            claim(state, m);
            return asItem(c);
          }
        }
        if (m || !['is', 'are', 'was', 'the', 'a', 'its', 'their', 'has', 'have', 'with'].includes(word(state, k))) break;
      }
      // "the highest one time bonus": a numeric column a word or two further on.
      for (let k = at; k < Math.min(state.tokens.length, at + 3); k++) {
        const m = state.mentionAt[k];
        if (m && m.kind === 'column' && !state.claimed.has(m)) {
          const c = resolveColumn(state, m);
          if (!columnInfo(state, c).numeric) break;
          claim(state, m);
          consume(state, at, k);
          return asItem(c);
        }
        if (m || state.consumed[k] || state.tokens[k].kind !== 'word') break;
      }
      const c = defaultMeasure(state, subject);
      return c ? { kind: 'column', column: c } : null;
    }
    case 'sold': {
      const m = unitsMeasure(state);
      if (m) return { kind: 'aggregate', aggregate: { fn: 'sum', measure: m } };
      const child = tables.find((x) => isChildTable(state, x));
      return child ? { kind: 'aggregate', aggregate: { fn: 'count', measure: { kind: 'rows', table: child } } } : null;
    }
    case 'rating': {
      const c = findColumn(state, ['rating', 'score', 'stars', 'grade', 'rank'], preferTables, (x) => x.numeric);
      return c
        ? isChildTable(state, c.table)
          ? { kind: 'aggregate', aggregate: { fn: 'avg', measure: { kind: 'column', column: c } } }
          : { kind: 'column', column: c }
        : null;
    }
  }
}

export function readSuperlatives(state: ParseState): void {
  const { tokens, mentionAt } = state;
  for (let i = 0; i < tokens.length; i++) {
    if (state.consumed[i]) continue;
    // most / fewest + table: "the customer with the most orders".
    const mostFewest = matchWords(state, i, [
      'most|fewest|least|highest|largest|biggest|greatest|lowest|smallest',
      'number|count|amount?',
      'of?',
    ]);
    // "the most common nationality", "the least frequent hometown": the value of a column
    // met on most rows → GROUP BY the column, ORDER BY COUNT(*).
    const common = matchWords(state, i, ['most|least', 'common|commonly|frequent|frequently']);
    if (common) {
      const m = mentionAt[skipWords(state, i + common, ['used', 'occurring'])];
      if (m && m.kind === 'column' && !state.claimed.has(m)) {
        const c = resolveColumn(state, m);
        consume(state, i, i + common);
        state.asked = { kind: 'column', table: c.table, column: c, start: m.start, end: m.end };
        state.subject = c.table;
        state.orderBy.unshift({
          item: { kind: 'aggregate', aggregate: { fn: 'count', measure: { kind: 'rows', table: c.table } } },
          dir: word(state, i) === 'most' ? 'DESC' : 'ASC',
        });
        state.limit ??= 1;
        state.wantsEntityGroup = true;
        continue;
      }
    }
    if (mostFewest) {
      let j = skipWords(state, i + mostFewest, ['different', 'distinct']);
      // "the most arriving flights", "the most enrolled students": a word or two that link
      // to nothing may qualify the counted table.
      for (let k = j; k < j + 2 && !mentionAt[j] && k < tokens.length; k++) {
        if (mentionAt[k] || state.consumed[k] || tokens[k].kind !== 'word' || !/(ing|ed)$/.test(tokens[k].lower)) break;
        const next = mentionAt[k + 1];
        // Not "the most populated countries" when countries are what is listed.
        if (next?.kind === 'table' && resolveTable(next) !== state.subject) {
          j = k + 1;
          break;
        }
      }
      const m = mentionAt[j];
      const dir = ['most', 'highest', 'largest', 'biggest', 'greatest'].includes(word(state, i)) ? 'DESC' : 'ASC';
      // "the 5 largest countries" is a size, not a count of countries per name.
      const sizeWord = ['largest', 'biggest', 'smallest', 'highest', 'lowest', 'greatest'].includes(word(state, i)) && mostFewest === 1;
      if (
        m &&
        m.kind === 'table' &&
        resolveTable(m) !== (state.asked?.kind === 'table' ? state.asked.table : null) &&
        !(sizeWord && resolveTable(m) === state.subject)
      ) {
        claim(state, m);
        consume(state, i, j);
        state.orderBy.unshift({
          item: { kind: 'aggregate', aggregate: { fn: 'count', measure: { kind: 'rows', table: resolveTable(m) } } },
          dir,
        });
        state.limit ??= 1;
        state.wantsEntityGroup = true;
        continue;
      }
      // "the country with the largest number of languages": a column of a related table
      // counts that table's rows.
      if (m && m.kind === 'column' && mostFewest > 1 && !state.claimed.has(m)) {
        const c = resolveColumn(state, m);
        if (c.table !== state.subject && isChildTable(state, c.table)) {
          claim(state, m);
          consume(state, i, j);
          state.orderBy.unshift({
            item: { kind: 'aggregate', aggregate: { fn: 'count', measure: { kind: 'rows', table: c.table } } },
            dir,
          });
          state.limit ??= 1;
          state.wantsEntityGroup = true;
          continue;
        }
      }
      // "the visitor who bought the most tickets": a numeric column right after "most".
      if (m && m.kind === 'column' && mostFewest === 1 && !state.claimed.has(m) && ['most', 'least', 'fewest'].includes(word(state, i))) {
        const c = resolveColumn(state, m);
        if (columnInfo(state, c).numeric && !columnInfo(state, c).pk && !columnInfo(state, c).fk) {
          claim(state, m);
          consume(state, i, j);
          const item: Item =
            isChildTable(state, c.table) && state.asked?.kind === 'table' && defaultAggregate(state, c) === 'avg'
              ? { kind: 'aggregate', aggregate: { fn: 'avg', measure: { kind: 'column', column: c } } }
              : { kind: 'column', column: c };
          state.orderBy.unshift({ item, dir });
          if (item.kind === 'aggregate') state.wantsEntityGroup = true;
          state.limit ??= 1;
          continue;
        }
      }
      if (word(state, i) === 'most' || word(state, i) === 'least') {
        const next = word(state, i + 1);
        if (REVENUE_WORDS.has(next) || UNITS_WORDS.has(next)) {
          const measure = REVENUE_WORDS.has(next) ? revenueMeasure(state) : unitsMeasure(state);
          if (measure) {
            consume(state, i, i + 2);
            state.orderBy.unshift({ item: { kind: 'aggregate', aggregate: { fn: 'sum', measure: measure } }, dir });
            state.limit ??= 1;
            state.wantsEntityGroup = true;
            continue;
          }
        }
      }
    }
    // "the first student to register", "the last transcript released": first/last before
    // a table (not part of a name such as "first name") is its date, earliest or latest.
    if (['first', 'last', 'latest', 'earliest'].includes(word(state, i)) && !mentionAt[i] && word(state, i - 1) === 'the') {
      const t = mentionAt[i + 1];
      if (t && t.kind === 'table' && resolveTable(t) === state.subject && state.limit === null) {
        const d = dateColumnFor(state, i + 1);
        if (d) {
          consume(state, i, i + 1);
          state.orderBy.unshift({
            item: { kind: 'column', column: d },
            dir: ['first', 'earliest'].includes(word(state, i)) ? 'ASC' : 'DESC',
          });
          state.limit = 1;
          continue;
        }
      }
    }
    let hit: [string[], SuperKind] | null = null;
    for (const s of SUPERLATIVES) {
      if (matchWords(state, i, s[0]) === s[0].length) {
        hit = s;
        break;
      }
    }
    if (!hit) continue;
    const [words, superlative] = hit;
    const end = i + words.length;
    // "what is the highest price" (the column is what is asked) → MAX(price), not a row.
    const next = mentionAt[skipWords(state, end, ['the'])];
    const asked = state.asked;
    const isAggregateQuestion =
      (superlative.kind === 'measure' || (words.length === 1 && AGG_WORDS[words[0]])) &&
      next &&
      next.kind === 'column' &&
      !state.claimed.has(next) &&
      (!asked || asked.start >= next.start || (asked.kind === 'column' && asked.start === next.start)) &&
      state.intent !== 'count' &&
      state.limit === null;
    if (isAggregateQuestion) continue; // readAggregates takes it
    const item = superlativeItem(state, superlative, end);
    if (!item) {
      if (superlative.kind === 'measure') continue;
      fail(`"${words.join(' ')}" does not match a column here`);
    }
    consume(state, i, end);
    let dir = superlative.dir;
    // Without an age column, "oldest" means the earliest date (and "youngest" the latest).
    if (superlative.kind === 'column' && superlative.words.includes('age') && item.kind === 'column' && columnInfo(state, item.column).date)
      dir = dir === 'DESC' ? 'ASC' : 'DESC';
    state.orderBy.unshift({ item, dir });
    if (item.kind === 'aggregate') state.wantsEntityGroup = true;
    state.limit ??= 1;
  }
}
