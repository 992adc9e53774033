// The values pass: sampled values become equalities on their column, several values of one
// column an IN list, a value after "not" an inequality; a table word right after a value of
// its own column ("the Books category") is part of the value.
import { describe, expect, it } from 'vitest';
import { parseThrough } from './support/ai-parse.ts';

describe('values pass', () => {
  it('gathers values of one column into one IN', () => {
    expect(parseThrough('Customers from Berlin or Paris', 'values').conditions).toEqual([
      { kind: 'in', column: { table: 'customers', column: 'city' }, values: ['Berlin', 'Paris'], negate: false },
    ]);
  });

  it('negates a value after "not"', () => {
    const state = parseThrough('Orders that are not shipped', 'values');
    expect(state.conditions).toEqual([{ kind: 'in', column: { table: 'orders', column: 'status' }, values: ['shipped'], negate: true }]);
    expect(state.consumed[3]).toBe(true); // "not"
  });

  it('claims the table word after a value of its own column', () => {
    const state = parseThrough('Products in the Books category', 'values');
    expect(state.conditions).toEqual([{ kind: 'in', column: { table: 'categories', column: 'name' }, values: ['Books'], negate: false }]);
    expect([...state.claimed].map((m) => m.kind).sort()).toEqual(['table', 'value']);
  });
});
