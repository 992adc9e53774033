// The equalities pass: "out of stock", "order 42" (primary key), "rating 5", "5 stars" and
// "named 'Anna Schmidt'" (one word per first/last-name column) become equality conditions.
import { describe, expect, it } from 'vitest';
import { parseThrough } from './support/ai-parse.ts';

describe('equalities pass', () => {
  it('reads "out of stock" as stock = 0', () => {
    expect(parseThrough('Products that are out of stock', 'equalities').conditions).toEqual([
      { kind: 'compare', column: { table: 'products', column: 'stock' }, op: '=', value: 0 },
    ]);
  });

  it('reads "order 42" as the primary key', () => {
    expect(parseThrough('Show order 42', 'equalities').conditions).toEqual([
      { kind: 'compare', column: { table: 'orders', column: 'id' }, op: '=', value: 42 },
    ]);
  });

  it('reads "rating 5" and "5 stars" on the rating column', () => {
    const rating = { kind: 'compare', column: { table: 'reviews', column: 'rating' }, op: '=', value: 5 };
    expect(parseThrough('Reviews with rating 5', 'equalities').conditions).toEqual([rating]);
    expect(parseThrough('How many reviews gave 5 stars?', 'equalities').conditions).toEqual([rating]);
  });

  it('splits a two-word name over a first/last-name label', () => {
    expect(parseThrough("Customers named 'Anna Schmidt'", 'equalities').conditions).toEqual([
      { kind: 'in', column: { table: 'customers', column: 'first_name' }, values: ['Anna'], negate: false },
      { kind: 'in', column: { table: 'customers', column: 'last_name' }, values: ['Schmidt'], negate: false },
    ]);
  });
});
