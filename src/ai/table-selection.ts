// Which tables an LLM is shown for one question. A 500-table schema does not fit a prompt, and
// a model shown 40 tables it does not need picks wrong joins more often; so a schema whose
// CREATE TABLE text exceeds the budget is cut to the tables the question needs:
// - each table is scored against the question's words: its name (ranked like search_objects:
//   exact, prefix, substring), its synonyms and description (annotations or the database's
//   comment), its columns' names and synonyms, sample values, and the tables the examples
//   shown with the question read;
// - the best tables are joined up: the tables on the shortest foreign-key path between two of
//   them (order_items between orders and products) come next, then the rest by score, then
//   their foreign-key neighbours one hop and two hops out;
// - tables are added in that order while the rendered text stays within the budget.
// The caller reports the chosen names (`tablesOffered` in the response). Linear in the schema
// for the scoring; the path search is a BFS per pair of the few best tables.
import { questionWords } from '../annotations/examples.ts';
import { relevance } from '../schema/search-objects.ts';
import type { SchemaTable } from '../engines/engine.ts';
import { renderTable, sampleKey, type SchemaContext } from './schema-context.ts';

/** Characters of CREATE TABLE text a prompt may carry (about 3,000 tokens). */
export const SCHEMA_BUDGET_CHARS = 12_000;
/** Best tables whose pairs are joined up by foreign-key paths. */
const CONNECTED = 4;
const MAX_PATH = 3;

/** Words of an identifier or phrase, folded like questionWords ("OrderItems" → order, item). */
function identifierWords(name: string): Set<string> {
  return questionWords(name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/_/g, ' '));
}

function scoreTable(t: SchemaTable, asked: Set<string>, samples: Record<string, string[]>, fromExamples: Set<string>): number {
  let score = fromExamples.has(t.name) ? 5 : 0;
  const lower = t.name.toLowerCase();
  const nameWords = identifierWords(t.name);
  for (const w of asked) {
    if (w.length < 3) continue;
    if (nameWords.has(w)) score += 6;
    else if (lower.includes(w)) score += [4, 3, 2][relevance(lower, w)];
  }
  for (const s of t.synonyms ?? []) for (const w of identifierWords(s)) if (asked.has(w)) score += 5;
  let about = 0;
  if (t.description) for (const w of identifierWords(t.description)) if (asked.has(w)) about++;
  score += Math.min(about, 3);
  let columns = 0;
  let values = 0;
  for (const c of t.columns) {
    for (const w of identifierWords(c.name)) if (asked.has(w) && w !== 'id') columns++;
    for (const s of c.synonyms ?? []) for (const w of identifierWords(s)) if (asked.has(w)) columns += 2;
    for (const v of samples[sampleKey(t.name, c.name)] ?? []) for (const w of identifierWords(v)) if (asked.has(w)) values++;
  }
  return score + Math.min(columns, 4) + 2 * Math.min(values, 2);
}

/** Undirected foreign-key neighbours by table name. */
function neighbours(tables: SchemaTable[]): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>(tables.map((t) => [t.name, new Set<string>()]));
  for (const t of tables) {
    for (const fk of t.foreignKeys) {
      if (!graph.has(fk.refTable) || fk.refTable === t.name) continue;
      graph.get(t.name)!.add(fk.refTable);
      graph.get(fk.refTable)!.add(t.name);
    }
  }
  return graph;
}

/** The tables strictly between `from` and `to` on a shortest path of at most MAX_PATH hops. */
function between(graph: Map<string, Set<string>>, from: string, to: string): string[] {
  const prev = new Map<string, string>([[from, from]]);
  let frontier = [from];
  for (let hop = 0; hop < MAX_PATH && frontier.length > 0; hop++) {
    const next: string[] = [];
    for (const cur of frontier) {
      for (const n of graph.get(cur) ?? []) {
        if (prev.has(n)) continue;
        prev.set(n, cur);
        if (n === to) {
          const inner: string[] = [];
          for (let at = prev.get(to)!; at !== from; at = prev.get(at)!) inner.unshift(at);
          return inner;
        }
        next.push(n);
      }
    }
    frontier = next;
  }
  return [];
}

export interface TableChoice {
  /** Names of the tables to render, in the schema's order. */
  tables: string[];
  /** True when the whole schema fitted and nothing was left out. */
  all: boolean;
}

/** The tables to show a model for `question` within `budget` characters of schema text.
 * `exampleTables`: tables the examples shown with the question read. */
export function chooseTables(
  ctx: SchemaContext,
  question: string,
  exampleTables: string[] = [],
  budget = SCHEMA_BUDGET_CHARS,
): TableChoice {
  const names = ctx.tables.map((t) => t.name);
  // Each table measured once, as renderSchema writes it (plus its blank-line separator).
  const sizes = new Map(ctx.tables.map((t) => [t.name, renderTable(ctx, t).length + 2]));
  let total = 0;
  for (const size of sizes.values()) total += size;
  if (total <= budget) return { tables: names, all: true };

  const asked = questionWords(question);
  const fromExamples = new Set(exampleTables);
  const scored = ctx.tables
    .map((t, i) => ({ name: t.name, i, score: scoreTable(t, asked, ctx.samples, fromExamples) }))
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .map((s) => s.name);

  const graph = neighbours(ctx.tables);
  const best = scored.slice(0, CONNECTED);
  const bridges: string[] = [];
  for (let a = 0; a < best.length; a++) for (let b = a + 1; b < best.length; b++) bridges.push(...between(graph, best[a], best[b]));
  const byName = new Map(ctx.tables.map((t) => [t.name, t]));
  // One hop out from the best tables, both ways: what they point to (a label for an id) and
  // what points at them (order_items for orders: "revenue" often lives one table down).
  const referenced: string[] = [];
  for (const name of scored) for (const fk of byName.get(name)?.foreignKeys ?? []) referenced.push(fk.refTable);
  const referencing = best.flatMap((name) => [...(graph.get(name) ?? [])]);
  // Then a second hop, while the budget lasts: categories → products → order_items.
  const secondHop = referencing.flatMap((name) => [...(graph.get(name) ?? [])]);

  // Nothing in the question meets the schema: the first tables, so the model can still say so.
  const order = scored.length > 0 ? [...best, ...bridges, ...scored.slice(CONNECTED), ...referenced, ...referencing, ...secondHop] : names;
  const chosen = new Set<string>();
  let used = 0;
  for (const name of order) {
    const size = sizes.get(name);
    if (size === undefined || chosen.has(name)) continue;
    if (used + size > budget && chosen.size > 0) continue;
    chosen.add(name);
    used += size;
  }
  return { tables: names.filter((n) => chosen.has(n)), all: false };
}
