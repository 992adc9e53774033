// Question → Plan. The passes below run in order over one parse state (parse-state.ts); each
// recognises one kind of phrase, consumes its tokens and records its part of the plan in
// schema terms (passes/<pass>.ts, one module each). What is left decides the SELECT list
// (passes/assemble.ts). Refuses (GenerationFailedError) when the question names nothing in the
// schema, or leaves a number, quoted text or the thing asked about unplaced: an answer
// without grounds would look right and be wrong (passes/check-grounds.ts).
import type { Mention } from './link.ts';
import type { Plan } from './plan.ts';
import { createParseState, fail, type ParseState } from './parse-state.ts';
import { readAggregates } from './passes/aggregates.ts';
import { assemblePlan } from './passes/assemble.ts';
import { checkGrounds } from './passes/check-grounds.ts';
import { readComparisons } from './passes/comparisons.ts';
import { readDates } from './passes/dates.ts';
import { readEqualities } from './passes/equalities.ts';
import { readGroupPhrases } from './passes/group-by.ts';
import { readHead } from './passes/head.ts';
import { readLeftovers } from './passes/leftovers.ts';
import { readLikePatterns } from './passes/likes.ts';
import { mergeCompounds } from './passes/merge-compounds.ts';
import { readNegations } from './passes/negations.ts';
import { readOrderPhrases } from './passes/order-by.ts';
import { refuseWrites } from './passes/refuse-writes.ts';
import { findSubject } from './passes/subject.ts';
import { readSuperlatives } from './passes/superlatives.ts';
import { readTopN } from './passes/top-n.ts';
import { readValues } from './passes/values.ts';
import type { SchemaIndex } from './schema-index.ts';
import type { Token } from './text.ts';

export interface ParsePass {
  name: string;
  run: (state: ParseState) => void;
}

// The order matters: a pass skips tokens an earlier pass consumed and mentions it claimed, so
// where two passes could read the same words, the earlier one wins. The reasons below were
// checked by moving the pass and re-running `npm run eval:ai` (shop set and Spider dev);
// where no reason is given, swapping the pass with its neighbour changed no answer there.
export const PASSES: readonly ParsePass[] = [
  // First: a request to change data is refused before anything reads it as a question.
  { name: 'refuse-writes', run: refuseWrites },
  // Before any pass looks a mention up: "order total" is the column orders.total, not the
  // orders table followed by some total; "first and last name" is two columns.
  { name: 'merge-compounds', run: mergeCompounds },
  // Before the subject: the subject is looked for after the head, so in "how many different
  // cities do customers come from" the column right after the head is what is counted.
  { name: 'head', run: readHead },
  // Before every pass below: they resolve a column name shared by several tables towards
  // the subject's, and the negation pass needs the subject to find the related table.
  { name: 'subject', run: findSubject },
  // Before superlatives: "ordered by price from highest to lowest" is a direction, not
  // "the highest" (which would also add LIMIT 1).
  { name: 'order-by', run: readOrderPhrases },
  // Before superlatives: in "top 3 highest rating TV series" the 3 is the limit, so "highest
  // rating" sorts rows instead of asking for MAX(rating).
  { name: 'top-n', run: readTopN },
  // Only records each negated clause's span; conditions found later are moved into it by
  // position (assemble.ts).
  { name: 'negations', run: readNegations },
  // Before comparisons and superlatives: "after 2013" is a date range on the date column the
  // phrase applies to, not the number 2013 compared with something.
  { name: 'dates', run: readDates },
  // Before equalities: "the paragraph with text 'Korea'" is LIKE '%Korea%', not equality.
  { name: 'likes', run: readLikePatterns },
  // Before aggregates: "an average rating above 4" is a HAVING, not an average to select, and
  // "at least 200 in stock" a condition, not a number left unplaced.
  { name: 'comparisons', run: readComparisons },
  // Before aggregates: "the 5 largest orders", "the category with the highest revenue" sort
  // rows; the aggregate pass takes what superlatives leave ("what is the highest price").
  { name: 'superlatives', run: readSuperlatives },
  { name: 'aggregates', run: readAggregates },
  { name: 'group-by', run: readGroupPhrases },
  // Before values only for the order the conditions are written in.
  { name: 'equalities', run: readEqualities },
  // Before leftovers: a value the samples know is placed on its own column.
  { name: 'values', run: readValues },
  // Last: what no pass placed is placed here or refused ("5 stars" and "order 42" would be
  // numbers nobody placed if equalities had not run).
  { name: 'leftovers', run: readLeftovers },
];

export function parseQuestion(tokens: Token[], mentions: Mention[], index: SchemaIndex): Plan {
  if (tokens.length === 0) fail('the question is empty');
  const state = createParseState(tokens, mentions, index);
  for (const pass of PASSES) pass.run(state);
  const plan = assemblePlan(state);
  checkGrounds(state, plan);
  return plan;
}
