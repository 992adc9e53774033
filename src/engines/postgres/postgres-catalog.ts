// Reads what the read-only allowlist needs from a PostgreSQL connection's catalog (functions
// with their volatility and extension, operators, risky cast targets, the code of views and
// row security policies) with the stamp its freshness is checked by. Raw rows only: the guard
// judges them (src/guard/read-policy.ts, on its worker thread) and keeps the result per
// connection (src/guard/postgres-catalog-cache.ts).
import { readCatalogText, type CatalogQuery, type CatalogText } from './postgres-catalog-rows.ts';
import { readFingerprint, type CatalogReference } from './postgres-catalog-freshness.ts';

export type { CatalogQuery } from './postgres-catalog-rows.ts';

/** The catalog rows, as JSON texts, and the stamp taken before them: a change landing during
 * the read is newer than the stamp, so the next check sees it. */
export interface CatalogSnapshot {
  text: CatalogText;
  stamp: CatalogReference;
}

export async function readCatalogSnapshot(query: CatalogQuery): Promise<CatalogSnapshot> {
  // With an empty search_path, pg_get_viewdef and pg_get_expr qualify every name outside
  // pg_catalog, so deparsed code names exactly the functions it calls.
  await query("SET LOCAL search_path = ''");
  // The catalog queries are estimated high enough to be JIT-compiled: ~0.5 s of compiling for
  // a few ms of work.
  await query('SET LOCAL jit = off');
  const stamp = await readFingerprint(query);
  const text = await readCatalogText(query);
  return { text, stamp };
}
