// The comparisons pass: a column comparison is a WHERE condition, "more than 5 orders" a HAVING
// on a count of related rows grouped per asked-for entity, "fewer than 2 orders" a correlated
// count (zero orders must qualify), "N or more" / "between" / "in stock" their own forms.
import { describe, expect, it } from 'vitest';
import { parseThrough } from './support/ai-parse.ts';

describe('comparisons pass', () => {
  it('compares a column: "price over 100", "at least 200 in stock"', () => {
    expect(parseThrough('Products with a price over 100', 'comparisons').conditions).toEqual([
      { kind: 'compare', column: { table: 'products', column: 'price' }, op: '>', value: 100 },
    ]);
    expect(parseThrough('Products with at least 200 in stock', 'comparisons').conditions).toEqual([
      { kind: 'compare', column: { table: 'products', column: 'stock' }, op: '>=', value: 200 },
    ]);
  });

  it('reads "between A and B" on the default measure as two bounds', () => {
    const price = { table: 'products', column: 'price' };
    expect(parseThrough('Products between 10 and 20', 'comparisons').conditions).toEqual([
      { kind: 'compare', column: price, op: '>=', value: 10 },
      { kind: 'compare', column: price, op: '<=', value: 20 },
    ]);
  });

  it('counts related rows: HAVING for "more than", a correlated count for "fewer than"', () => {
    const more = parseThrough('Customers with more than 5 orders', 'comparisons');
    expect(more.having).toEqual([{ aggregate: { fn: 'count', measure: { kind: 'rows', table: 'orders' } }, op: '>', value: 5 }]);
    expect(more.wantsEntityGroup).toBe(true);
    const fewer = parseThrough('Customers with fewer than 2 orders', 'comparisons');
    expect(fewer.having).toEqual([]);
    expect(fewer.relatedCounts).toEqual([{ target: 'orders', op: '<', value: 2, conditions: [] }]);
  });

  it('reads "3 or more reviews" and "sold more than 100 units"', () => {
    expect(parseThrough('Products with 3 or more reviews', 'comparisons').having).toEqual([
      { aggregate: { fn: 'count', measure: { kind: 'rows', table: 'reviews' } }, op: '>=', value: 3 },
    ]);
    expect(parseThrough('Products that sold more than 100 units', 'comparisons').having).toEqual([
      { aggregate: { fn: 'sum', measure: { kind: 'column', column: { table: 'order_items', column: 'quantity' } } }, op: '>', value: 100 },
    ]);
  });
});
