// PostgreSQL reads go out as one pipeline that ends with pg_advisory_unlock_all() and
// ROLLBACK, and the pooled connection then skips the reset round trip. These tests prove that
// shortcut leaks nothing: a user-defined function called from a read (something the parser
// guard cannot see into) can take an advisory lock or change a setting, and the next request
// on the same pooled connection must see neither.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../src/engines/index.ts';
import { DEFAULT_STATEMENT_TIMEOUT_MS, type Engine } from '../src/engines/engine.ts';
import { postgresConfig } from './support/engines.ts';

const fn = `dbq_pipe_${process.pid}_${Math.random().toString(36).slice(2, 7)}`;
let admin: pg.Client;
let engine: Engine;
const read = (sql: string, maxRows = 1000, timeoutMs = 5000) =>
  engine.execute({ sql, params: [], readOnly: true, timeoutMs, maxRows, maxBytes: 1 << 24 });
const timeoutSetting = async (timeoutMs: number) => (await read("SELECT current_setting('statement_timeout')", 1, timeoutMs)).rows[0][0];

beforeAll(async () => {
  admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
  await admin.connect();
  await admin.query(`CREATE FUNCTION ${fn}_lock() RETURNS int LANGUAGE sql AS 'SELECT pg_advisory_lock(4242); SELECT 1'`);
  await admin.query(`CREATE FUNCTION ${fn}_set() RETURNS text LANGUAGE sql AS $$SELECT set_config('application_name', 'leaked', false)$$`);
  await admin.query(`CREATE FUNCTION ${fn}_untimed() RETURNS text LANGUAGE sql AS $$SELECT set_config('statement_timeout', '0', false)$$`);
  // One connection, so every request reuses the same backend.
  engine = createEngine(postgresConfig({ maxConnections: 1 }));
});

afterAll(async () => {
  await engine.close();
  await admin.query(`DROP FUNCTION IF EXISTS ${fn}_lock(); DROP FUNCTION IF EXISTS ${fn}_set(); DROP FUNCTION IF EXISTS ${fn}_untimed()`);
  await admin.end();
});

describe('PostgreSQL read pipeline', () => {
  it('releases an advisory lock a function took during a read', async () => {
    await read(`SELECT ${fn}_lock()`);
    const pid = (await read('SELECT pg_backend_pid()')).rows[0][0];
    const locks = await admin.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = $1", [pid]);
    expect(locks.rows[0].n).toBe(0);
  });

  it('reverts a setting a function changed during a read', async () => {
    expect((await read(`SELECT ${fn}_set()`)).rows).toEqual([['leaked']]);
    expect((await read("SELECT current_setting('application_name')")).rows[0][0]).not.toBe('leaked');
  });

  it("has the server enforce the default timeout (a session default) and a request's own", async () => {
    // The default comes from the connection's startup options, so the pipeline carries no SET
    // for it; any other timeout is a SET LOCAL of that read.
    expect(await timeoutSetting(DEFAULT_STATEMENT_TIMEOUT_MS)).toBe(`${DEFAULT_STATEMENT_TIMEOUT_MS / 1000}s`);
    expect(await timeoutSetting(1234)).toBe('1234ms');
    expect(await timeoutSetting(DEFAULT_STATEMENT_TIMEOUT_MS)).toBe(`${DEFAULT_STATEMENT_TIMEOUT_MS / 1000}s`);
    const err = await read('SELECT pg_sleep(5)', 1, 300).catch((e) => e);
    expect(err.code).toBe('query_timeout');
  });

  it('does not let a function switch the timeout off for later reads', async () => {
    expect((await read(`SELECT ${fn}_untimed()`)).rows).toEqual([['0']]);
    expect(await timeoutSetting(DEFAULT_STATEMENT_TIMEOUT_MS)).toBe(`${DEFAULT_STATEMENT_TIMEOUT_MS / 1000}s`);
  });

  it('leaves no transaction open and still truncates at maxRows', async () => {
    const cut = await read('SELECT g FROM generate_series(1, 20) g', 5);
    expect(cut.rowCount).toBe(5);
    expect(cut.truncated).toBe(true);
    const exact = await read('SELECT g FROM generate_series(1, 5) g', 5);
    expect(exact.truncated).toBe(false);
    const pid = (await read('SELECT pg_backend_pid()')).rows[0][0];
    const state = await admin.query('SELECT state FROM pg_stat_activity WHERE pid = $1', [pid]);
    expect(state.rows[0].state).toBe('idle');
  });

  it('prepares its fixed statements once per connection, and again after a reset drops them', async () => {
    const named = async () =>
      (await read("SELECT string_agg(name, ',' ORDER BY name) FROM pg_prepared_statements WHERE name LIKE 'dbq\\_%'")).rows[0][0];
    const expected = 'dbq_begin_read_only,dbq_rollback,dbq_unlock_reseed';
    await read('SELECT 1');
    expect(await named()).toBe(expected);
    // A failed read resets the connection (DEALLOCATE ALL among it): the next read prepares again.
    // (A read's own teardown is parsed after its statement ran, so list from the read after.)
    expect((await read('SELECT * FROM no_such_table_dbq').catch((e) => e)).code).toBe('query_failed');
    await read('SELECT 1');
    expect(await named()).toBe(expected);
    // So does a write.
    await engine.execute({ sql: 'SELECT 1', params: [], readOnly: false, timeoutMs: 5000, maxRows: 10, maxBytes: 1 << 20 });
    await read('SELECT 1');
    expect(await named()).toBe(expected);
    for (let i = 0; i < 20; i++) expect((await read(`SELECT ${i}`)).rows).toEqual([[i]]);
  });

  it('still refuses a write that reaches the database through a read', async () => {
    const err = await read(`SELECT 1 FROM (SELECT ${fn}_lock()) x; SELECT 2`).catch((e) => e);
    expect(err.code).toBe('query_failed');
  });
});
