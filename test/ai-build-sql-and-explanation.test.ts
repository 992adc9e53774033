// Plan → SQL and its explanation (build-sql.ts, explain.ts) on the hand-made shop schema: a
// condition on the "many" side becomes a correlated NOT EXISTS, an aggregate over line items
// joins from them towards the grouped table, and the sentence names what the SQL does.
import { describe, expect, it } from 'vitest';
import { generateBuiltinSql } from '../src/ai/builtin/index.ts';
import { shopIndex } from './support/ai-parse.ts';

describe('builtin SQL and its explanation', () => {
  it('writes a negated clause with its date as NOT EXISTS over a half-open range', () => {
    const out = generateBuiltinSql('Customers who have not placed any orders in 2024', shopIndex(), 'sqlite');
    expect(out.sql).toBe(
      'SELECT customers.first_name, customers.last_name\nFROM customers\n' +
        "WHERE NOT EXISTS (SELECT 1 FROM orders WHERE orders.customer_id = customers.id AND orders.ordered_at >= '2024-01-01' AND orders.ordered_at < '2025-01-01')",
    );
    expect(out.explanation).toBe('Lists customers (first name, last name) that have no orders where ordered at is in 2024.');
    expect(out.tables).toEqual(['customers', 'orders']);
  });

  it('sums revenue from the line items, grouped by the asked-for table, sorted and limited', () => {
    const out = generateBuiltinSql('Top 5 customers by revenue', shopIndex(), 'mysql');
    expect(out.sql).toBe(
      'SELECT customers.first_name, customers.last_name, SUM(order_items.quantity * order_items.unit_price) AS revenue\n' +
        'FROM order_items\n  JOIN orders ON order_items.order_id = orders.id\n  JOIN customers ON orders.customer_id = customers.id\n' +
        'GROUP BY customers.id, customers.first_name, customers.last_name\nORDER BY revenue DESC\nLIMIT 5',
    );
    expect(out.explanation).toBe(
      'Computes the total revenue (quantity × unit price of order items) for each customer, highest first, top 5 only.',
    );
  });
});
