// Reads what the read-only allowlist needs from a PostgreSQL connection's catalog (functions
// with their volatility and extension, operators, risky cast targets, the code of views and
// row security policies) and keeps it per connection. src/guard/read-policy.ts decides what
// the rows mean.
//
// Freshness (the reference read first here, the cache and its checks): see
// postgres-catalog-freshness.ts.
import { buildCatalogOffThread } from '../../guard/catalog-off-thread.ts';
import type { PostgresCatalog } from '../../guard/read-policy.ts';
import { readCatalogText, type CatalogQuery } from './postgres-catalog-rows.ts';
import { readFingerprint, type CatalogReference } from './postgres-catalog-freshness.ts';

export type { CatalogQuery } from './postgres-catalog-rows.ts';

export async function readCatalog(query: CatalogQuery): Promise<{ catalog: PostgresCatalog; fingerprint: CatalogReference }> {
  // With an empty search_path, pg_get_viewdef and pg_get_expr qualify every name outside
  // pg_catalog, so deparsed code names exactly the functions it calls.
  await query("SET LOCAL search_path = ''");
  // The catalog queries are estimated high enough to be JIT-compiled: ~0.5 s of compiling for
  // a few ms of work.
  await query('SET LOCAL jit = off');
  // The fingerprint is read first: a change landing during the load is seen by the next check.
  const fingerprint = await readFingerprint(query);
  const text = await readCatalogText(query);
  // Judging parses every view, policy and user function body: tens of milliseconds on a large
  // database, done on the guard's worker thread rather than the event loop.
  return { catalog: await buildCatalogOffThread(text), fingerprint };
}
