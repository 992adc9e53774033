// The superlatives pass: "the most orders", "the most expensive", "best selling", "the 3
// cheapest" sort first and limit to one row unless a limit was given; "what is the highest
// price" is left to the aggregates pass (the value is asked for, not a row).
import { describe, expect, it } from 'vitest';
import { parseThrough } from './support/ai-parse.ts';

describe('superlatives pass', () => {
  it('reads "the most orders" as a count of related rows, one row', () => {
    const state = parseThrough('The customer with the most orders', 'superlatives');
    expect(state.orderBy).toEqual([
      { item: { kind: 'aggregate', aggregate: { fn: 'count', measure: { kind: 'rows', table: 'orders' } } }, dir: 'DESC' },
    ]);
    expect(state.limit).toBe(1);
    expect(state.wantsEntityGroup).toBe(true);
  });

  it('reads "most expensive" as the price column and keeps a given limit', () => {
    const one = parseThrough('The most expensive product', 'superlatives');
    expect(one.orderBy).toEqual([{ item: { kind: 'column', column: { table: 'products', column: 'price' } }, dir: 'DESC' }]);
    expect(one.limit).toBe(1);
    const three = parseThrough('The 3 cheapest products', 'superlatives');
    expect(three.orderBy).toEqual([{ item: { kind: 'column', column: { table: 'products', column: 'price' } }, dir: 'ASC' }]);
    expect(three.limit).toBe(3);
  });

  it('reads "best selling" as units sold', () => {
    expect(parseThrough('The best selling product', 'superlatives').orderBy).toEqual([
      {
        item: {
          kind: 'aggregate',
          aggregate: { fn: 'sum', measure: { kind: 'column', column: { table: 'order_items', column: 'quantity' } } },
        },
        dir: 'DESC',
      },
    ]);
  });

  it('leaves "what is the highest price" to the aggregates pass', () => {
    const state = parseThrough('What is the highest price?', 'superlatives');
    expect(state.orderBy).toEqual([]);
    expect(state.limit).toBeNull();
    expect(parseThrough('What is the highest price?', 'aggregates').selectAggregates).toEqual([
      { fn: 'max', measure: { kind: 'column', column: { table: 'products', column: 'price' } } },
    ]);
  });
});
