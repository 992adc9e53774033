// The likes pass: "starts with", "containing … in their name", "not starting with" become LIKE
// conditions on the column named after the literal, else the one named before it, else the
// subject's label.
import { describe, expect, it } from 'vitest';
import { parseThrough } from './support/ai-parse.ts';

describe('likes pass', () => {
  it('reads a prefix on the column named before it', () => {
    expect(parseThrough("Customers whose last name starts with 'S'", 'likes').conditions).toEqual([
      { kind: 'like', column: { table: 'customers', column: 'last_name' }, pattern: 'S', negate: false, how: 'prefix' },
    ]);
  });

  it('reads the column named after the literal', () => {
    expect(parseThrough("Products containing 'pro' in their name", 'likes').conditions).toEqual([
      { kind: 'like', column: { table: 'products', column: 'name' }, pattern: 'pro', negate: false, how: 'contains' },
    ]);
  });

  it('negates after "not" and falls back to the subject label', () => {
    const state = parseThrough('Categories not starting with B', 'likes');
    expect(state.conditions).toEqual([
      { kind: 'like', column: { table: 'categories', column: 'name' }, pattern: 'B', negate: true, how: 'prefix' },
    ]);
    expect(state.consumed.slice(1)).toEqual([true, true, true, true]);
  });
});
