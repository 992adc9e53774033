// The engine adapters' backstops, on the real servers: read-only mode refuses writes in the
// database itself (the parser guard can miss; this cannot), timeouts and cancels end the
// statement on the server, one statement per request is enforced by the protocol, the pool
// survives the server dropping an idle connection, a full pool answers DatabaseBusyError and
// an unreachable server ConnectionFailedError.

import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/engines/engine.ts';
import {
  ConnectionFailedError,
  DatabaseBusyError,
  InsufficientPermissionsError,
  QueryCanceledError,
  QueryFailedError,
  QueryTimeoutError,
} from '../src/errors.ts';
import {
  ENGINES,
  closeAllEngines,
  mysqlConfig,
  openEngine,
  postgresConfig,
  rejectionOf,
  run,
  uniqueName,
  type EngineCase,
} from './support/engines.ts';
import { cpuTicks } from './support/processes.ts';
import { sleep, until } from './support/wait.ts';

afterAll(closeAllEngines);

/** sqlite runner processes (children of this test process) working on `file`. */
function runnerProcesses(file: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.includes('sqlite-runner.mjs') && cmdline.includes(file)) pids.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}

/** How many sessions on the server are still running the statement tagged `marker`. */
async function stillRunning(engineCase: EngineCase, engine: Engine, marker: string, file: string): Promise<number> {
  switch (engineCase.name) {
    case 'postgres':
      return Number(
        (
          await run(
            engine,
            `SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND query LIKE '%${marker}%'`,
          )
        ).rows[0][0],
      );
    case 'mysql':
      return Number(
        (await run(engine, `SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND INFO LIKE '%${marker}%'`))
          .rows[0][0],
      );
    case 'sqlite':
      return runnerProcesses(file).length;
  }
}

/** Resolves once the statement tagged `marker` runs: in the server's session list, or (sqlite)
 * once a runner on `file` spends CPU (two clock ticks since it was first seen). */
async function untilRunning(engineCase: EngineCase, engine: Engine, marker: string, file: string): Promise<void> {
  if (engineCase.name !== 'sqlite') {
    await until(`${marker} to run`, async () => (await stillRunning(engineCase, engine, marker, file)) > 0, 5_000);
    return;
  }
  const seen = new Map<number, number>();
  await until(
    `a runner on ${file} to run ${marker}`,
    () =>
      runnerProcesses(file).some((pid) => {
        try {
          const ticks = cpuTicks(pid);
          if (!seen.has(pid)) seen.set(pid, ticks);
          return ticks - seen.get(pid)! >= 2;
        } catch {
          return false; // the process ended while we looked
        }
      }),
    5_000,
    10,
  );
}

/** stillRunning, allowing the server (or the kernel, for a killed runner) a moment to finish
 * tearing the statement down. */
async function settledRunning(engineCase: EngineCase, engine: Engine, marker: string, file: string): Promise<number> {
  for (let i = 0; ; i++) {
    const n = await stillRunning(engineCase, engine, marker, file);
    if (n === 0 || i === 10) return n;
    await sleep(50);
  }
}

for (const engineCase of ENGINES) {
  describe(`${engineCase.name}: read-only mode`, () => {
    let engine: Engine;
    const table = uniqueName('ro');

    beforeAll(async () => {
      engine = openEngine(engineCase.config({ maxConnections: 1 }));
      await run(engine, `CREATE TABLE ${table} (x INT)`);
      await run(engine, `INSERT INTO ${table} (x) VALUES (1)`);
    });

    afterAll(async () => {
      await run(engine, `DROP TABLE IF EXISTS ${table}`);
    });

    it('refuses an INSERT run with readOnly, in the database, and leaves the table unchanged', async () => {
      const err = await rejectionOf(run(engine, `INSERT INTO ${table} (x) VALUES (2)`, { readOnly: true }));
      if (engineCase.name === 'sqlite') {
        expect(err).toBeInstanceOf(InsufficientPermissionsError);
        expect(err.details).toEqual({ reason: 'statement is not read-only' });
      } else {
        expect(err).toBeInstanceOf(QueryFailedError);
        expect(err.details.sqlState).toBe('25006');
      }
      // The failed read-only transaction was rolled back before the (only) connection was reused.
      expect((await run(engine, `SELECT count(*) FROM ${table}`)).rows[0].map(Number)).toEqual([1]);
    });

    it('refuses DDL run with readOnly (MariaDB would otherwise commit the read-only transaction and run it)', async () => {
      const other = uniqueName('ddl');
      const err = await rejectionOf(run(engine, `CREATE TABLE ${other} (x INT)`, { readOnly: true }));
      expect(err).toBeInstanceOf(engineCase.name === 'sqlite' ? InsufficientPermissionsError : QueryFailedError);
      const dropErr = await rejectionOf(run(engine, `DROP TABLE ${table}`, { readOnly: true }));
      expect(dropErr).toBeInstanceOf(engineCase.name === 'sqlite' ? InsufficientPermissionsError : QueryFailedError);
      expect(await rejectionOf(run(engine, `SELECT * FROM ${other}`))).toBeInstanceOf(QueryFailedError);
      expect((await run(engine, `SELECT count(*) FROM ${table}`)).rowCount).toBe(1);
    });

    if (engineCase.name === 'postgres') {
      it('refuses a data-modifying CTE hidden in a SELECT', async () => {
        const err = await rejectionOf(run(engine, `WITH d AS (DELETE FROM ${table} RETURNING *) SELECT * FROM d`, { readOnly: true }));
        expect(err.details.sqlState).toBe('25006');
        expect((await run(engine, `SELECT count(*) FROM ${table}`)).rows[0][0]).toBe('1');
      });
    }
  });

  describe(`${engineCase.name}: timeout, cancel, protocol, pool`, () => {
    let engine: Engine;
    let observer: Engine;
    const config = engineCase.config({ maxConnections: 2 });

    beforeAll(() => {
      engine = openEngine(config);
      observer = openEngine(engineCase.config({ database: config.database, maxConnections: 1 }));
    });

    it('times out with QueryTimeoutError, enforced by the database, and the statement is gone on the server', async () => {
      const marker = uniqueName('timeout');
      const started = Date.now();
      const err = await rejectionOf(run(engine, engineCase.endless(marker), { timeoutMs: 500, readOnly: true }));
      const elapsed = Date.now() - started;
      expect(err).toBeInstanceOf(QueryTimeoutError);
      expect(err.message).toBe('Query timed out after 500 ms');
      expect(elapsed).toBeGreaterThanOrEqual(450);
      expect(elapsed).toBeLessThan(1_500);
      expect(await settledRunning(engineCase, observer, marker, config.database)).toBe(0);
      // The engine carries on (sqlite: a new runner process).
      expect(Number((await run(engine, 'SELECT 1')).rows[0][0])).toBe(1);
    });

    it('cancels on AbortSignal with QueryCanceledError, on the server', async () => {
      const marker = uniqueName('cancel');
      const controller = new AbortController();
      const started = Date.now();
      const running = run(engine, engineCase.endless(marker), { signal: controller.signal });
      await untilRunning(engineCase, observer, marker, config.database);
      controller.abort();
      const err = await rejectionOf(running);
      expect(err).toBeInstanceOf(QueryCanceledError);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(await settledRunning(engineCase, observer, marker, config.database)).toBe(0);
      expect(Number((await run(engine, 'SELECT 1')).rows[0][0])).toBe(1);
    });

    it('never starts a statement whose signal is already aborted', async () => {
      const err = await rejectionOf(run(engine, 'SELECT 1', { signal: AbortSignal.abort() }));
      expect(err).toBeInstanceOf(QueryCanceledError);
    });

    it('refuses more than one statement in the protocol itself', async () => {
      const table = uniqueName('multi');
      const err = await rejectionOf(run(engine, `SELECT 1; CREATE TABLE ${table} (x INT)`));
      expect(err).toBeInstanceOf(QueryFailedError);
      expect(await rejectionOf(run(engine, `SELECT * FROM ${table}`))).toBeInstanceOf(QueryFailedError);
      // A trailing semicolon is one statement.
      expect(Number((await run(engine, 'SELECT 1;')).rows[0][0])).toBe(1);
    });

    it('answers DatabaseBusyError when every pooled connection stays busy past acquireTimeoutMs', async () => {
      const single = openEngine(engineCase.config({ database: config.database, maxConnections: 1, acquireTimeoutMs: 200 }));
      const controller = new AbortController();
      const busy = uniqueName('busy');
      const holder = run(single, engineCase.endless(busy), { signal: controller.signal });
      holder.catch(() => {});
      await untilRunning(engineCase, observer, busy, config.database);
      const started = Date.now();
      const err = await rejectionOf(run(single, 'SELECT 1'));
      const waited = Date.now() - started;
      expect(err).toBeInstanceOf(DatabaseBusyError);
      expect(waited).toBeGreaterThanOrEqual(180);
      expect(waited).toBeLessThan(1_000);
      controller.abort();
      expect(await rejectionOf(holder)).toBeInstanceOf(QueryCanceledError);
      expect(Number((await run(single, 'SELECT 1')).rows[0][0])).toBe(1);
    });

    it('close() cancels in-flight statements on the server and refuses new ones', async () => {
      const own = engineCase.config();
      const closing = openEngine(own);
      // Connected (sqlite: runner started) first, so the statement below is really running.
      await run(closing, 'SELECT 1');
      const marker = uniqueName('close');
      const inflight = run(closing, engineCase.endless(marker));
      inflight.catch(() => {});
      await untilRunning(engineCase, observer, marker, own.database);
      await closing.close();
      expect(await rejectionOf(inflight)).toBeInstanceOf(QueryCanceledError);
      expect(await settledRunning(engineCase, observer, marker, own.database)).toBe(0);
      expect(await rejectionOf(run(closing, 'SELECT 1'))).toBeInstanceOf(ConnectionFailedError);
    });

    it('ends a stream whose consumer stalls past the timeout, and frees its connection', async () => {
      const single = openEngine(engineCase.config({ database: config.database, maxConnections: 1 }));
      const sql = 'SELECT 1 AS a UNION ALL SELECT 2';
      const stream = await single.stream!({ sql, params: [], readOnly: true, timeoutMs: 300, maxRows: 10 });
      const iterator = stream.rows[Symbol.asyncIterator]();
      expect((await iterator.next()).done).toBe(false);
      // Past timeout + backstop + the watch's grace: the connection has been abandoned. The stall
      // is the behaviour under test, so real time passes.
      await sleep(2_800);
      expect(await rejectionOf(iterator.next())).toBeInstanceOf(QueryTimeoutError);
      expect(Number((await run(single, 'SELECT 1')).rows[0][0])).toBe(1);
    });

    it('answers ConnectionFailedError for an unreachable database', async () => {
      const broken =
        engineCase.name === 'postgres'
          ? postgresConfig({ port: 5999, connectTimeoutMs: 2_000 })
          : engineCase.name === 'mysql'
            ? mysqlConfig({ port: 5999, connectTimeoutMs: 2_000 })
            : engineCase.config({ database: '/nonexistent/dbq/missing.db' });
      const unreachable = openEngine(broken);
      const err = await rejectionOf(run(unreachable, 'SELECT 1'));
      expect(err).toBeInstanceOf(ConnectionFailedError);
      expect(err.message).toMatch(/^Could not connect to database: /);
      if (engineCase.name !== 'sqlite') expect(err.message).toContain('ECONNREFUSED');
      expect(await rejectionOf(unreachable.test(2_000))).toBeInstanceOf(ConnectionFailedError);
    });
  });
}

describe('postgres: pool and connection failures', () => {
  it("survives the server terminating an idle pooled connection (node-postgres #2386: an unlistened pool 'error' kills the process)", async () => {
    const engine = openEngine(postgresConfig({ maxConnections: 1 }));
    const admin = openEngine(postgresConfig({ maxConnections: 1 }));
    const pid = (await run(engine, 'SELECT pg_backend_pid()')).rows[0][0];
    expect((await run(admin, `SELECT pg_terminate_backend(${Number(pid)})`)).rows[0][0]).toBe(true);
    // Give the idle client time to receive the FATAL and the socket close: nothing outside the
    // pool says when it has dropped the client.
    await sleep(200);
    const next = await run(engine, 'SELECT pg_backend_pid()');
    expect(next.rows[0][0]).not.toBe(pid);
  });

  it('answers ConnectionFailedError for an unknown database and an unknown host', async () => {
    const noDb = openEngine(postgresConfig({ database: uniqueName('nodb') }));
    const err = await rejectionOf(run(noDb, 'SELECT 1'));
    expect(err).toBeInstanceOf(ConnectionFailedError);
    expect(err.cause.code).toBe('3D000');
    const noHost = openEngine(postgresConfig({ host: 'nonexistent.invalid', connectTimeoutMs: 3_000 }));
    expect(await rejectionOf(run(noHost, 'SELECT 1'))).toBeInstanceOf(ConnectionFailedError);
  });
});

describe('mysql: pool, backstop and connection failures', () => {
  it('survives the server killing an idle pooled connection', async () => {
    const engine = openEngine(mysqlConfig({ maxConnections: 1 }));
    const admin = openEngine(mysqlConfig({ maxConnections: 1 }));
    const id = (await run(engine, 'SELECT CONNECTION_ID()')).rows[0][0];
    await run(admin, `KILL ${Number(id)}`);
    // As above: the pool drops the killed connection when its socket closes.
    await sleep(200);
    const next = await run(engine, 'SELECT CONNECTION_ID()');
    expect(next.rows[0][0]).not.toBe(id);
  });

  it('kills a statement that escapes the server-side timeout (client backstop + KILL QUERY)', async () => {
    const engine = openEngine(mysqlConfig());
    const observer = openEngine(mysqlConfig({ maxConnections: 1 }));
    const marker = uniqueName('backstop');
    const started = Date.now();
    // SET STATEMENT overrides the session's max_statement_time for this one statement
    // (MariaDB); MySQL's max_execution_time never applies to writes. Either way only the
    // backstop is left, and SLEEP interrupted by KILL QUERY returns 1 instead of failing.
    const sql = `SET STATEMENT max_statement_time = 0 FOR SELECT SLEEP(600) /* ${marker} */`;
    const err = await rejectionOf(run(engine, sql, { timeoutMs: 300 }));
    expect(err).toBeInstanceOf(QueryTimeoutError);
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(await settledRunning(ENGINES[1], observer, marker, '')).toBe(0);
  });

  it('answers ConnectionFailedError for an unknown database', async () => {
    const noDb = openEngine(mysqlConfig({ database: uniqueName('nodb') }));
    const err = await rejectionOf(run(noDb, 'SELECT 1'));
    expect(err).toBeInstanceOf(ConnectionFailedError);
    expect(err.cause.errno).toBe(1049);
  });
});
