// Engine configs for the machine's real servers (PostgreSQL 15 at 5432, MariaDB 10.11 at 3306)
// and a fresh SQLite file per config, plus small helpers the engine tests share. Tests create
// their own uniquely named `eng_` tables and drop them: other files run concurrently on the
// same databases.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Engine, EngineConfig, EngineName, ExecuteOptions, ExecuteResult } from '../../src/engines/engine.ts';
import { createEngine } from '../../src/engines/index.ts';

const BASE = { ssl: false, maxConnections: 4, acquireTimeoutMs: 5_000, connectTimeoutMs: 5_000 } as const;

export function postgresConfig(overrides: Partial<EngineConfig> = {}): EngineConfig {
  return { ...BASE, engine: 'postgres', host: '127.0.0.1', port: 5432, database: 'test', user: 'postgres', password: null, ...overrides };
}

export function mysqlConfig(overrides: Partial<EngineConfig> = {}): EngineConfig {
  return { ...BASE, engine: 'mysql', host: '127.0.0.1', port: 3306, database: 'test', user: 'root', password: null, ...overrides };
}

/** A new, empty SQLite database file under os.tmpdir() (a zero-length file is an empty
 * database). Pass `database` to share a file between configs. */
export function sqliteConfig(overrides: Partial<EngineConfig> = {}): EngineConfig {
  let database = overrides.database;
  if (!database) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dbq-eng-'));
    database = path.join(dir, 'test.db');
    fs.writeFileSync(database, '');
  }
  return { ...BASE, engine: 'sqlite', host: null, port: null, user: null, password: null, ...overrides, database };
}

export interface EngineCase {
  name: EngineName;
  /** A config for this engine's real server; sqlite: a new file unless `database` is given. */
  config(overrides?: Partial<EngineConfig>): EngineConfig;
  /** A statement that runs until cancelled (for timeout / cancel / busy tests). */
  endless(marker: string): string;
}

export const ENGINES: readonly EngineCase[] = [
  { name: 'postgres', config: postgresConfig, endless: (m) => `SELECT pg_sleep(600) /* ${m} */` },
  { name: 'mysql', config: mysqlConfig, endless: (m) => `SELECT SLEEP(600) /* ${m} */` },
  {
    name: 'sqlite',
    config: sqliteConfig,
    endless: (m) => `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) /* ${m} */ FROM c`,
  },
];

/** `eng_<what>_<pid>_<random>`: unique across concurrently running test files. */
export function uniqueName(what: string): string {
  return `eng_${what}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
}

/** Engines created through here are closed by closeAllEngines() (call it in afterAll). */
const open = new Set<Engine>();

export function openEngine(config: EngineConfig): Engine {
  const engine = createEngine(config);
  open.add(engine);
  return engine;
}

export async function closeAllEngines(): Promise<void> {
  const engines = [...open];
  open.clear();
  await Promise.all(engines.map((e) => e.close()));
}

/** execute() with test defaults: a write (readOnly false), 10 s, 1000 rows. */
export function run(engine: Engine, sql: string, opts: Partial<ExecuteOptions> = {}): Promise<ExecuteResult> {
  return engine.execute({ sql, params: [], readOnly: false, timeoutMs: 10_000, maxRows: 1000, maxBytes: 32 * 1024 * 1024, ...opts });
}

/** The promise's rejection, or a failure if it resolved. */
export async function rejectionOf(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected the promise to reject');
}
