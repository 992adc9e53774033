// The composition root: builds every core dependency once from the Config and hands the
// bundle to the front doors (HTTP, MCP, CLI). No module singletons besides the logger.
import type { Kysely } from 'kysely';
import type { Config } from './config.ts';
import { toEngineConfig, fieldsOf, readFieldsOf } from './connections/connections.ts';
import { PoolRegistry } from './connections/pool-registry.ts';
import { createSecretBox, loadSecretKey, type SecretBox } from './connections/secret-box.ts';
import type { Engine, EngineConfig } from './engines/engine.ts';
import { createEngine } from './engines/index.ts';
import { createLimits, type Limits } from './limits/limits.ts';
import { createLogger, type Logger } from './logger.ts';
import type { ConnectionRow, Database } from './store/schema.ts';
import { openStore, type Store } from './store/store.ts';
import { AsyncQueries, DEFAULT_BUDGET_BYTES } from './query/async-queries.ts';
import { RunningQueries } from './query/running.ts';
import { ensureDefaultWorkspace } from './workspaces/workspaces.ts';

export interface Services {
  config: Config;
  store: Store;
  db: Kysely<Database>;
  secretBox: SecretBox;
  pools: PoolRegistry;
  logger: Logger;
  createEngine: (config: EngineConfig) => Engine;
  /** Called after a write statement ran on a connection (schema caches listen). */
  onWrite: Set<(connectionId: string) => void>;
  running: RunningQueries;
  /** Outcomes of `"async": true` queries, kept DBQ_RESULT_TTL in this process. */
  asyncQueries: AsyncQueries;
  /** Plan and failed-authentication rate limits (shared through Redis when configured). */
  limits: Limits;
}

export interface ServiceOptions {
  logger?: Logger;
}

export async function createServices(config: Config, opts: ServiceOptions = {}): Promise<Services> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  const store = await openStore({ dataDir: config.dataDir, storeUrl: config.storeUrl });
  await ensureDefaultWorkspace(store.db);
  const secretBox = createSecretBox(loadSecretKey(config.secretKey, config.dataDir));
  const engineOptions = (row: ConnectionRow) => ({
    sqliteDir: config.sqliteDir,
    maxConnections: row.max_connections,
    acquireTimeoutMs: config.poolAcquireTimeoutMs,
    connectTimeoutMs: config.connectionTestTimeoutMs,
  });
  const pools = new PoolRegistry(
    createEngine,
    (row) => toEngineConfig(fieldsOf(row, secretBox), engineOptions(row)),
    (row) => toEngineConfig(readFieldsOf(row, secretBox) ?? fieldsOf(row, secretBox), engineOptions(row)),
  );
  const limits = createLimits({ redisUrl: config.redisUrl, keyPrefix: config.redisKeyPrefix, logger });
  const asyncQueries = new AsyncQueries({
    ttlSeconds: config.resultTtlSeconds,
    budgetBytes: Math.max(DEFAULT_BUDGET_BYTES, 2 * config.maxResultBytes),
    logger,
  });
  return { config, store, db: store.db, secretBox, pools, logger, createEngine, onWrite: new Set(), running: new RunningQueries(), asyncQueries, limits };
}

export async function closeServices(svc: Services): Promise<void> {
  svc.asyncQueries.close();
  await svc.pools.closeAll();
  await svc.limits.close();
  await svc.store.close();
}
