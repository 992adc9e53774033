// The catalog change check's arithmetic on transaction ids (src/engines/postgres/postgres-catalog-freshness.ts),
// on state rows shaped as the server returns them: xmin is 32 bits and wraps, so 64-bit ids are
// rebuilt from age() relative to the next id; a reference too far behind, from another server,
// or from a history that went backwards is never compared; frozen rows that alias an id in the
// window are judged by their content. (The real-server cases: catalog-check-late-commit.test.ts.)
import { describe, expect, it } from 'vitest';
import {
  compareState,
  ctidsOf,
  parseState,
  referenceOf,
  type CatalogReference,
} from '../src/engines/postgres/postgres-catalog-freshness.ts';

const SPACE = 2n ** 32n;

/** age(x) as PostgreSQL computes it: (int32)(next - x). */
const age = (next: bigint, xid: bigint) => Number(BigInt.asIntN(32, next - xid));

interface Fake {
  xmin: bigint;
  xmax: bigint;
  next: bigint;
  server?: string;
  /** catalog → row count and its recent rows as [64-bit xid, md5]. */
  catalogs: Record<string, { rows: number; recent?: [bigint, string][] }>;
}

/** The state query's rows (ctids as text[] literals, as dbq's text-only parsers give them) and
 * the recent rows' (d = N - xid in 32 bits, md5). */
function rows(f: Fake): [Record<string, unknown>[], Record<string, unknown>[]] {
  const state = Object.entries(f.catalogs).map(([catalog, c]) => ({
    snapshot: `${f.xmin}:${f.xmax}:`,
    age3: age(f.next, 3n),
    isolation: 'repeatable read',
    server: f.server ?? '1767225600/16384',
    catalog,
    rows: String(c.rows),
    recent: c.recent?.length ? `{${c.recent.map((_, i) => `"(0,${i + 1})"`).join(',')}}` : null,
  }));
  const recent = Object.entries(f.catalogs).flatMap(([catalog, c]) =>
    (c.recent ?? []).map(([xid, digest]) => ({ catalog, d: String(BigInt.asUintN(32, f.next - xid)), digest })),
  );
  return [state, recent];
}

const state = (f: Fake) => parseState(...rows(f));

describe('catalog check: transaction id arithmetic', () => {
  it('rebuilds 64-bit ids across an xid wraparound', () => {
    const s = state({
      xmin: SPACE - 50n,
      xmax: SPACE + 90n,
      next: SPACE + 100n,
      catalogs: {
        pg_proc: {
          rows: 3,
          recent: [
            [SPACE - 10n, 'a'],
            [SPACE + 5n, 'b'],
          ],
        },
      },
    });
    expect(s.next).toBe(SPACE + 100n);
    expect(s.recent.map((r) => r.xid)).toEqual([SPACE - 10n, SPACE + 5n]);
  });

  it('reads the recent ctids in either form node-postgres returns a text[] in', () => {
    expect(ctidsOf('{"(0,1)","(12,7)"}')).toEqual(['(0,1)', '(12,7)']);
    expect(ctidsOf(['(0,1)', '(12,7)'])).toEqual(['(0,1)', '(12,7)']);
    expect(ctidsOf(null)).toEqual([]);
  });

  it('keeps the reference while nothing changed, and moves it to the newer snapshot', () => {
    const base = { catalogs: { pg_proc: { rows: 3, recent: [[1_000n, 'a']] as [bigint, string][] } } };
    const ref = referenceOf(state({ xmin: 990n, xmax: 1_010n, next: 1_010n, ...base }));
    const later = compareState(ref, state({ xmin: 995n, xmax: 1_020n, next: 1_030n, ...base }));
    expect(later).not.toBeNull();
    expect(later!.xmin).toBe(995n);
    expect(later!.next).toBe(1_030n);
  });

  it('finds a row committed late by an id inside the window, and one newer than it', () => {
    const ref = referenceOf(state({ xmin: 990n, xmax: 1_010n, next: 1_010n, catalogs: { pg_proc: { rows: 3, recent: [[1_000n, 'a']] } } }));
    // 995 was in progress at the reference: same count (an UPDATE), one more window row.
    const late = state({
      xmin: 1_000n,
      xmax: 1_020n,
      next: 1_020n,
      catalogs: {
        pg_proc: {
          rows: 3,
          recent: [
            [1_000n, 'a'],
            [995n, 'b'],
          ],
        },
      },
    });
    expect(compareState(ref, late)).toBeNull();
    const newer = state({
      xmin: 1_000n,
      xmax: 1_020n,
      next: 1_020n,
      catalogs: {
        pg_proc: {
          rows: 3,
          recent: [
            [1_000n, 'a'],
            [1_015n, 'b'],
          ],
        },
      },
    });
    expect(compareState(ref, newer)).toBeNull();
  });

  it('judges a window row by its content: a frozen row aliasing the same id is the same row only if equal', () => {
    const ref = referenceOf(
      state({
        xmin: SPACE + 990n,
        xmax: SPACE + 1_010n,
        next: SPACE + 1_010n,
        catalogs: { pg_class: { rows: 5, recent: [[SPACE + 1_000n, 'old']] } },
      }),
    );
    const sameContent = state({
      xmin: SPACE + 995n,
      xmax: SPACE + 1_020n,
      next: SPACE + 1_020n,
      catalogs: { pg_class: { rows: 5, recent: [[SPACE + 1_000n, 'old']] } },
    });
    expect(compareState(ref, sameContent)).not.toBeNull();
    const otherContent = state({
      xmin: SPACE + 995n,
      xmax: SPACE + 1_020n,
      next: SPACE + 1_020n,
      catalogs: { pg_class: { rows: 5, recent: [[SPACE + 1_000n, 'new']] } },
    });
    expect(compareState(ref, otherContent)).toBeNull();
  });

  it('reloads on a count change, another server, ids going backwards, or a reference 2^30 ids old', () => {
    const base: Fake = { xmin: 990n, xmax: 1_010n, next: 1_010n, catalogs: { pg_proc: { rows: 3 }, pg_depend: { rows: 9 } } };
    const ref: CatalogReference = referenceOf(state(base));
    expect(compareState(ref, state(base))).not.toBeNull();
    expect(compareState(ref, state({ ...base, catalogs: { pg_proc: { rows: 3 }, pg_depend: { rows: 8 } } }))).toBeNull();
    expect(compareState(ref, state({ ...base, server: '1767312000/16384' }))).toBeNull();
    expect(compareState(ref, state({ ...base, xmax: 1_000n, next: 1_000n }))).toBeNull();
    expect(compareState(ref, state({ ...base, xmin: 990n + 2n ** 30n, xmax: 990n + 2n ** 30n, next: 990n + 2n ** 30n }))).toBeNull();
  });
});
