// The top-n pass: "top N … by <measure>" is a limit and a descending sort; "the first N",
// "the N most …" a limit; "top customer(s)" without a number 1, or 10 for a plural.
import { describe, expect, it } from 'vitest';
import { parseThrough } from './support/ai-parse.ts';

const revenue = {
  kind: 'aggregate',
  aggregate: { fn: 'sum', measure: { kind: 'line', table: 'order_items', quantity: 'quantity', price: 'unit_price' } },
};

describe('top-n pass', () => {
  it('reads "top 5 customers by revenue" as a limit and a sort', () => {
    const state = parseThrough('Top 5 customers by revenue', 'top-n');
    expect(state.limit).toBe(5);
    expect(state.orderBy).toEqual([{ item: revenue, dir: 'DESC' }]);
  });

  it('reads "the first 10" and "the 3 most expensive" as limits only', () => {
    const first = parseThrough('Show the first 10 orders', 'top-n');
    expect(first.limit).toBe(10);
    expect(first.orderBy).toEqual([]);
    const most = parseThrough('The 3 most expensive products', 'top-n');
    expect(most.limit).toBe(3);
    expect(most.orderBy).toEqual([]); // the superlative pass sorts
  });

  it('limits "top customer" to 1 and "top customers" to 10', () => {
    expect(parseThrough('Who is the top customer?', 'top-n').limit).toBe(1);
    const plural = parseThrough('Top customers by revenue', 'top-n');
    expect(plural.limit).toBe(10);
    expect(plural.orderBy).toEqual([{ item: revenue, dir: 'DESC' }]);
  });
});
