// Pass: numeric comparisons. "price over 100", "more than 5 orders", "at least 200 in stock",
// "between 10 and 20", "cheaper than 30", "3 or more reviews". What is compared is looked for
// after the number (a table → a count of related rows, a measure word, a numeric column), then
// before the comparator, else the subject's default measure. A plain column becomes a WHERE
// condition; an aggregate a HAVING (grouped per asked-for entity); "fewer than N" related rows
// a correlated count, so rows with none still qualify.
import { AGG_WORDS, COMPARATIVE_COLUMNS, COMPARATORS, FILLER, REVENUE_WORDS, SYNONYMS, UNITS_WORDS } from '../lexicon.ts';
import type { Aggregate, CompareOp, ColumnRef, Item } from '../plan.ts';
import { addCondition, claim, consume, fail, matchWords, numberAt, skipWords, word, type ParseState } from '../parse-state.ts';
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

const NEGATED: Record<CompareOp, CompareOp> = { '>': '<=', '>=': '<', '<': '>=', '<=': '>', '=': '<>', '<>': '=' };

/** Words passed over looking back from a comparator for what it compares. */
const SKIP_BACK = new Set([
  'is',
  'are',
  'was',
  'were',
  'be',
  'of',
  'a',
  'an',
  'the',
  'with',
  'has',
  'have',
  'had',
  'having',
  'whose',
  'that',
  'which',
  'where',
  'their',
  'its',
  'value',
  'been',
  'total',
  'own',
  'than',
  // "whose level is not higher than 4": the negation is read by the caller.
  'not',
]);

/** What a comparison is about, looking back from the comparator at i. */
export function comparedBefore(state: ParseState, i: number): { item: Item; agg: boolean; start: number } | null {
  for (let k = i - 1; k >= Math.max(0, i - 5); k--) {
    const w = word(state, k);
    if (state.consumed[k] && !state.mentionAt[k]) {
      if (SKIP_BACK.has(w)) continue;
      return null;
    }
    if (REVENUE_WORDS.has(w)) {
      const m = revenueMeasure(state);
      if (m) {
        consume(state, k, k + 1);
        return { item: { kind: 'aggregate', aggregate: { fn: 'sum', measure: m } }, agg: true, start: k };
      }
    }
    if (w === 'sold' || w === 'sell' || w === 'sells') {
      const m = unitsMeasure(state);
      if (m) {
        consume(state, k, k + 1);
        return { item: { kind: 'aggregate', aggregate: { fn: 'sum', measure: m } }, agg: true, start: k };
      }
    }
    const m = state.mentionAt[k];
    if (m && m.kind === 'column') {
      const c = resolveColumn(state, m);
      // Numbers stored as text (common in SQLite files) compare too; the column was named.
      if (columnInfo(state, c).pk && !columnInfo(state, c).numeric) return null;
      claim(state, m);
      const aggWord = AGG_WORDS[word(state, m.start - 1)];
      if (aggWord && !state.consumed[m.start - 1]) {
        consume(state, m.start - 1, m.start);
        return {
          item: { kind: 'aggregate', aggregate: { fn: aggWord, measure: { kind: 'column', column: c } } },
          agg: true,
          start: m.start - 1,
        };
      }
      if (isChildTable(state, c.table) && defaultAggregate(state, c) === 'avg') {
        return { item: { kind: 'aggregate', aggregate: { fn: 'avg', measure: { kind: 'column', column: c } } }, agg: true, start: m.start };
      }
      return { item: { kind: 'column', column: c }, agg: false, start: m.start };
    }
    if (m && m.kind === 'table') {
      // "orders over 500": the table's measure.
      const c = defaultMeasure(state, resolveTable(m));
      if (c) return { item: { kind: 'column', column: c }, agg: false, start: k + 1 };
      return null;
    }
    // Verbs and synonyms that name a column: "costs more than", "rated above".
    const synonyms = SYNONYMS[w] ?? SYNONYMS[state.tokens[k]?.lemma ?? ''];
    if (synonyms && !m) {
      const c = findColumn(
        state,
        synonyms.flatMap((s) => s.split(' ')),
        nearbyTables(state),
        (x) => x.numeric,
      );
      if (c) {
        consume(state, k, k + 1);
        if (isChildTable(state, c.table))
          return {
            item: { kind: 'aggregate', aggregate: { fn: defaultAggregate(state, c), measure: { kind: 'column', column: c } } },
            agg: true,
            start: k,
          };
        return { item: { kind: 'column', column: c }, agg: false, start: k };
      }
    }
    if (!SKIP_BACK.has(w) && !FILLER.has(w)) return null;
  }
  return null;
}

/** A WHERE comparison on a plain column (two for "between"); aggregates are ignored here. */
function addComparison(state: ParseState, item: Item, op: CompareOp, value: number, value2: number | null, pos: number): void {
  if (item.kind !== 'column') return;
  if (value2 !== null) {
    addCondition(state, { kind: 'compare', column: item.column, op: '>=', value }, pos);
    addCondition(state, { kind: 'compare', column: item.column, op: '<=', value: value2 }, pos);
  } else addCondition(state, { kind: 'compare', column: item.column, op, value }, pos);
}

const VERSUS_FNS: Record<string, 'avg' | 'min' | 'max'> = {
  average: 'avg',
  avg: 'avg',
  mean: 'avg',
  minimum: 'min',
  min: 'min',
  lowest: 'min',
  smallest: 'min',
  maximum: 'max',
  max: 'max',
  highest: 'max',
  largest: 'max',
};

/** "older than the average", "a weight below the average weight", "more staff than the
 * minimum staff": a comparison with an aggregate over the whole table (a scalar subquery). */
function readVersus(state: ParseState, i: number, n: number, op: CompareOp, comparative: { words: string[]; op: CompareOp } | null): void {
  const { mentionAt } = state;
  const at = skipWords(state, i + n, ['a', 'an', 'the', 'that', 'of', 'overall']);
  const fn = VERSUS_FNS[word(state, at)];
  if (!fn || state.consumed[at]) return;
  let end = at + 1;
  let named: ColumnRef | null = null;
  const k = skipWords(state, end, ['of', 'the', 'all']);
  const after = mentionAt[k];
  if (after && after.kind === 'column' && columnInfo(state, resolveColumn(state, after)).numeric) {
    named = resolveColumn(state, after);
    claim(state, after);
    end = after.end;
  }
  let compared: ColumnRef | null = null;
  if (comparative) compared = findColumn(state, comparative.words, nearbyTables(state), (x) => x.numeric || x.date);
  else {
    // "more staff than …": the column sits between the comparator's words.
    const inside = mentionAt[i + 1];
    if (inside && inside.kind === 'column' && word(state, inside.end) === 'than' && inside.end < at) {
      compared = resolveColumn(state, inside);
      claim(state, inside);
    } else {
      const before = comparedBefore(state, i);
      if (before && before.item.kind === 'column') compared = before.item.column;
    }
  }
  compared ??= named;
  if (!compared) return;
  const negate = word(state, i - 1) === 'not';
  const start = negate ? i - 1 : i;
  consume(state, start, end);
  addCondition(state, { kind: 'versus', column: compared, op: negate ? NEGATED[op] : op, fn, of: named ?? compared }, i);
}

export function readComparisons(state: ParseState): void {
  const { tokens, mentionAt } = state;
  for (let i = 0; i < tokens.length; i++) {
    if (state.consumed[i]) continue;
    let op: CompareOp | null = null;
    let n = 0;
    let comparative: { words: string[]; op: CompareOp } | null = null;
    const comparativeColumn = COMPARATIVE_COLUMNS[word(state, i)];
    if (comparativeColumn && word(state, i + 1) === 'than') {
      comparative = comparativeColumn;
      op = comparativeColumn.op;
      n = 2;
    }
    // "a greater weight than 10": the column sits inside the comparator.
    const split = COMPARATORS.find(([ws]) => ws.length === 2 && ws[1] === 'than' && ws[0] === word(state, i));
    const inside = mentionAt[i + 1];
    if (
      !op &&
      split &&
      inside &&
      inside.kind === 'column' &&
      word(state, inside.end) === 'than' &&
      numberAt(state, inside.end + 1) !== null
    ) {
      const c = resolveColumn(state, inside);
      const v = numberAt(state, inside.end + 1)!;
      claim(state, inside);
      consume(state, i, inside.end + 2);
      addComparison(state, { kind: 'column', column: c }, split[1], v, null, i);
      continue;
    }
    if (!op && word(state, i) === 'between') {
      op = '>=';
      n = 1;
    }
    if (!op) {
      for (const [pattern, o] of COMPARATORS) {
        if (pattern[0] === 'or') continue;
        const len = matchWords(state, i, pattern);
        if (len) {
          op = o;
          n = len;
          break;
        }
      }
    }
    if (!op) continue;
    let numberPos = skipWords(state, i + n, ['a', 'an', 'the', 'total', 'of', 'value']);
    // "above age 20": the column between comparator and number.
    let between: ColumnRef | null = null;
    const betweenMention = mentionAt[numberPos];
    if (betweenMention && betweenMention.kind === 'column' && numberAt(state, betweenMention.end) !== null) {
      between = resolveColumn(state, betweenMention);
      claim(state, betweenMention);
      numberPos = betweenMention.end;
    }
    const value = numberAt(state, numberPos);
    if (value === null) {
      readVersus(state, i, n, op, comparative);
      continue;
    }
    let value2: number | null = null;
    if (word(state, i) === 'between' && word(state, numberPos + 1) === 'and' && numberAt(state, numberPos + 2) !== null) {
      value2 = numberAt(state, numberPos + 2);
    }
    // "more than 1000 euros/dollars": currency words add nothing.
    let after = value2 !== null ? numberPos + 3 : numberPos + 1;
    after = skipWords(state, after, [
      'euro',
      'euros',
      'dollar',
      'dollars',
      'eur',
      'usd',
      'gbp',
      'pounds',
      'year',
      'years',
      'old',
      'different',
      'distinct',
      'separate',
    ]);
    const negate = word(state, i - 1) === 'not';
    if (negate) op = NEGATED[op];
    const startTok = negate ? i - 1 : i;
    const addHaving = (a: Aggregate): void => {
      const o = op!;
      if (value2 !== null) {
        state.having.push({ aggregate: a, op: '>=', value: value! }, { aggregate: a, op: '<=', value: value2 });
      } else state.having.push({ aggregate: a, op: o, value: value! });
    };
    // "at least 200 in stock": the column follows "in".
    if (word(state, after) === 'in' && mentionAt[after + 1]?.kind === 'column') after++;
    // After the number: a table ("more than 5 orders") or a measure word.
    const afterMention = mentionAt[after];
    if (
      !comparative &&
      afterMention &&
      afterMention.kind === 'table' &&
      (resolveTable(afterMention) !== state.subject || state.asked?.kind === 'column')
    ) {
      const table = resolveTable(afterMention);
      claim(state, afterMention);
      consume(state, startTok, after);
      const distinct = tokens.slice(numberPos, after).some((x) => ['different', 'distinct', 'separate'].includes(x.lower));
      if ((op === '<' || op === '<=' || (op === '=' && value === 0)) && value2 === null && !distinct && table !== state.subject) {
        state.relatedCounts.push({ target: table, op, value, conditions: [] });
      } else {
        addHaving({ fn: 'count', measure: { kind: 'rows', table } });
      }
      state.wantsEntityGroup = true;
      continue;
    }
    if (!comparative && (UNITS_WORDS.has(word(state, after)) || REVENUE_WORDS.has(word(state, after))) && !mentionAt[after]) {
      const m = UNITS_WORDS.has(word(state, after)) ? unitsMeasure(state) : revenueMeasure(state);
      if (m) {
        consume(state, startTok, after + 1);
        // "sold more than 100 units": the verb belongs to this measure.
        if (UNITS_WORDS.has(word(state, startTok - 1)) || REVENUE_WORDS.has(word(state, startTok - 1)))
          consume(state, startTok - 1, startTok);
        addHaving({ fn: 'sum', measure: m });
        state.wantsEntityGroup = true;
        continue;
      }
    }
    if (!comparative && afterMention && afterMention.kind === 'column' && columnInfo(state, resolveColumn(state, afterMention)).numeric) {
      const c = resolveColumn(state, afterMention);
      claim(state, afterMention);
      consume(state, startTok, after);
      addComparison(state, { kind: 'column', column: c }, op, value!, value2, i);
      continue;
    }
    let compared: { item: Item; agg: boolean } | null;
    if (between) {
      compared = { item: { kind: 'column', column: between }, agg: false };
    } else if (comparative) {
      const c = findColumn(state, comparative.words, nearbyTables(state), (x) => x.numeric || x.date);
      if (!c) continue;
      compared = { item: { kind: 'column', column: c }, agg: false };
    } else {
      compared = comparedBefore(state, i);
    }
    if (!compared) {
      const c = defaultMeasure(state, state.subject);
      if (!c)
        fail(
          `could not tell what "${tokens
            .slice(i, numberPos + 1)
            .map((x) => x.raw)
            .join(' ')}" compares`,
        );
      compared = { item: { kind: 'column', column: c }, agg: false };
    }
    consume(state, startTok, Math.max(after, numberPos + 1));
    if (compared.item.kind === 'aggregate') {
      addHaving(compared.item.aggregate);
      state.wantsEntityGroup = true;
    } else {
      addComparison(state, compared.item, op, value!, value2, i);
    }
  }
  // "N or more orders"
  for (let i = 0; i < tokens.length; i++) {
    const v = numberAt(state, i);
    if (v === null) continue;
    const n = matchWords(state, i + 1, ['or', 'more|less|fewer|greater|higher|lower|above|below']);
    if (!n) continue;
    const op: CompareOp = ['more', 'greater', 'higher', 'above'].includes(word(state, i + 2)) ? '>=' : '<=';
    const countedMention = mentionAt[skipWords(state, i + 1 + n, ['different'])];
    if (
      countedMention &&
      countedMention.kind === 'table' &&
      (resolveTable(countedMention) !== state.subject || state.asked?.kind === 'column')
    ) {
      claim(state, countedMention);
      consume(state, i, i + 1 + n);
      if (op === '<=' && resolveTable(countedMention) !== state.subject)
        state.relatedCounts.push({ target: resolveTable(countedMention), op, value: v, conditions: [] });
      else state.having.push({ aggregate: { fn: 'count', measure: { kind: 'rows', table: resolveTable(countedMention) } }, op, value: v });
      state.wantsEntityGroup = true;
      continue;
    }
    const before = comparedBefore(state, i);
    const item =
      before?.item ??
      (defaultMeasure(state, state.subject) ? { kind: 'column' as const, column: defaultMeasure(state, state.subject)! } : null);
    if (!item) continue;
    consume(state, i, i + 1 + n);
    if (item.kind === 'aggregate') {
      state.having.push({ aggregate: item.aggregate, op, value: v });
      state.wantsEntityGroup = true;
    } else addComparison(state, item, op, v, null, i);
  }
}
