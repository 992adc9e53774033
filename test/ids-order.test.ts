// History keyset paging walks `id` alone, so ids must sort in creation order as strings, also
// many within one millisecond, and keep the format the cursor decoder accepts.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { newId } from '../src/ids.ts';

describe('newId', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('has the documented shape', () => {
    expect(newId('h')).toMatch(/^h_[0-9a-z]{26}$/);
    expect(newId('q')).toMatch(/^q_[0-9a-z]{26}$/);
  });

  it('is strictly increasing, within a millisecond and across the random pool refills', () => {
    const ids = Array.from({ length: 5_000 }, () => newId('h'));
    for (let i = 1; i < ids.length; i++) expect(ids[i] > ids[i - 1]).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  // The time in the id is Date.now(): a fake clock moves it on instead of the test waiting.
  it('starts with the time, so ids of a later millisecond sort after', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const before = newId('h');
    vi.setSystemTime(Date.now() + 5);
    const after = newId('h');
    expect(after.slice(2, 12) > before.slice(2, 12)).toBe(true);
  });

  it('draws fresh randomness in each new millisecond', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const tails = new Set<string>();
    for (let i = 0; i < 5; i++) {
      tails.add(newId('h').slice(12));
      vi.setSystemTime(Date.now() + 2);
    }
    expect(tails.size).toBe(5);
  });
});
