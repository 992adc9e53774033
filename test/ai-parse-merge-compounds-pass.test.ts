// The merge-compounds pass: a table word followed by a column of that table is one column
// mention ("order total" → orders.total), only after a singular table word; "first and last
// name" becomes the two name columns.
import { describe, expect, it } from 'vitest';
import { parseThrough } from './support/ai-parse.ts';

describe('merge-compounds pass', () => {
  it('reads "order total" as the column orders.total', () => {
    const state = parseThrough('Show each order total', 'merge-compounds');
    const at = state.mentionAt[2]!;
    expect(at.kind).toBe('column');
    expect(at.start).toBe(2);
    expect(at.end).toBe(4);
    expect(at.cands).toEqual([expect.objectContaining({ table: 'orders', column: 'total' })]);
    expect(state.mentions.filter((m) => m.start >= 2)).toEqual([at]);
  });

  it('leaves a plural table word before a column apart', () => {
    const state = parseThrough('List products price', 'merge-compounds');
    expect(state.mentionAt[1]?.kind).toBe('table');
    expect(state.mentionAt[2]?.kind).toBe('column');
  });

  it('reads "first and last name" as first_name and last_name', () => {
    const state = parseThrough('List the first and last name of customers', 'merge-compounds');
    const first = state.mentionAt[2]!;
    const last = state.mentionAt[4]!;
    expect(first.kind === 'column' && first.cands.map((c) => c.column)).toEqual(['first_name']);
    expect(last.kind === 'column' && last.cands.map((c) => c.column)).toEqual(['last_name']);
    expect(state.mentionAt[3]).toBeNull();
    expect(state.consumed[3]).toBe(true); // "and"
  });
});
