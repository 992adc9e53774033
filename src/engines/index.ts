// Picks the adapter for a connection's engine. The only place that knows all three.
//
// Each adapter module (and its driver: mysql2, pg, the SQLite child runner) is imported on the
// first call an engine of that kind receives, not at start-up: a server that only talks to
// PostgreSQL never loads mysql2 (idle memory). The returned Engine is a thin
// forwarder; `name` and `capabilities` are known without loading the adapter.

import type {
  Capabilities,
  Engine,
  EngineConfig,
  EngineFactory,
  EngineName,
  ExecuteOptions,
  ExecuteResult,
  RowStream,
  SchemaTable,
  ObjectSearch,
  SchemaObject,
  StatementInfo,
  StreamOptions,
  TestResult,
} from './engine.ts';
import type { ReadAccess } from './engine.ts';
import { lazy } from '../lazy.ts';
import type { MysqlExpressionRow, MysqlViews } from './mysql/mysql-catalog.ts';
import type { CatalogSnapshot } from './postgres/postgres-catalog.ts';
import type { CatalogReference } from './postgres/postgres-catalog-freshness.ts';

const LOADERS: Record<EngineName, () => Promise<EngineFactory>> = {
  postgres: lazy(async () => (await import('./postgres/postgres.ts')).createPostgresEngine),
  mysql: lazy(async () => (await import('./mysql/mysql.ts')).createMysqlEngine),
  sqlite: lazy(async () => (await import('./sqlite/sqlite.ts')).createSqliteEngine),
};

/** The adapters' own values (test/engine-lazy.test.ts checks they agree). */
export const CAPABILITIES: Record<EngineName, Capabilities> = {
  postgres: { placeholder: '$n', hasSchemas: true },
  mysql: { placeholder: '?', hasSchemas: false },
  sqlite: { placeholder: '?', hasSchemas: false },
};

export interface CreateEngineOptions {
  /** Runs before the adapter is built, on first use; it may refuse (the next call asks again)
   * or adjust the config (DBQ_CONNECTION_TARGETS: src/connections/connection-targets.ts). */
  beforeOpen?: (config: EngineConfig) => Promise<EngineConfig>;
}

export function createEngine(config: EngineConfig, opts: CreateEngineOptions = {}): Engine {
  const load = LOADERS[config.engine];
  if (!load) throw new Error(`unknown engine ${String(config.engine)}`);
  return new LazyEngine(config, load, opts.beforeOpen);
}

class LazyEngine implements Engine {
  readonly name: EngineName;
  readonly capabilities: Capabilities;
  private engine: Engine | null = null;
  private loading: Promise<Engine> | null = null;
  private closed = false;

  constructor(
    private readonly config: EngineConfig,
    private readonly loadFactory: () => Promise<EngineFactory>,
    private readonly beforeOpen?: (config: EngineConfig) => Promise<EngineConfig>,
  ) {
    this.name = config.engine;
    this.capabilities = CAPABILITIES[config.engine];
  }

  private adapter(): Promise<Engine> {
    if (this.engine) return Promise.resolve(this.engine);
    this.loading ??= Promise.all([this.loadFactory(), this.beforeOpen ? this.beforeOpen(this.config) : this.config]).then(
      ([factory, config]) => {
        const engine = factory(config);
        // Used after close(): behave as a closed adapter does (the call fails), open nothing.
        if (this.closed) void engine.close().catch(() => {});
        return (this.engine = engine);
      },
      (err: unknown) => {
        this.loading = null;
        throw err;
      },
    );
    return this.loading;
  }

  // Not async: once loaded, a query goes straight to the adapter without an extra promise.
  execute(opts: ExecuteOptions): Promise<ExecuteResult> {
    return this.engine ? this.engine.execute(opts) : this.adapter().then((engine) => engine.execute(opts));
  }

  async stream(opts: StreamOptions): Promise<RowStream> {
    const engine = this.engine ?? (await this.adapter());
    return engine.stream!(opts);
  }

  async validate(sql: string): Promise<void> {
    return (await this.adapter()).validate(sql);
  }

  async test(timeoutMs: number): Promise<TestResult> {
    return (await this.adapter()).test(timeoutMs);
  }

  async listTables(schema?: string): Promise<SchemaTable[]> {
    return (await this.adapter()).listTables(schema);
  }

  async searchObjects(search: ObjectSearch): Promise<SchemaObject[]> {
    return (await this.adapter()).searchObjects(search);
  }

  async readCatalogRows(): Promise<CatalogSnapshot> {
    const engine = this.engine ?? (await this.adapter());
    if (!engine.readCatalogRows) throw new Error(`${this.name} has no catalog for the read allowlist`);
    return engine.readCatalogRows();
  }

  async checkCatalogStamp(stamp: CatalogReference): Promise<CatalogReference | null> {
    const engine = this.engine ?? (await this.adapter());
    // No way to check: changed, so the next decision loads again.
    return engine.checkCatalogStamp ? engine.checkCatalogStamp(stamp) : null;
  }

  async findStoredFunctions(names: readonly string[]): Promise<string[]> {
    const engine = this.engine ?? (await this.adapter());
    return engine.findStoredFunctions ? engine.findStoredFunctions(names) : [];
  }

  async readViews(): Promise<MysqlViews> {
    const engine = this.engine ?? (await this.adapter());
    return engine.readViews ? engine.readViews() : { database: null, views: [] };
  }

  async readColumnExpressions(tableNames: readonly string[]): Promise<MysqlExpressionRow[]> {
    const engine = this.engine ?? (await this.adapter());
    return engine.readColumnExpressions ? engine.readColumnExpressions(tableNames) : [];
  }

  async inspect(sql: string): Promise<StatementInfo> {
    const engine = this.engine ?? (await this.adapter());
    return engine.inspect ? engine.inspect(sql) : { readOnly: null };
  }

  async readAccess(): Promise<ReadAccess> {
    const engine = this.engine ?? (await this.adapter());
    if (!engine.readAccess) throw new Error(`${this.name} cannot audit its privileges`);
    return engine.readAccess();
  }

  async close(): Promise<void> {
    this.closed = true;
    // Never used: nothing was opened. Still loading: close what the load produces.
    if (!this.engine && !this.loading) return;
    const engine = await this.adapter().catch(() => null);
    await engine?.close();
  }
}
