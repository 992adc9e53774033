// Assembling the plan from the parse state: conditions said inside a negated clause go into
// its NOT EXISTS; an aggregate over related rows groups by the asked-for entity; a "by"
// grouping without an aggregate sorts instead; "per X" with a count groups and selects X; a
// related table after "with" is an EXISTS; a column asked for at the head lists distinct values.
import { describe, expect, it } from 'vitest';
import { planQuestion } from '../src/ai/builtin/index.ts';
import { shopIndex } from './support/ai-parse.ts';

const plan = (q: string) => planQuestion(q, shopIndex());
const customers = { kind: 'label', table: 'customers' };

describe('assembling the plan', () => {
  it('moves a condition inside a negated clause into its NOT EXISTS', () => {
    const p = plan('Customers who have not placed any orders in 2024');
    expect(p.conditions).toEqual([]);
    expect(p.exists).toEqual([
      {
        negate: true,
        target: 'orders',
        conditions: [{ kind: 'range', column: { table: 'orders', column: 'ordered_at' }, from: '2024-01-01', to: '2025-01-01' }],
      },
    ]);
  });

  it('groups by the asked-for entity when related rows are aggregated', () => {
    const p = plan('Customers with more than 5 orders');
    expect(p.groupBy).toEqual([customers]);
    expect(p.select).toEqual([customers]);
  });

  it('sorts by a "by" phrase when nothing is aggregated', () => {
    const p = plan('Customers by city');
    expect(p.groupBy).toEqual([]);
    expect(p.orderBy).toEqual([{ item: { kind: 'column', column: { table: 'customers', column: 'city' } }, dir: 'ASC' }]);
  });

  it('groups a count per entity and selects the entity first', () => {
    const p = plan('Number of orders per customer');
    expect(p.groupBy).toEqual([customers]);
    expect(p.select).toEqual([customers, { kind: 'aggregate', aggregate: { fn: 'count', measure: { kind: 'rows', table: 'orders' } } }]);
  });

  it('reads a related table after "with" as EXISTS, a column at the head as distinct values', () => {
    expect(plan('Customers with orders').exists).toEqual([{ negate: false, target: 'orders', conditions: [] }]);
    const cities = plan('Which cities do customers live in?');
    expect(cities.select).toEqual([{ kind: 'column', column: { table: 'customers', column: 'city' } }]);
    expect(cities.distinct).toBe(true);
  });
});
