// Set questions on related rows, on the hand-made shop schema: "both A and B" needs a related
// row for each value (one EXISTS per value, not IN), "A but not B" a related row with A and
// none with B (NOT EXISTS), "not <value>" on a related table means no related row has it.
// Also the nested forms: a superlative that keeps its ties, a comparison with the average.
import { describe, expect, it } from 'vitest';
import { generateBuiltinSql } from '../src/ai/builtin/index.ts';
import { shopIndex } from './support/ai-parse.ts';

const sql = (q: string): string => generateBuiltinSql(q, shopIndex(), 'sqlite').sql;

describe('builtin set questions', () => {
  it('"both A and B" asks for a related row with each value', () => {
    expect(sql('Customers who have orders both shipped and delivered')).toBe(
      'SELECT customers.first_name, customers.last_name\nFROM customers\n' +
        "WHERE EXISTS (SELECT 1 FROM orders WHERE orders.customer_id = customers.id AND orders.status = 'shipped')\n" +
        "  AND EXISTS (SELECT 1 FROM orders WHERE orders.customer_id = customers.id AND orders.status = 'delivered')",
    );
  });

  it('"A but not B" keeps A and puts B in a NOT EXISTS', () => {
    expect(sql('Which customers have orders that are shipped but not delivered?')).toBe(
      'SELECT customers.first_name, customers.last_name\nFROM customers\n' +
        "WHERE EXISTS (SELECT 1 FROM orders WHERE orders.customer_id = customers.id AND orders.status = 'shipped')\n" +
        "  AND NOT EXISTS (SELECT 1 FROM orders WHERE orders.customer_id = customers.id AND orders.status = 'delivered')",
    );
  });

  it('a negated value of a related table means no related row has it', () => {
    expect(sql('Customers whose orders are not canceled')).toBe(
      'SELECT customers.first_name, customers.last_name\nFROM customers\n' +
        "WHERE NOT EXISTS (SELECT 1 FROM orders WHERE orders.customer_id = customers.id AND orders.status = 'canceled')",
    );
  });

  it("a superlative on the row's own column keeps its ties (a MAX subquery, not LIMIT 1)", () => {
    expect(sql('What is the most expensive product?')).toBe(
      'SELECT name, price\nFROM products\nWHERE price = (SELECT MAX(price) FROM products)',
    );
    // Asking only for the value: one row is the answer.
    expect(sql('What is the price of the most expensive product?')).toMatch(/LIMIT 1$|MAX\(price\)/);
  });

  it('nested comparison: a column against its average over the table', () => {
    expect(sql('Products with a price above the average price')).toBe(
      'SELECT name\nFROM products\nWHERE price > (SELECT AVG(price) FROM products)',
    );
  });
});
