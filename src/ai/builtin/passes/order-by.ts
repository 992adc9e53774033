// Pass: explicit sorting. "ordered by price descending", "sorted by the number of orders",
// "in descending order of age", "alphabetically", "newest first" → state.orderBy.
import type { Item } from '../plan.ts';
import { claim, consume, matchWords, skipWords, word, type ParseState } from '../parse-state.ts';
import { dateColumnFor, measurePhraseAt } from '../parse-phrases.ts';
import { resolveTable } from '../parse-schema.ts';

type Direction = 'ASC' | 'DESC';

/** Placeholder sort key: the aggregate the SELECT list shows (assemble.ts fills it in). */
export const AGGREGATE_SHOWN = '#aggregate';

const DIRECTION_PHRASES: [string[], Direction][] = [
  [['in', 'reverse|reversed|descending', 'alphabetical|alphabetic|lexicographical|lexicographic|alphabetic', 'order?'], 'DESC'],
  [['in', 'ascending', 'alphabetical|alphabetic|lexicographical|lexicographic', 'order?'], 'ASC'],
  [['in', 'descending|decreasing|reverse|reversed|desc', 'order?'], 'DESC'],
  [['in', 'ascending|increasing|alphabetical|alphabetic|asc', 'order?'], 'ASC'],
  [['descending|desc|decreasing|descendingly'], 'DESC'],
  [['ascending|asc|increasing|alphabetically|ascendingly'], 'ASC'],
  [
    [
      'from?',
      'the?',
      'highest|largest|biggest|most|greatest|newest|latest|youngest|oldest|longest|heaviest|tallest',
      'to',
      'the?',
      'lowest|smallest|least|fewest|oldest|earliest|youngest|shortest|lightest',
    ],
    'DESC',
  ],
  [
    [
      'from?',
      'the?',
      'lowest|smallest|least|fewest|oldest|earliest|youngest|shortest|lightest',
      'to',
      'the?',
      'highest|largest|biggest|most|greatest|newest|latest|oldest|youngest|longest|heaviest|tallest',
    ],
    'ASC',
  ],
  [['from?', 'high|large|big|old|long|heavy|tall', 'to', 'low|small|young|short|light'], 'DESC'],
  [['from?', 'low|small|young|short|light', 'to', 'high|large|big|old|long|heavy|tall'], 'ASC'],
  [['newest|latest|highest|largest|biggest', 'first'], 'DESC'],
  [['oldest|earliest|lowest|smallest|cheapest', 'first'], 'ASC'],
];

/** A sort direction phrase at i ("descending", "from highest to lowest", "newest first"). */
export function directionAt(state: ParseState, i: number): { dir: Direction | null; end: number } {
  for (const [pattern, dir] of DIRECTION_PHRASES) {
    const n = matchWords(state, i, pattern);
    if (n) {
      let d = dir;
      // "from the oldest to the youngest" on an age column means age descending.
      const words = state.tokens.slice(i, i + n).map((x) => x.lower);
      if (words.includes('oldest') && words.includes('youngest')) d = words.indexOf('oldest') < words.indexOf('youngest') ? 'DESC' : 'ASC';
      return { dir: d, end: i + n };
    }
  }
  return { dir: null, end: i };
}

export function readOrderPhrases(state: ParseState): void {
  const tokens = state.tokens;
  for (let i = 0; i < tokens.length; i++) {
    let n = matchWords(state, i, [
      'ordered|sorted|order|sort|arranged|ranked|rank|organized|organised|listed',
      'the|them?',
      'results|result|list|rows?',
      'by|on|according',
    ]);
    if (n && word(state, i + n - 1) === 'according') n += matchWords(state, i + n, ['to']);
    let directionFirst: Direction | null = null;
    if (!n) {
      const d = directionAt(state, i);
      if ((d.dir && word(state, d.end) === 'of') || (d.dir && word(state, d.end) === 'by')) {
        directionFirst = d.dir;
        n = d.end - i + 1;
      } else if (
        d.dir &&
        ['alphabetically', 'alphabetical', 'alphabetic', 'lexicographical', 'lexicographic'].some((x) =>
          tokens.slice(i, d.end).some((y) => y.lower === x),
        )
      ) {
        consume(state, i, d.end);
        // The empty table stands for the column asked for; assemble.ts fills it in.
        state.orderBy.push({ item: { kind: 'label', table: state.asked?.kind === 'column' ? '' : (state.subject ?? '') }, dir: d.dir });
        continue;
      } else if (
        d.dir &&
        tokens.slice(i, d.end).some((y) => y.lower === 'first') &&
        !tokens.slice(i, d.end).some((y) => ['newest', 'latest', 'oldest', 'earliest'].includes(y.lower))
      ) {
        // "largest first", "smallest first": the aggregate shown, else what is asked for
        // (assemble.ts resolves the placeholder once the aggregates are known).
        consume(state, i, d.end);
        state.orderBy.push({ item: { kind: 'label', table: AGGREGATE_SHOWN }, dir: d.dir });
        continue;
      } else if (d.dir && tokens.slice(i, d.end).some((y) => y.lower === 'first')) {
        // "newest first": the date column of the subject.
        const c = dateColumnFor(state, i);
        if (c) {
          consume(state, i, d.end);
          state.orderBy.push({ item: { kind: 'column', column: c }, dir: d.dir });
        }
        continue;
      } else if (d.dir && tokens.slice(i, d.end).some((y) => y.lower === 'order' || y.lower === 'descending' || y.lower === 'ascending')) {
        // "list the earnings in descending order": the thing asked for, sorted.
        if (state.orderBy.length > 0) continue;
        // "sort the shops by number of products in descending order": the key after "by".
        let by = -1;
        for (let k = i - 1; k >= Math.max(0, i - 6); k--) if (word(state, k) === 'by' && !state.consumed[k]) by = k;
        const keyed = by >= 0 ? measurePhraseAt(state, by + 1) : null;
        if (keyed && keyed.end <= i) {
          consume(state, by, keyed.end);
          consume(state, i, d.end);
          state.orderBy.push({ item: keyed.item, dir: d.dir });
          continue;
        }
        consume(state, i, d.end);
        state.orderBy.push({ item: { kind: 'label', table: '' }, dir: d.dir });
        continue;
      } else continue;
    }
    let at = i + n;
    // "sorted by count", "ordered by the number": the count shown, or the subject's rows.
    const countAt = skipWords(state, at, ['the', 'their', 'its']);
    if (['count', 'frequency', 'number', 'size'].includes(word(state, countAt)) && word(state, countAt + 1) !== 'of') {
      const m = state.mentionAt[countAt];
      if (!m || m.weak) {
        if (m) claim(state, m);
        consume(state, i, countAt + 1);
        const after = directionAt(state, countAt + 1);
        if (after.dir) consume(state, countAt + 1, after.end);
        state.orderBy.push({ item: { kind: 'label', table: AGGREGATE_SHOWN }, dir: directionFirst ?? after.dir ?? 'DESC' });
        continue;
      }
    }
    // "ordered by ascending age": the direction before the key.
    const before = directionAt(state, at);
    if (before.dir && !directionFirst) {
      directionFirst = before.dir;
      consume(state, at, before.end);
      at = before.end;
    }
    const measure = measurePhraseAt(state, at);
    let item: Item | null = measure?.item ?? null;
    let end = measure?.end ?? at;
    if (!item) {
      const m = state.mentionAt[skipWords(state, at, ['the', 'their', 'its'])];
      if (m && m.kind === 'table') {
        item = { kind: 'label', table: resolveTable(m) };
        claim(state, m);
        end = m.end;
      } else continue;
    }
    consume(state, i, at);
    consume(state, at, end);
    const after = directionAt(state, skipWords(state, end, ['and', ',']));
    if (after.dir) consume(state, end, after.end);
    state.orderBy.push({ item, dir: directionFirst ?? after.dir ?? 'ASC' });
  }
}
