// The leftovers pass: quoted text goes to the column or table named before it, or after a
// verb to the verb's object's label; an unknown proper noun to a location column that may
// hold it; a name no column can hold is refused ("customers from Atlantis").
import { describe, expect, it } from 'vitest';
import { SchemaIndex } from '../src/ai/builtin/schema-index.ts';
import { parseThrough, shopContext } from './support/ai-parse.ts';

const productName = { table: 'products', column: 'name' };

describe('leftovers pass', () => {
  it('puts quoted text on the label of the table named before it', () => {
    expect(parseThrough("Reviews of the product 'Desk Lamp'", 'leftovers').conditions).toEqual([
      { kind: 'in', column: productName, values: ['Desk Lamp'], negate: false },
    ]);
  });

  it("puts quoted text after a verb on the verb's object", () => {
    expect(parseThrough("Customers who bought 'Desk Lamp'", 'leftovers').conditions).toEqual([
      { kind: 'in', column: productName, values: ['Desk Lamp'], negate: false },
    ]);
  });

  it('refuses a proper noun a column with complete samples lacks', () => {
    expect(() => parseThrough('Customers from Atlantis', 'leftovers')).toThrow(/"Atlantis" does not match/);
  });

  it('guesses a location column whose values were not sampled', () => {
    const ctx = shopContext();
    delete ctx.samples['customers.city'];
    const state = parseThrough('Customers from Lisbon', 'leftovers', new SchemaIndex(ctx));
    expect(state.conditions).toEqual([{ kind: 'in', column: { table: 'customers', column: 'city' }, values: ['Lisbon'], negate: false }]);
  });
});
