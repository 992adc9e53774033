// The negations pass: "never ordered", "without reviews", "have not placed any orders" record a
// NOT EXISTS on the related table with the span of its clause, so a condition said inside
// ("in 2024") later goes into the subquery.
import { describe, expect, it } from 'vitest';
import { parseThrough } from './support/ai-parse.ts';

describe('negations pass', () => {
  it('reads a verb after "never" as its table', () => {
    const state = parseThrough('Customers who never ordered', 'negations');
    expect(state.negatedExists).toEqual([{ negate: true, target: 'orders', conditions: [], pos: 2, end: 4 }]);
  });

  it('reads "without" + table', () => {
    const state = parseThrough('Products without reviews', 'negations');
    expect(state.negatedExists).toEqual([{ negate: true, target: 'reviews', conditions: [], pos: 1, end: 3 }]);
  });

  it('runs the clause to its end, leaving the date inside for the dates pass', () => {
    const state = parseThrough('Customers who have not placed any orders in 2024', 'negations');
    expect(state.negatedExists).toEqual([{ negate: true, target: 'orders', conditions: [], pos: 3, end: 9 }]);
    expect(state.consumed.slice(7)).toEqual([false, false]); // "in 2024"
  });

  it('records the date said inside the clause at a position within its span', () => {
    const state = parseThrough('Customers who have not placed any orders in 2024', 'leftovers');
    const [negation] = state.negatedExists;
    const pos = state.conditionPos.get(state.conditions[0])!;
    expect(pos).toBeGreaterThanOrEqual(negation.pos);
    expect(pos).toBeLessThanOrEqual(negation.end);
  });
});
