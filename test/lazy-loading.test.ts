// The MCP SDK and the engine adapters (with their drivers) load on first use, not when the
// server starts (idle memory). Run in a child process, whose module graph starts
// empty, so what was loaded when is visible; the first request to each part must still work.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CAPABILITIES } from '../src/engines/index.ts';
import { createMysqlEngine } from '../src/engines/mysql/mysql.ts';
import { createPostgresEngine } from '../src/engines/postgres/postgres.ts';
import { createSqliteEngine } from '../src/engines/sqlite/sqlite.ts';
import type { EngineConfig } from '../src/engines/engine.ts';

const run = promisify(execFile);

describe('lazy loading', () => {
  it('a built server loads the MCP SDK and the MySQL driver only when first used, and those first uses work', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', path.resolve('test/fixtures/lazy-imports.ts')], { timeout: 60_000 });
    const out = JSON.parse(stdout.trim().split('\n').at(-1)!);
    expect(out.built).toEqual({ mcpSdk: false, mysql2: false, mysqlAdapter: false });
    expect(out.pg).toEqual({ status: 200, rows: [[1]] });
    expect(out.afterPostgres).toEqual({ mcpSdk: false, mysql2: false, mysqlAdapter: false });
    expect(out.mysql).toEqual({ status: 200, rows: [[1]] });
    expect(out.afterMysql).toEqual({ mcpSdk: false, mysql2: true, mysqlAdapter: true });
    expect(out.mcp).toEqual({ status: 200, serverName: 'dbq', session: true });
    expect(out.afterMcp.mcpSdk).toBe(true);
  }, 70_000);

  it('the lazy engines report the capabilities their adapters have', async () => {
    const config = (engine: EngineConfig['engine']): EngineConfig => ({
      engine,
      host: '127.0.0.1',
      port: null,
      database: engine === 'sqlite' ? '/nonexistent/x.db' : 'test',
      user: null,
      password: null,
      ssl: false,
      maxConnections: 1,
      acquireTimeoutMs: 1000,
      connectTimeoutMs: 1000,
    });
    for (const [name, create] of [
      ['postgres', createPostgresEngine],
      ['mysql', createMysqlEngine],
      ['sqlite', createSqliteEngine],
    ] as const) {
      const engine = create(config(name));
      expect(CAPABILITIES[name]).toEqual(engine.capabilities);
      await engine.close();
    }
  });
});
