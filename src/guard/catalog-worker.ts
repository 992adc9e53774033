// The catalog judge's worker thread (see catalog-off-thread.ts): builds the read policy from
// the catalog text the main thread read: the row objects are made, and every view, policy
// and user function body parsed, here.
import { parentPort } from 'node:worker_threads';
import { loadModule } from 'libpg-query';
import { collectPlpgsqlReferences, collectPostgresReferences } from './guard-postgres-references.ts';
import { parseCatalogRows, type CatalogText } from '../engines/postgres/postgres-catalog-rows.ts';
import { buildPostgresCatalog, type CollectReferences } from './read-policy.ts';
import type { PostgresReferences } from './verdict.ts';

const ready = loadModule();

// Most code is the same from one reload to the next (system and information_schema views, the
// functions nobody touched): its references are kept by text, so a reload after one DDL
// statement parses only what changed. Bounded by total text length.
const CACHE_CHARS = 32 * 1024 * 1024;
let cachedChars = 0;
const caches: Map<string, PostgresReferences | undefined>[] = [];

function cached(collect: CollectReferences): CollectReferences {
  const cache = new Map<string, PostgresReferences | undefined>();
  caches.push(cache);
  return (sql) => {
    if (cache.has(sql)) return cache.get(sql);
    const refs = collect(sql);
    if (cachedChars + sql.length > CACHE_CHARS) {
      for (const each of caches) each.clear();
      cachedChars = 0;
    }
    cache.set(sql, refs);
    cachedChars += sql.length;
    return refs;
  };
}

const collectors = { sql: cached(collectPostgresReferences), plpgsql: cached(collectPlpgsqlReferences) };

parentPort?.on('message', (job: { id: number; text: CatalogText }) => {
  ready
    .then(() => buildPostgresCatalog(parseCatalogRows(job.text), collectors))
    .then(
      (catalog) => parentPort?.postMessage({ id: job.id, catalog }),
      (error: unknown) => parentPort?.postMessage({ id: job.id, error: error instanceof Error ? error.message : String(error) }),
    );
});
