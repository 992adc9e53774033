// The head pass: "how many" / "number of" / "count" ask for a count, "how much" for an
// aggregate, anything else for a list; "different" in the head asks for distinct values;
// "how many units" is a sum of quantities, not a count of rows.
import { describe, expect, it } from 'vitest';
import { parseThrough, unconsumedWords } from './support/ai-parse.ts';

describe('head pass', () => {
  it('reads "how many different" as a distinct count and consumes the head', () => {
    const state = parseThrough('How many different cities do our customers come from?', 'head');
    expect(state.intent).toBe('count');
    expect(state.distinct).toBe(true);
    expect(state.headEnd).toBe(2);
    expect(unconsumedWords(state)[0]).toBe('cities');
  });

  it('reads "count the number of" as a count', () => {
    const state = parseThrough('Count the number of orders', 'head');
    expect(state.intent).toBe('count');
    expect(unconsumedWords(state)).toEqual(['orders']);
  });

  it('reads "how many units were sold" as the sum of line-item quantities', () => {
    const state = parseThrough('How many units were sold?', 'head');
    expect(state.intent).toBe('aggregate');
    expect(state.selectAggregates).toEqual([
      { fn: 'sum', measure: { kind: 'column', column: { table: 'order_items', column: 'quantity' } } },
    ]);
  });

  it('reads "how much" as an aggregate and anything else as a list', () => {
    expect(parseThrough('How much revenue did we make?', 'head').intent).toBe('aggregate');
    const list = parseThrough('List all customers', 'head');
    expect(list.intent).toBe('list');
    expect(list.headEnd).toBe(2); // the leading filler words
  });
});
