// The composition root: builds every core dependency once from the Config and hands the
// bundle to the front doors (HTTP, MCP, CLI). No module singletons besides the logger: state a
// core function keeps between calls (history's group commit, AI schema contexts, tool-set
// watches) is a field built here.
import type { Kysely } from 'kysely';
import type { Config } from './config.ts';
import { toEngineConfig, fieldsOf, readFieldsOf, workspaceSlugOf } from './connections/connections.ts';
import { PoolRegistry } from './connections/pool-registry.ts';
import { parseConnectionTargets, pinConnectionTarget, type ConnectionTargets } from './connections/connection-targets.ts';
import { loadSecretBox, loadSecretKey, type SecretBox } from './secrets/secret-box.ts';
import { workspaceSqliteDir } from './sqlite-files/sqlite-path.ts';
import { upgradeSqliteDir } from './sqlite-files/sqlite-upgrade.ts';
import { InternalError } from './errors.ts';
import type { Engine, EngineConfig } from './engines/engine.ts';
import { createEngine } from './engines/index.ts';
import { createLimits, type Limits } from './limits/limits.ts';
import { createLogger, type Logger } from './logger.ts';
import { openHistoryReader, type HistoryReader } from './history/history-reader.ts';
import { HistoryLog } from './history/history-log.ts';
import { AiState } from './ai/ai-state.ts';
import { ToolChanges } from './tools/tool-changes.ts';
import type { ConnectionRow, Database } from './store/schema.ts';
import { openStore, type Store } from './store/store.ts';
import { createPrivateDir, tightenDataDir } from './store/private-files.ts';
import { AsyncQueries, DEFAULT_BUDGET_BYTES } from './query/async-queries.ts';
import { ReadGuards } from './guard/connection-guard.ts';
import { RunningQueries } from './query/running.ts';
import { ensureDefaultWorkspace } from './workspaces/workspaces.ts';
import { SsoClients } from './sso/sso-clients.ts';
import { OAuthServers } from './oauth/provider.ts';

export interface Services {
  config: Config;
  store: Store;
  db: Kysely<Database>;
  secretBox: SecretBox;
  pools: PoolRegistry;
  /** What the read decision keeps per engine of `pools` (its catalog, views, the read login's
   * level): src/guard/connection-guard.ts. */
  readGuards: ReadGuards;
  logger: Logger;
  createEngine: (config: EngineConfig) => Engine;
  /** DBQ_CONNECTION_TARGETS, parsed; null: any host. */
  connectionTargets: ConnectionTargets | null;
  /** Called after a write statement ran on a connection (schema caches listen). */
  onWrite: Set<(connectionId: string) => void>;
  running: RunningQueries;
  /** `"async": true` queries, their outcomes kept DBQ_RESULT_TTL in the shared store, and the
   * running statements every process sees (`asyncQueries.shared`). */
  asyncQueries: AsyncQueries;
  /** Plan and failed-authentication rate limits (shared through Redis when configured). */
  limits: Limits;
  /** SQLite store: reads history pages that walk on worker threads; null on PostgreSQL,
   * whose walks run in its own backend. */
  historyReader: HistoryReader | null;
  /** Writes query history: the group commit and its compiled statements, for this store. */
  history: HistoryLog;
  /** SQL generation: the provider (made on first use) and the connections' schema contexts. */
  ai: AiState;
  /** Who listens to which workspace's curated tool set (MCP sessions), and the announcements. */
  toolChanges: ToolChanges;
  /** Each workspace's OAuth authorization server (src/oauth), made on first use. */
  oauth: OAuthServers;
  /** Each workspace's identity provider for single sign-on, as discovered (bounded in time,
   * cached): src/sso. */
  sso: SsoClients;
}

export interface ServiceOptions {
  logger?: Logger;
}

export async function createServices(config: Config, opts: ServiceOptions = {}): Promise<Services> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  // Before anything opens a file there: the store and secret.key are for the owner only.
  const tightened = tightenDataDir(config.dataDir);
  if (tightened.paths.length || tightened.failed.length) logger.warn(tightened, 'data dir permissions: group and other access removed');
  createPrivateDir(config.sqliteDir);
  const store = await openStore({ dataDir: config.dataDir, storeUrl: config.storeUrl, logger });
  await ensureDefaultWorkspace(store.db, config.defaultPlan);
  await upgradeSqliteDir(store.db, config.sqliteDir, logger);
  const secretKey = loadSecretKey(config.secretKey, config.dataDir);
  // Follows the data dir's key files through a `dbq secret rotate` (secret-box.ts).
  const secretBox = loadSecretBox(config.secretKey, config.dataDir, secretKey);
  const engineOptions = (row: ConnectionRow) => ({
    sqliteWorkspaceDir: row.engine === 'sqlite' ? workspaceSqliteDir(config.sqliteDir, slugOf(row)) : null,
    maxConnections: row.max_connections,
    acquireTimeoutMs: config.poolAcquireTimeoutMs,
    connectTimeoutMs: config.connectionTestTimeoutMs,
  });
  const connectionTargets = parseConnectionTargets(config.connectionTargets, { lookupTimeoutMs: config.connectionTestTimeoutMs });
  // Every engine, pooled or one-off (tests, reader logins), checks its host when it opens.
  const engineFactory = connectionTargets
    ? (engineConfig: EngineConfig) => createEngine(engineConfig, { beforeOpen: (c) => pinConnectionTarget(connectionTargets, c) })
    : createEngine;
  const pools = new PoolRegistry(
    engineFactory,
    (row) => toEngineConfig(fieldsOf(row, secretBox), engineOptions(row)),
    (row) => toEngineConfig(readFieldsOf(row, secretBox) ?? fieldsOf(row, secretBox), engineOptions(row)),
  );
  const limits = createLimits({ redisUrl: config.redisUrl, keyPrefix: config.redisKeyPrefix, logger });
  const running = new RunningQueries();
  const asyncQueries = new AsyncQueries({
    ttlSeconds: config.resultTtlSeconds,
    budgetBytes: Math.max(DEFAULT_BUDGET_BYTES, 2 * config.maxResultBytes),
    logger,
    db: store.db,
    running,
  });
  // No thread starts until a page needs one: CLI commands open services too.
  const historyReader = store.kind === 'sqlite' ? await openHistoryReader(store.db) : null;
  const onWrite = new Set<(connectionId: string) => void>();
  return {
    config,
    store,
    db: store.db,
    secretBox,
    pools,
    readGuards: new ReadGuards(),
    logger,
    createEngine: engineFactory,
    connectionTargets,
    onWrite,
    running,
    asyncQueries,
    limits,
    historyReader,
    history: new HistoryLog(store),
    ai: new AiState(config.ai, onWrite),
    toolChanges: new ToolChanges(store),
    oauth: new OAuthServers({ db: store.db, config, secretKey }),
    sso: new SsoClients(),
  };
}

/** Rows reach the pools from getConnectionRow, which brings the workspace's slug along. */
function slugOf(row: ConnectionRow): string {
  const slug = workspaceSlugOf(row);
  if (slug === null) throw new InternalError(new Error(`connection ${row.id} was not looked up with its workspace`));
  return slug;
}

export async function closeServices(svc: Services): Promise<void> {
  await svc.asyncQueries.close();
  await svc.pools.closeAll();
  await svc.limits.close();
  await svc.historyReader?.close();
  await svc.store.close();
}
