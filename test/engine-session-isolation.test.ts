// Session state must not leak between requests through the pool (API contract, Query):
// whatever one request does to its session — SET, SET ROLE, temp tables, advisory locks,
// user variables, an open transaction — the next request on the same pooled connection sees
// a clean session. Each engine runs with a pool of one, and the tests check it really is the
// same server session (backend pid / connection id) before and after.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/engines/engine.ts';
import { QueryFailedError } from '../src/errors.ts';
import { closeAllEngines, mysqlConfig, openEngine, postgresConfig, rejectionOf, run, sqliteConfig, uniqueName } from './support/engines.ts';

afterAll(closeAllEngines);

const value = async (engine: Engine, sql: string, readOnly = false): Promise<unknown> =>
  (await run(engine, sql, { readOnly })).rows[0]?.[0];

describe('postgres: session reset between pooled requests', () => {
  let engine: Engine;
  let pid: unknown;
  const table = uniqueName('iso');
  const role = uniqueName('role');

  beforeAll(async () => {
    engine = openEngine(postgresConfig({ maxConnections: 1 }));
    await run(engine, `CREATE TABLE ${table} (x int)`);
    await run(engine, `CREATE ROLE ${role} NOLOGIN`);
    pid = await value(engine, 'SELECT pg_backend_pid()');
  });

  afterAll(async () => {
    await run(engine, `DROP TABLE IF EXISTS ${table}`);
    await run(engine, `DROP ROLE IF EXISTS ${role}`);
  });

  const sameSession = async () => expect(await value(engine, 'SELECT pg_backend_pid()')).toBe(pid);

  it('SET search_path, SET application_name, SET TimeZone are undone', async () => {
    const defaults = await run(engine, "SELECT current_setting('search_path'), current_setting('application_name')");
    await run(engine, 'SET search_path = pg_catalog');
    await run(engine, "SET application_name = 'evil'");
    await run(engine, "SET TimeZone = 'Asia/Tokyo'");
    const after = await run(
      engine,
      "SELECT current_setting('search_path'), current_setting('application_name'), current_setting('TimeZone')",
    );
    expect(after.rows[0]).toEqual([...defaults.rows[0], 'UTC']);
    await sameSession();
  });

  it('SET ROLE is undone', async () => {
    await run(engine, `SET ROLE ${role}`);
    expect(await value(engine, 'SELECT current_user')).toBe('postgres');
    await sameSession();
  });

  it('SET inside a read-only request is undone too', async () => {
    await run(engine, "SELECT set_config('search_path', 'pg_catalog', false)", { readOnly: true });
    expect(await value(engine, "SELECT current_setting('search_path')")).toBe('"$user", public');
    await sameSession();
  });

  it('temp tables are dropped', async () => {
    await run(engine, 'CREATE TEMP TABLE eng_tmp_iso (x int)');
    expect(await value(engine, "SELECT to_regclass('pg_temp.eng_tmp_iso')::text")).toBeNull();
    await sameSession();
  });

  it('advisory locks are released, also when taken inside a read-only request', async () => {
    const held = `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()`;
    await run(engine, 'SELECT pg_advisory_lock(424242)');
    expect(await value(engine, held)).toBe('0');
    await run(engine, 'SELECT pg_advisory_lock(424243)', { readOnly: true });
    expect(await value(engine, held)).toBe('0');
    await sameSession();
  });

  it('an open BEGIN is rolled back, and the next request runs in autocommit', async () => {
    await run(engine, 'BEGIN');
    await run(engine, `INSERT INTO ${table} VALUES (1)`);
    // Seen from another session: committed, not stuck in a leaked transaction.
    const other = openEngine(postgresConfig({ maxConnections: 1 }));
    expect(await value(other, `SELECT count(*) FROM ${table}`)).toBe('1');
    await sameSession();
  });

  it('an open BEGIN does not turn the next read-only request into a writable transaction', async () => {
    await run(engine, 'BEGIN');
    const err = await rejectionOf(run(engine, `INSERT INTO ${table} VALUES (2)`, { readOnly: true }));
    expect(err).toBeInstanceOf(QueryFailedError);
    expect(err.details.sqlState).toBe('25006');
    await sameSession();
  });

  it('PREPARE and LISTEN are discarded', async () => {
    await run(engine, 'PREPARE eng_stmt AS SELECT 1');
    await run(engine, 'LISTEN eng_channel');
    expect(await value(engine, 'SELECT count(*) FROM pg_prepared_statements')).toBe('0');
    expect(await value(engine, 'SELECT count(*) FROM pg_listening_channels()')).toBe('0');
    await sameSession();
  });
});

describe('mysql: session reset between pooled requests', () => {
  let engine: Engine;
  let connectionId: unknown;
  const table = uniqueName('iso');

  beforeAll(async () => {
    engine = openEngine(mysqlConfig({ maxConnections: 1 }));
    await run(engine, `CREATE TABLE ${table} (x INT)`);
    connectionId = await value(engine, 'SELECT CONNECTION_ID()');
  });

  afterAll(async () => {
    await run(engine, `DROP TABLE IF EXISTS ${table}`);
  });

  const sameSession = async () => expect(await value(engine, 'SELECT CONNECTION_ID()')).toBe(connectionId);

  it('user variables are cleared', async () => {
    await run(engine, 'SET @x = 42');
    expect(await value(engine, 'SELECT @x')).toBeNull();
    await run(engine, 'SET @y = 43', { readOnly: true });
    expect(await value(engine, 'SELECT @y')).toBeNull();
    await sameSession();
  });

  it('SET SESSION sql_mode is undone', async () => {
    const global = await value(engine, 'SELECT @@GLOBAL.sql_mode');
    await run(engine, "SET SESSION sql_mode = 'ANSI_QUOTES'");
    expect(await value(engine, 'SELECT @@SESSION.sql_mode')).toBe(global);
    await sameSession();
  });

  it('temporary tables are dropped', async () => {
    await run(engine, 'CREATE TEMPORARY TABLE eng_tmp_iso (x INT)');
    const err = await rejectionOf(run(engine, 'SELECT * FROM eng_tmp_iso'));
    expect(err).toBeInstanceOf(QueryFailedError);
    expect(err.details.errno).toBe(1146);
    await sameSession();
  });

  it('GET_LOCK locks are released, also when taken inside a read-only request', async () => {
    const lock = uniqueName('lock');
    await run(engine, `SELECT GET_LOCK('${lock}', 0)`);
    expect(await value(engine, `SELECT IS_USED_LOCK('${lock}')`)).toBeNull();
    await run(engine, `SELECT GET_LOCK('${lock}', 0)`, { readOnly: true });
    expect(await value(engine, `SELECT IS_USED_LOCK('${lock}')`)).toBeNull();
    await sameSession();
  });

  it('an open transaction is rolled back, and the next request runs in autocommit', async () => {
    await run(engine, 'START TRANSACTION');
    await run(engine, `INSERT INTO ${table} VALUES (1)`);
    const other = openEngine(mysqlConfig({ maxConnections: 1 }));
    expect(await value(other, `SELECT COUNT(*) FROM ${table}`)).toBe('1');
    expect(Number(await value(engine, 'SELECT @@in_transaction'))).toBe(0);
    await sameSession();
  });

  it('SET SESSION TRANSACTION READ WRITE inside a read-only request does not outlive it', async () => {
    await run(engine, 'SET SESSION TRANSACTION READ WRITE', { readOnly: true });
    const err = await rejectionOf(run(engine, `CREATE TABLE ${uniqueName('ro')} (x INT)`, { readOnly: true }));
    expect(err).toBeInstanceOf(QueryFailedError);
    expect(err.details.errno).toBe(1792);
    await sameSession();
  });
});

describe('sqlite: session reset between requests', () => {
  let engine: Engine;
  const table = uniqueName('iso');
  const config = sqliteConfig({ maxConnections: 1 });

  beforeAll(async () => {
    engine = openEngine(config);
    await run(engine, `CREATE TABLE ${table} (x INTEGER)`);
  });

  it('temp tables are dropped', async () => {
    await run(engine, 'CREATE TEMP TABLE eng_tmp_iso (x)');
    const err = await rejectionOf(run(engine, 'SELECT * FROM temp.eng_tmp_iso'));
    expect(err).toBeInstanceOf(QueryFailedError);
    expect(err.details.sqlState).toBe('SQLITE_ERROR');
  });

  it('PRAGMA settings are undone', async () => {
    const before = await value(engine, 'PRAGMA cache_size');
    await run(engine, 'PRAGMA cache_size = 123');
    expect(await value(engine, 'PRAGMA cache_size')).toBe(before);
    await run(engine, 'PRAGMA cache_size = 123', { readOnly: true }).catch(() => {});
    expect(await value(engine, 'PRAGMA cache_size', true)).toBe(before);
  });

  // ATTACH never runs at all now (test/sqlite-outside-files.test.ts); nothing can outlive it.
  it('ATTACH does not outlive its request, read-only or not', async () => {
    await expect(run(engine, "ATTACH DATABASE ':memory:' AS eng_aux")).rejects.toMatchObject({ code: 'insufficient_permissions' });
    expect((await run(engine, 'SELECT name FROM pragma_database_list ORDER BY seq')).rows).toEqual([['main']]);
    await expect(run(engine, "ATTACH DATABASE ':memory:' AS eng_aux", { readOnly: true })).rejects.toMatchObject({
      code: 'insufficient_permissions',
    });
    expect((await run(engine, 'SELECT name FROM pragma_database_list ORDER BY seq', { readOnly: true })).rows).toEqual([['main']]);
  });

  it('an open BEGIN is rolled back, and the next request runs in autocommit', async () => {
    await run(engine, 'BEGIN');
    await run(engine, `INSERT INTO ${table} VALUES (1)`);
    const other = openEngine(sqliteConfig({ database: config.database }));
    expect(await value(other, `SELECT count(*) FROM ${table}`)).toBe(1);
    // A read-only BEGIN (sqlite3_stmt_readonly says BEGIN is read-only) does not hold a
    // transaction, and with it a snapshot and a lock, open on the kept read handle.
    await run(engine, 'BEGIN', { readOnly: true });
    await run(other, `INSERT INTO ${table} VALUES (2)`);
    expect(await value(engine, `SELECT count(*) FROM ${table}`, true)).toBe(2);
  });
});
