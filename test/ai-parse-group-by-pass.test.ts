// The group-by pass: "per customer", "by city", "by month", "monthly" become group candidates
// (a table's label, a column, a date bucket); the agent of a verb ("placed by customers") is
// not a grouping.
import { describe, expect, it } from 'vitest';
import { parseThrough } from './support/ai-parse.ts';

describe('group-by pass', () => {
  it('reads "per customer" as the customers label', () => {
    expect(parseThrough('Number of orders per customer', 'group-by').groupCandidates).toEqual([
      { item: { kind: 'label', table: 'customers' }, pos: 3, viaBy: false },
    ]);
  });

  it('reads "by city" as a column, said with "by"', () => {
    expect(parseThrough('Customers by city', 'group-by').groupCandidates).toEqual([
      { item: { kind: 'column', column: { table: 'customers', column: 'city' } }, pos: 1, viaBy: true },
    ]);
  });

  it('reads "by month" and "monthly" as a month bucket of the measured date column', () => {
    const bucket = { kind: 'bucket', column: { table: 'orders', column: 'ordered_at' }, part: 'month' };
    expect(parseThrough('Revenue by month', 'group-by').groupCandidates).toEqual([{ item: bucket, pos: 1, viaBy: true }]);
    expect(parseThrough('Monthly revenue', 'group-by').groupCandidates).toEqual([{ item: bucket, pos: 0, viaBy: false }]);
  });

  it('does not group by the agent of a verb', () => {
    expect(parseThrough('Orders placed by customers', 'group-by').groupCandidates).toEqual([]);
  });
});
