// The dates pass: month, quarter, year, ISO date and "between A and B" become half-open ranges
// on the date column the phrase applies to (the verb's, the table's, the measure's); on an
// integer year column they become year comparisons.
import { describe, expect, it } from 'vitest';
import { SchemaIndex } from '../src/ai/builtin/schema-index.ts';
import { parseThrough, shopContext } from './support/ai-parse.ts';

const orderedAt = { table: 'orders', column: 'ordered_at' };

describe('dates pass', () => {
  it('reads a month, a quarter and a year span as ranges, upper bound exclusive', () => {
    expect(parseThrough('Orders in March 2025', 'dates').conditions).toEqual([
      { kind: 'range', column: orderedAt, from: '2025-03-01', to: '2025-04-01' },
    ]);
    expect(parseThrough('Orders in Q1 2025', 'dates').conditions).toEqual([
      { kind: 'range', column: orderedAt, from: '2025-01-01', to: '2025-04-01' },
    ]);
    expect(parseThrough('Orders between 2023 and 2024', 'dates').conditions).toEqual([
      { kind: 'range', column: orderedAt, from: '2023-01-01', to: '2025-01-01' },
    ]);
  });

  it('reads "since" and "before" as open ranges', () => {
    expect(parseThrough('Orders placed before 2024-06-01', 'dates').conditions).toEqual([
      { kind: 'range', column: orderedAt, from: null, to: '2024-06-01' },
    ]);
    const joined = parseThrough('Customers who joined since 2024', 'dates');
    // The verb names the column ("joined" → created_at) and is consumed with it.
    expect(joined.conditions).toEqual([
      { kind: 'range', column: { table: 'customers', column: 'created_at' }, from: '2024-01-01', to: null },
    ]);
  });

  it('compares years on an integer year column', () => {
    const ctx = shopContext();
    ctx.tables.push({
      schema: null,
      name: 'concerts',
      kind: 'table',
      foreignKeys: [],
      columns: [
        { name: 'id', type: 'INTEGER', nullable: false, primaryKey: true },
        { name: 'title', type: 'TEXT', nullable: false, primaryKey: false },
        { name: 'year', type: 'INTEGER', nullable: false, primaryKey: false },
      ],
    });
    const index = new SchemaIndex(ctx);
    const year = { table: 'concerts', column: 'year' };
    expect(parseThrough('Concerts in 2014', 'dates', index).conditions).toEqual([{ kind: 'compare', column: year, op: '=', value: 2014 }]);
    expect(parseThrough('Concerts in 2014 or 2016', 'dates', index).conditions).toEqual([
      { kind: 'in', column: year, values: [2014, 2016], negate: false },
    ]);
    expect(parseThrough('Concerts after 2013', 'dates', index).conditions).toEqual([
      { kind: 'compare', column: year, op: '>=', value: 2014 },
    ]);
  });
});
