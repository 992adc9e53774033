// Picks the adapter for a connection's engine. The only place that knows all three.

import type { Engine, EngineConfig, EngineFactory, EngineName } from './engine.ts';
import { createMysqlEngine } from './mysql.ts';
import { createPostgresEngine } from './postgres.ts';
import { createSqliteEngine } from './sqlite.ts';

const FACTORIES: Record<EngineName, EngineFactory> = {
  postgres: createPostgresEngine,
  mysql: createMysqlEngine,
  sqlite: createSqliteEngine,
};

export function createEngine(config: EngineConfig): Engine {
  const factory = FACTORIES[config.engine];
  if (!factory) throw new Error(`unknown engine ${String(config.engine)}`);
  return factory(config);
}
