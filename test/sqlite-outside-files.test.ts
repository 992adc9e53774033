// A statement on a SQLite connection reaches that connection's file and nothing else. Before,
// an admin on a writable connection could run `VACUUM INTO '/tmp/x.db'` (a copy of the
// database written anywhere the server may write) or `ATTACH '<data dir>/dbq.sqlite'` (the
// metadata store: keys, users, sealed secrets). ATTACH, DETACH and VACUUM INTO are refused for
// every role, by the guard (400) and again by the statement runner, which asks SQLite's own
// compiled program; extensions are never loadable.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../src/engines/index.ts';
import { classifySqlite } from '../src/guard/guard-sqlite.ts';
import { sqliteConfig } from './support/engines.ts';
import { createHarness, workspaceSqliteDir, type Harness } from './support/harness.ts';

let h: Harness;
let store: string;
const probeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dbq-outside-'));
const probe = (what: string) => path.join(probeDir, `${what}.db`);

/** Each spelling, with the file it would create or open. */
function attempts(): Array<[string, string | null]> {
  return [
    [`ATTACH '${store}' AS meta`, null],
    [`attach database '${store}' as meta`, null],
    [`/* c */ ATTACH '${store}' AS meta`, null],
    [`-- c\n  Attach Database '${probe('attach')}' AS x`, probe('attach')],
    [`ATTACH '${probe('attach2')}' AS "x"`, probe('attach2')],
    [`ATTACH 'file:${probe('attach3')}?mode=rwc' AS x`, probe('attach3')],
    ['DETACH meta', null],
    ['detach database main', null],
    [`VACUUM INTO '${probe('vacuum')}'`, probe('vacuum')],
    [`VACUUM main INTO '${probe('vacuum2')}'`, probe('vacuum2')],
    [`vacuum "main" into '${probe('vacuum3')}'`, probe('vacuum3')],
    [`/* x */ VACUUM [main] /* y */ INTO '${probe('vacuum4')}';`, probe('vacuum4')],
    [`EXPLAIN ATTACH '${probe('explain')}' AS x`, probe('explain')],
    [`EXPLAIN QUERY PLAN VACUUM INTO '${probe('explain2')}'`, probe('explain2')],
  ];
}

/** Not statements SQLite accepts, but they must not reach a file either. */
function tricks(): Array<[string, string | null]> {
  return [
    [`WITH x AS (SELECT 1) ATTACH '${probe('cte')}' AS y`, probe('cte')],
    [`WITH x AS (SELECT 1) VACUUM INTO '${probe('cte2')}'`, probe('cte2')],
    [`SELECT sqlite_attach('${probe('fn')}', 'x', NULL)`, probe('fn')],
    [`CREATE TRIGGER tr AFTER INSERT ON t BEGIN ATTACH '${probe('trigger')}' AS x; END`, probe('trigger')],
    [`SELECT load_extension('${probe('ext')}')`, null],
  ];
}

beforeAll(async () => {
  h = await createHarness();
  store = path.join(h.dataDir, 'dbq.sqlite');
  const db = new Database(path.join(workspaceSqliteDir(h, 'default'), 'box.db'));
  db.exec('CREATE TABLE t (x int); INSERT INTO t VALUES (1)');
  db.close();
  expect((await h.call('POST', '/api/connections', h.adminKey, { name: 'box', url: 'sqlite:box.db' })).status).toBe(201);
});
afterAll(async () => {
  await h?.close();
  fs.rmSync(probeDir, { recursive: true, force: true });
});

describe('SQLite statements that reach other files', () => {
  it('are refused with 400 for every role, admins on writable connections included', async () => {
    for (const [sql, file] of attempts()) {
      for (const key of [h.adminKey, h.readerKey]) {
        const res = await h.call('POST', '/api/query', key, { connectionId: 'box', sql });
        expect(res.status, `${sql}: ${JSON.stringify(res.body)}`).toBe(400);
        expect(res.body.code).toBe('invalid_request');
        expect(res.body.error).toMatch(/ATTACH|DETACH|VACUUM INTO/);
      }
      if (file) expect(fs.existsSync(file), sql).toBe(false);
    }
  });

  it('says why in the verdict', () => {
    expect(classifySqlite(`ATTACH '${store}' AS m`)).toMatchObject({ kind: 'rejected', statementType: 'ATTACH' });
    expect(classifySqlite('DETACH m')).toMatchObject({ kind: 'rejected', statementType: 'DETACH' });
    expect(classifySqlite("VACUUM INTO '/tmp/x.db'")).toMatchObject({ kind: 'rejected', statementType: 'VACUUM' });
    expect(classifySqlite("EXPLAIN ATTACH '/tmp/x.db' AS m")).toMatchObject({ kind: 'rejected' });
    // A plain VACUUM rewrites the connection's own file: an admin's write, as before.
    expect(classifySqlite('VACUUM')).toMatchObject({ kind: 'write', statementType: 'VACUUM' });
    expect(classifySqlite("SELECT 'ATTACH' AS attach")).toMatchObject({ kind: 'read' });
  });

  it('never succeed in other spellings either', async () => {
    for (const [sql, file] of tricks()) {
      const res = await h.call('POST', '/api/query', h.adminKey, { connectionId: 'box', sql });
      expect(res.status, `${sql}: ${JSON.stringify(res.body)}`).not.toBe(200);
      if (file) expect(fs.existsSync(file), sql).toBe(false);
    }
    // The connection still works, plain VACUUM included.
    expect((await h.call('POST', '/api/query', h.adminKey, { connectionId: 'box', sql: 'VACUUM' })).status).toBe(200);
    expect((await h.call('POST', '/api/query', h.adminKey, { connectionId: 'box', sql: 'INSERT INTO t VALUES (2)' })).status).toBe(200);
  });

  it('are refused by the statement runner too, whatever the guard said', async () => {
    const engine = createEngine(sqliteConfig());
    try {
      await engine.execute({ sql: 'CREATE TABLE t (x int)', params: [], readOnly: false, timeoutMs: 5000, maxRows: 10, maxBytes: 1 << 20 });
      for (const [sql, file] of attempts().filter(([s]) => !/^\s*EXPLAIN/i.test(s))) {
        for (const readOnly of [false, true]) {
          const run = engine.execute({ sql, params: [], readOnly, timeoutMs: 5000, maxRows: 10, maxBytes: 1 << 20 });
          await expect(run, `${sql} readOnly=${readOnly}`).rejects.toMatchObject({ code: 'insufficient_permissions' });
        }
        const stream = engine.stream!({ sql, params: [], readOnly: false, timeoutMs: 5000, maxRows: 10 });
        await expect(stream, sql).rejects.toMatchObject({ code: 'insufficient_permissions' });
        if (file) expect(fs.existsSync(file), sql).toBe(false);
      }
      // With parameters bound, and with writes that are not ATTACH: unchanged.
      const attach = engine.execute({
        sql: 'ATTACH ? AS x',
        params: [probe('param')],
        readOnly: false,
        timeoutMs: 5000,
        maxRows: 10,
        maxBytes: 1 << 20,
      });
      await expect(attach).rejects.toMatchObject({ code: 'insufficient_permissions' });
      expect(fs.existsSync(probe('param'))).toBe(false);
      const insert = await engine.execute({
        sql: 'INSERT INTO t VALUES (?), (?)',
        params: [1, 2],
        readOnly: false,
        timeoutMs: 5000,
        maxRows: 10,
        maxBytes: 1 << 20,
      });
      expect(insert.affectedRows).toBe(2);
      const vacuum = await engine.execute({ sql: 'VACUUM', params: [], readOnly: false, timeoutMs: 5000, maxRows: 10, maxBytes: 1 << 20 });
      expect(vacuum.affectedRows).toBe(0);
    } finally {
      await engine.close();
    }
  });

  it('never loads an extension: the runner has no loadExtension call, SQL load_extension is not authorized', async () => {
    const runner = fs.readFileSync(new URL('../src/engines/sqlite/sqlite-runner.mjs', import.meta.url), 'utf8');
    expect(runner).not.toMatch(/loadExtension\s*\(/);
    expect(runner).not.toMatch(/enable_load_extension|unsafeMode\s*\(/);
    const engine = createEngine(sqliteConfig());
    try {
      const run = engine.execute({
        sql: `SELECT load_extension('${probe('ext')}')`,
        params: [],
        readOnly: false,
        timeoutMs: 5000,
        maxRows: 10,
        maxBytes: 1 << 20,
      });
      await expect(run).rejects.toMatchObject({ code: 'query_failed', message: expect.stringMatching(/not authorized/) });
    } finally {
      await engine.close();
    }
  });
});
