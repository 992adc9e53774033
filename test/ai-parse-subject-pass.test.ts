// The subject pass: "who" asks for a person table, a column named right at the head is what
// is asked for, else the first table; a measure without a table makes its table the subject;
// a question naming nothing in the schema is refused.
import { describe, expect, it } from 'vitest';
import { parseThrough } from './support/ai-parse.ts';

describe('subject pass', () => {
  it('reads "who" as the person table', () => {
    const state = parseThrough('Who bought Books?', 'subject');
    expect(state.subject).toBe('customers');
    expect(state.asked).toEqual({ kind: 'table', table: 'customers', start: 0 });
  });

  it('takes a column named at the head as what is asked for', () => {
    const state = parseThrough('Which cities do customers live in?', 'subject');
    expect(state.subject).toBe('customers');
    expect(state.asked).toEqual({ kind: 'column', table: 'customers', column: { table: 'customers', column: 'city' }, start: 1, end: 2 });
  });

  it('takes the first table otherwise', () => {
    const state = parseThrough('Orders from Berlin', 'subject');
    expect(state.subject).toBe('orders');
    expect(state.asked).toEqual({ kind: 'table', table: 'orders', start: 0 });
  });

  it('makes the measured table the subject of "total revenue"', () => {
    const state = parseThrough('Total revenue', 'subject');
    expect(state.subject).toBe('order_items');
    expect(state.asked).toBeNull();
  });

  it('refuses a question that names nothing in the schema', () => {
    expect(() => parseThrough('What is the meaning of life', 'subject')).toThrow(/nothing in the question matches/);
  });
});
