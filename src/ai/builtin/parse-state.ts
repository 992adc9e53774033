// The parse state: the one object the parser's passes (passes/*.ts, run in the order listed in
// parse.ts) read and write. A pass recognises a kind of phrase, marks its tokens consumed and
// its schema mentions claimed, and records its part of the plan here; later passes skip what
// earlier ones consumed, and assemble.ts turns what is left into a Plan.
// Also the token helpers every pass shares (word at a position, phrase matching, consuming).
import { GenerationFailedError } from '../../errors.ts';
import type { Mention } from './link.ts';
import type { Aggregate, CompareOp, ColumnRef, Condition, ExistsCondition, Item, Plan } from './plan.ts';
import type { SchemaIndex } from './schema-index.ts';
import type { Token } from './text.ts';

export type ColumnMention = Extract<Mention, { kind: 'column' }>;
export type TableMention = Extract<Mention, { kind: 'table' }>;

/** What the question asks for: rows of a table, or the values of a column. */
export interface AskedFor {
  kind: 'table' | 'column';
  table: string;
  /** Set when kind is 'column'. */
  column?: ColumnRef;
  /** Tokens where it is named. */
  start: number;
  end?: number;
}

/** A NOT EXISTS found by the negation pass, with the span of its clause: conditions recorded
 * inside the span belong inside the subquery (assemble.ts moves them). */
export type NegatedExists = ExistsCondition & { pos: number; end: number };

export interface GroupCandidate {
  item: Item;
  pos: number;
  /** Said with "by", which means ORDER BY when nothing is aggregated. */
  viaBy: boolean;
}

export interface ParseState {
  readonly tokens: Token[];
  /** Schema links, left to right; merge-compounds may replace some. */
  readonly mentions: Mention[];
  readonly index: SchemaIndex;
  /** Per token: the mention covering it, if any. */
  readonly mentionAt: (Mention | null)[];
  /** Per token: already placed by a pass; later passes skip it. */
  readonly consumed: boolean[];
  /** Mentions a pass has given a meaning; the rest become projections or EXISTS. */
  readonly claimed: Set<Mention>;
  /** End of the question's head ("how many", "what are the", …). */
  headEnd: number;
  intent: 'list' | 'count' | 'aggregate';
  /** "different"/"distinct"/"unique" in the head. */
  distinct: boolean;
  /** The table whose rows the question is about. */
  subject: string | null;
  asked: AskedFor | null;
  selectAggregates: Aggregate[];
  conditions: Condition[];
  /** Token where each condition was said, for scoping it into a negation's clause. */
  readonly conditionPos: Map<Condition, number>;
  negatedExists: NegatedExists[];
  having: { aggregate: Aggregate; op: CompareOp; value: number }[];
  /** "fewer than 2 orders": correlated counts, so zero related rows still count. */
  relatedCounts: Plan['counts'];
  orderBy: { item: Item; dir: 'ASC' | 'DESC' }[];
  limit: number | null;
  groupCandidates: GroupCandidate[];
  /** An aggregate over related rows was asked per asked-for entity ("with more than 5 orders"). */
  wantsEntityGroup: boolean;
}

export function createParseState(tokens: Token[], mentions: Mention[], index: SchemaIndex): ParseState {
  const mentionAt: (Mention | null)[] = tokens.map(() => null);
  for (const m of mentions) for (let i = m.start; i < m.end; i++) mentionAt[i] = m;
  return {
    tokens,
    mentions,
    index,
    mentionAt,
    consumed: tokens.map(() => false),
    claimed: new Set<Mention>(),
    headEnd: 0,
    intent: 'list',
    distinct: false,
    subject: null,
    asked: null,
    selectAggregates: [],
    conditions: [],
    conditionPos: new Map<Condition, number>(),
    negatedExists: [],
    having: [],
    relatedCounts: [],
    orderBy: [],
    limit: null,
    groupCandidates: [],
    wantsEntityGroup: false,
  };
}

export function fail(reason: string): never {
  throw new GenerationFailedError(reason);
}

/** Lower-case word at i ('' past the end). */
export function word(state: ParseState, i: number): string {
  return state.tokens[i]?.lower ?? '';
}

/** Length of `pattern` (words; 'a|b' alternatives; '?' suffix optional) matched at i over
 * tokens not yet consumed, or 0. */
export function matchWords(state: ParseState, i: number, pattern: string[]): number {
  let j = i;
  for (const part of pattern) {
    const optional = part.endsWith('?');
    const alts = (optional ? part.slice(0, -1) : part).split('|');
    if (j < state.tokens.length && alts.includes(word(state, j)) && !state.consumed[j]) j++;
    else if (!optional) return 0;
  }
  return j - i;
}

export function consume(state: ParseState, from: number, to: number): void {
  for (let i = from; i < to && i < state.tokens.length; i++) state.consumed[i] = true;
}

export function claim(state: ParseState, mention: Mention | null | undefined): void {
  if (!mention) return;
  state.claimed.add(mention);
  consume(state, mention.start, mention.end);
}

/** Next index ≥ i that is not one of the filler `words` (a linked token is never skipped). */
export function skipWords(state: ParseState, i: number, words: ReadonlySet<string> | string[]): number {
  const set = Array.isArray(words) ? new Set(words) : words;
  let j = i;
  while (j < state.tokens.length && set.has(word(state, j)) && !state.mentionAt[j]) j++;
  return j;
}

/** The number at i, unless it is not a number or already consumed. */
export function numberAt(state: ParseState, i: number): number | null {
  const tok = state.tokens[i];
  return tok && tok.kind === 'number' && !state.consumed[i] ? (tok.num ?? null) : null;
}

export function isYearAt(state: ParseState, i: number): boolean {
  const tok = state.tokens[i];
  return !!tok && tok.kind === 'number' && /^\d{4}$/.test(tok.raw) && tok.num! >= 1900 && tok.num! <= 2100;
}

export function addCondition(state: ParseState, cond: Condition, pos: number): void {
  state.conditions.push(cond);
  state.conditionPos.set(cond, pos);
}
