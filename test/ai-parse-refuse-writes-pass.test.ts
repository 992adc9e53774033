// The refuse-writes pass: a question whose first word asks to change data is refused; the
// same verb later in a question is no request to change anything.
import { describe, expect, it } from 'vitest';
import { parseThrough } from './support/ai-parse.ts';

describe('refuse-writes pass', () => {
  it('refuses delete, update, drop … as the first word', () => {
    for (const q of ['delete all orders', 'Update the price of products', 'DROP customers', 'remove reviews']) {
      expect(() => parseThrough(q, 'refuse-writes')).toThrow(/read-only queries/);
    }
  });

  it('lets a question through when the verb is not its first word', () => {
    expect(() => parseThrough('How many orders were canceled or deleted?', 'refuse-writes')).not.toThrow();
    expect(() => parseThrough('List orders', 'refuse-writes')).not.toThrow();
  });
});
