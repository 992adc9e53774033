// plainQueryInput builds POST /api/query's input by hand for bodies that plainly pass
// queryInputSchema (zod's parse cost ~0.5 µs a request). It must give exactly zod's output,
// keys in the same order, and give up (null) on anything zod would refuse, so every refusal
// keeps zod's message. Checked here on every body of one or two fields changed from a valid one.
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { plainQueryInput, queryInputSchema } from '../src/query/input.ts';

const VALUES: unknown[] = [
  undefined,
  null,
  '',
  'pg',
  'x'.repeat(200),
  'x'.repeat(201),
  0,
  1,
  1.5,
  -1,
  1000,
  10_000,
  10_001,
  300_000,
  300_001,
  2 ** 53,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  true,
  false,
  [],
  [1, 'a', null, true],
  [[1]],
  [{ a: [1, { b: 2 }] }],
  [2 ** 60],
  new Array(10_001).fill(1),
  { a: 1 },
  'arrays',
  'objects',
  'other',
];
const KEYS = ['connectionId', 'sql', 'params', 'maxRows', 'timeoutMs', 'rowFormat', 'async', 'extra'];

function* bodies(): Generator<Record<string, unknown>> {
  const base = () => ({ connectionId: 'pg', sql: 'SELECT 1' }) as Record<string, unknown>;
  const set = (o: Record<string, unknown>, key: string, v: unknown) => {
    if (v === undefined) delete o[key];
    else o[key] = v;
  };
  yield base();
  for (const k1 of KEYS)
    for (const v1 of VALUES) {
      const one = base();
      set(one, k1, v1);
      yield one;
      for (const k2 of KEYS) {
        if (k2 <= k1) continue;
        for (const v2 of VALUES) {
          const two = { ...one };
          set(two, k2, v2);
          yield two;
        }
      }
    }
  yield { ...base(), async: undefined };
}

describe('plainQueryInput', () => {
  it("is zod's output, or null where zod refuses", () => {
    let built = 0;
    let mismatches = 0;
    for (const body of bodies()) {
      const plain = plainQueryInput(body);
      const parsed = queryInputSchema.safeParse(body);
      if (plain === null) continue;
      built++;
      const same = parsed.success && isDeepStrictEqual(plain, parsed.data) && Object.keys(plain).join() === Object.keys(parsed.data).join();
      if (!same) mismatches++;
      if (!same && mismatches <= 3) expect({ body, plain }).toEqual({ body, plain: parsed.success ? parsed.data : 'refused' });
    }
    expect(mismatches).toBe(0);
    // The fast path is taken for the common bodies, not only for the one above.
    expect(built).toBeGreaterThan(100);
  });

  it('gives up on what is not a plain JSON object', () => {
    for (const v of [null, undefined, 'x', 1, [], Object.create(null), new Map()]) expect(plainQueryInput(v)).toBeNull();
  });
});
