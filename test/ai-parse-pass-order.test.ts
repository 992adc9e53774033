// The builtin parser runs its passes in the one order listed in PASSES, ends with assemble and
// the grounds check, and refuses an empty question before any pass runs.
import { describe, expect, it } from 'vitest';
import { GenerationFailedError } from '../src/errors.ts';
import { PASSES, parseQuestion } from '../src/ai/builtin/parse.ts';
import { shopIndex } from './support/ai-parse.ts';

describe('parser pass order', () => {
  it('is one explicit list, each pass named once', () => {
    expect(PASSES.map((p) => p.name)).toEqual([
      'refuse-writes',
      'merge-compounds',
      'head',
      'subject',
      'order-by',
      'top-n',
      'negations',
      'dates',
      'likes',
      'comparisons',
      'superlatives',
      'aggregates',
      'group-by',
      'equalities',
      'values',
      'leftovers',
    ]);
  });

  it('refuses an empty question', () => {
    expect(() => parseQuestion([], [], shopIndex())).toThrow(GenerationFailedError);
    expect(() => parseQuestion([], [], shopIndex())).toThrow(/empty/);
  });
});
