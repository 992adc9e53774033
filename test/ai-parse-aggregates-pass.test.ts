// The aggregates pass: aggregate words before a measure ("average price", "average, minimum and
// maximum price"), "the number of T" anywhere, and bare measure words ("revenue per category")
// become SELECT aggregates and turn a list question into an aggregate one.
import { describe, expect, it } from 'vitest';
import { parseThrough } from './support/ai-parse.ts';

const price = { kind: 'column', column: { table: 'products', column: 'price' } };

describe('aggregates pass', () => {
  it('reads one function and a column', () => {
    const state = parseThrough('What is the average price of products?', 'aggregates');
    expect(state.selectAggregates).toEqual([{ fn: 'avg', measure: price }]);
    expect(state.intent).toBe('aggregate');
  });

  it('reads several functions over one column', () => {
    expect(parseThrough('Average, minimum and maximum price of products', 'aggregates').selectAggregates).toEqual([
      { fn: 'avg', measure: price },
      { fn: 'min', measure: price },
      { fn: 'max', measure: price },
    ]);
  });

  it('reads "the number of products" after the subject as a count', () => {
    expect(parseThrough('Categories and the number of products in each category', 'aggregates').selectAggregates).toEqual([
      { fn: 'count', measure: { kind: 'rows', table: 'products' } },
    ]);
  });

  it('reads a bare "revenue" as the sum of quantity × price', () => {
    const state = parseThrough('Revenue per category', 'aggregates');
    expect(state.selectAggregates).toEqual([
      { fn: 'sum', measure: { kind: 'line', table: 'order_items', quantity: 'quantity', price: 'unit_price' } },
    ]);
    expect(state.intent).toBe('aggregate');
  });
});
