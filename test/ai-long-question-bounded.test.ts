// Nothing input-controlled costs more than linear-ish time: a 10,000-word question (a real
// phrase repeated, so every step has work on every token) is declined quickly on the
// synchronous path that runs on the event loop, and a question at the length cap is
// answered or declined within a few milliseconds.
import { describe, expect, it } from 'vitest';
import { GenerationFailedError } from '../src/errors.ts';
import { generateBuiltinSql, MAX_QUESTION_WORDS } from '../src/ai/builtin/index.ts';
import { tokenize } from '../src/ai/builtin/text.ts';
import { shopIndex } from './support/ai-parse.ts';

const index = shopIndex();

function timed(question: string): { ms: number; error: unknown } {
  const t0 = performance.now();
  let error: unknown = null;
  try {
    generateBuiltinSql(question, index, 'sqlite');
  } catch (err) {
    error = err;
  }
  return { ms: performance.now() - t0, error };
}

const phrases = [
  'Which customers in Berlin have more than 5 orders and not any reviews, ordered by name descending? ',
  'the most expensive product per category with an average rating above 4 but not in Books or Toys ',
  'how many orders per status sorted by count largest first total revenue by month in 2025 ',
];

describe('builtin generator on a very long question', () => {
  for (const phrase of phrases) {
    it(`declines 10,000 words of "${phrase.slice(0, 40)}…" quickly, naming the cap`, () => {
      const words = phrase.trim().split(/\s+/).length;
      const question = phrase.repeat(Math.ceil(10_000 / words));
      expect(question.split(/\s+/).filter(Boolean).length).toBeGreaterThanOrEqual(10_000);
      timed(question); // warm up
      const { ms, error } = timed(question);
      expect(error).toBeInstanceOf(GenerationFailedError);
      expect((error as Error).message).toMatch(/too long/);
      expect(ms).toBeLessThan(250);
    });

    it(`answers or declines a question at the cap (${MAX_QUESTION_WORDS} words) of "${phrase.slice(0, 30)}…" quickly`, () => {
      let question = '';
      while (tokenize(question + phrase).length <= MAX_QUESTION_WORDS) question += phrase;
      expect(tokenize(question).length).toBeGreaterThan(MAX_QUESTION_WORDS - 25);
      timed(question);
      const { ms, error } = timed(question);
      if (error) expect(error).toBeInstanceOf(GenerationFailedError);
      expect(ms).toBeLessThan(250);
    });
  }

  it('tokenizes in linear time: 4× the text costs well under 16× the time', () => {
    const q1 = phrases[0].repeat(250);
    const q4 = phrases[0].repeat(1000);
    tokenize(q1);
    const t0 = performance.now();
    tokenize(q1);
    const t1 = performance.now() - t0;
    const t2 = performance.now();
    tokenize(q4);
    const t4 = performance.now() - t2;
    expect(t4).toBeLessThan(Math.max(t1, 1) * 10 + 20);
  });
});
