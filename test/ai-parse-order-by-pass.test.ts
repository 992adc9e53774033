// The order-by pass: "ordered by <measure> [direction]", "in descending order of X",
// "alphabetically" (the asked-for label) and "newest first" (the subject's date column).
import { describe, expect, it } from 'vitest';
import { parseThrough, unconsumedWords } from './support/ai-parse.ts';

describe('order-by pass', () => {
  it('reads "ordered by price descending"', () => {
    const state = parseThrough('List products ordered by price descending', 'order-by');
    expect(state.orderBy).toEqual([{ item: { kind: 'column', column: { table: 'products', column: 'price' } }, dir: 'DESC' }]);
    expect(unconsumedWords(state)).toEqual(['List', 'products']);
  });

  it('reads the direction first: "in descending order of price"', () => {
    const state = parseThrough('List products in descending order of price', 'order-by');
    expect(state.orderBy).toEqual([{ item: { kind: 'column', column: { table: 'products', column: 'price' } }, dir: 'DESC' }]);
  });

  it('sorts by a count of related rows: "sorted by the number of orders"', () => {
    const state = parseThrough('Customers sorted by the number of orders', 'order-by');
    expect(state.orderBy).toEqual([
      { item: { kind: 'aggregate', aggregate: { fn: 'count', measure: { kind: 'rows', table: 'orders' } } }, dir: 'ASC' },
    ]);
  });

  it('reads "alphabetically" and "newest first"', () => {
    expect(parseThrough('List categories alphabetically', 'order-by').orderBy).toEqual([
      { item: { kind: 'label', table: 'categories' }, dir: 'ASC' },
    ]);
    expect(parseThrough('Show orders newest first', 'order-by').orderBy).toEqual([
      { item: { kind: 'column', column: { table: 'orders', column: 'ordered_at' } }, dir: 'DESC' },
    ]);
  });
});
