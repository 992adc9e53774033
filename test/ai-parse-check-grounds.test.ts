// The grounds check after assembling: the thing asked about must be known, a negation must
// have been placed, and most of the question must match the schema; otherwise the question
// is refused rather than answered with SQL that looks right and is wrong.
import { describe, expect, it } from 'vitest';
import { planQuestion } from '../src/ai/builtin/index.ts';
import { GenerationFailedError } from '../src/errors.ts';
import { shopIndex } from './support/ai-parse.ts';

const refusal = (q: string): string => {
  try {
    planQuestion(q, shopIndex());
  } catch (err) {
    expect(err).toBeInstanceOf(GenerationFailedError);
    return (err as Error).message;
  }
  throw new Error(`"${q}" was not refused`);
};

describe('grounds check', () => {
  it('refuses an unknown thing asked about', () => {
    expect(refusal('How many unicorns live in Berlin?')).toMatch(/"unicorns" does not match any table or column/);
  });

  it('refuses a negation nobody placed', () => {
    expect(refusal('Customers who are not happy')).toMatch(/could not tell what "not" applies to/);
    expect(refusal('Products never')).toMatch(/could not tell what "never" applies to/);
  });

  it('refuses a question mostly unknown to the schema', () => {
    expect(refusal('Show customers and purple elephants dancing wildly tonight')).toMatch(/too much of the question does not match/);
  });

  it('lets a grounded question through', () => {
    expect(planQuestion('Customers from Berlin', shopIndex()).conditions).toHaveLength(1);
  });
});
