// Schema linking: which spans of the question name a table, a column or a known value.
// Longest match wins, left to right; synonyms are tried only for spans that name nothing
// themselves. Candidates stay ambiguous here ("name" is a column of several tables); the
// parser picks one with the rest of the question as context.
import { AGG_WORDS, REVENUE_WORDS, SYNONYMS, UNITS_WORDS } from './lexicon.ts';
import type { SchemaIndex, ValueTarget } from './schema-index.ts';
import { STOPWORDS, type Token } from './text.ts';

export type Mention =
  | { kind: 'table'; start: number; end: number; cands: { table: string; score: number }[]; weak: boolean }
  | { kind: 'column'; start: number; end: number; cands: { table: string; column: string; score: number }[]; weak: boolean }
  | { kind: 'value'; start: number; end: number; cands: ValueTarget[]; weak: boolean };

// Words that are more often grammar than schema; linked only weakly, and only when they
// would otherwise be left over ("total" is orders.total in "a total over 500").
const WEAK = new Set([
  ...Object.keys(AGG_WORDS),
  'number',
  'count',
  'value',
  'amount',
  'most',
  'more',
  'less',
  'top',
  'order',
  'name',
  'date',
  'time',
  'type',
  'year',
  'month',
  'day',
  'age',
  'new',
  'old',
  'recent',
]);

function variants(tokens: Token[]): string[][] {
  let acc: string[][] = [[]];
  for (const t of tokens) {
    const opts = [t.lemma, ...(t.lower !== t.lemma ? [t.lower] : []), ...(SYNONYMS[t.lemma] ?? SYNONYMS[t.lower] ?? [])];
    const next: string[][] = [];
    for (const a of acc) for (const o of opts) if (next.length < 32) next.push([...a, o]);
    acc = next;
  }
  return acc;
}

export function linkQuestion(tokens: Token[], index: SchemaIndex): Mention[] {
  const out: Mention[] = [];
  const maxLen = Math.max(4, index.maxValueWords);
  let i = 0;
  while (i < tokens.length) {
    let found: Mention | null = null;
    for (let len = Math.min(maxLen, tokens.length - i); len >= 1 && !found; len--) {
      const span = tokens.slice(i, i + len);
      if (span.some((t) => t.kind === 'op' || t.kind === 'date')) continue;
      if (span[0].kind !== 'word' && span[0].kind !== 'quoted' && len === 1) continue;
      const allStop = span.every((t) => STOPWORDS.has(t.lower) || t.kind === 'number');
      // Known values first when the span is exactly a value as written ("Books", "Berlin").
      const valueKey = span.map((t) => t.lower).join(' ');
      const valueHits = index.values.get(valueKey);
      const exactCase = span.map((t) => t.raw).join(' ');
      const valueOk =
        valueHits &&
        !allStop &&
        (len > 1 || valueHits.some((v) => v.value === exactCase) || span[0].kind === 'quoted' || !WEAK.has(span[0].lower));
      // Schema phrases: as written, then with synonyms. A single stopword never links.
      let phrase: Mention | null = null;
      if (!(len === 1 && STOPWORDS.has(span[0].lower) && !WEAK.has(span[0].lower)) && span.every((t) => t.kind === 'word')) {
        const keys = [span.map((t) => t.lemma).join(' '), span.map((t) => t.lower).join(' '), span.map((t) => t.lower).join('_')];
        let hits = keys.map((k) => index.phrases.get(k)).find((h) => h && h.length > 0);
        let viaSynonym = false;
        if (!hits && len <= 3) {
          for (const v of variants(span)) {
            const h = index.phrases.get(v.join(' '));
            if (h && h.length > 0) {
              hits = h;
              viaSynonym = true;
              break;
            }
          }
        }
        // "units", "revenue", "sold" are measures the parser knows; only a column named
        // exactly so takes them from it.
        if (
          hits &&
          len === 1 &&
          (UNITS_WORDS.has(span[0].lower) || REVENUE_WORDS.has(span[0].lower)) &&
          (viaSynonym || hits.every((h) => h.score < 0.95))
        ) {
          hits = undefined;
        }
        if (hits) {
          const weak = len === 1 && WEAK.has(span[0].lower);
          const scale = viaSynonym ? 0.9 : 1;
          const tables = hits.filter((h) => h.kind === 'table');
          const best = Math.max(...hits.map((h) => h.score));
          const top = hits.filter((h) => h.score >= best - 0.05);
          if (tables.length > 0 && tables.some((t) => t.score >= best - 0.05)) {
            phrase = {
              kind: 'table',
              start: i,
              end: i + len,
              weak,
              cands: top.filter((h) => h.kind === 'table').map((h) => ({ table: h.table, score: h.score * scale })),
            };
          } else {
            const cols = top.filter((h): h is Extract<typeof h, { kind: 'column' }> => h.kind === 'column');
            phrase = {
              kind: 'column',
              start: i,
              end: i + len,
              weak,
              cands: cols.map((h) => ({ table: h.table, column: h.column, score: h.score * scale })),
            };
          }
        }
      }
      if (valueOk && (!phrase || (phrase.cands.every((c) => c.score < 1) && valueHits!.some((v) => v.value === exactCase)))) {
        found = { kind: 'value', start: i, end: i + len, cands: valueHits!, weak: false };
      } else if (phrase) {
        found = phrase;
      } else if (valueOk) {
        found = { kind: 'value', start: i, end: i + len, cands: valueHits!, weak: false };
      }
    }
    if (found) {
      out.push(found);
      i = found.end;
    } else i++;
  }
  return out;
}
