// SQLite connections treat "USA" as a name, as the SQL standard and the sqlite3 shell (since
// 3.41) do; better-sqlite3 is built with SQLITE_DQS=0. A newcomer writing double-quoted strings
// (199 of Spider-dev's 972 gold queries do) gets SQLite's question and dbq's answer to it.
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, workspaceSqliteDir, type Harness } from './support/harness.ts';

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
  const db = new Database(path.join(workspaceSqliteDir(h, 'default'), 'dq.db'));
  db.exec("CREATE TABLE city (name text); INSERT INTO city VALUES ('Anthony')");
  db.close();
  expect((await h.call('POST', '/api/connections', h.adminKey, { name: 'dq', url: 'sqlite:dq.db' })).status).toBe(201);
});

afterAll(async () => {
  await h.close();
});

describe('double-quoted strings on SQLite', () => {
  it('answer 422 with a hint that says to use single quotes, for a reader and an admin', async () => {
    for (const key of [h.readerKey, h.adminKey]) {
      const res = await h.call('POST', '/api/query', key, { connectionId: 'dq', sql: 'SELECT name FROM city WHERE name = "Anthony"' });
      expect(res.status).toBe(422);
      expect(res.body.code).toBe('query_failed');
      expect(res.body.error).toContain('single-quotes');
      expect(res.body.details.hint).toContain("single quotes ('USA')");
    }
  });

  it('run with single quotes', async () => {
    const res = await h.call('POST', '/api/query', h.readerKey, {
      connectionId: 'dq',
      sql: "SELECT name FROM city WHERE name = 'Anthony'",
    });
    expect(res.status).toBe(200);
    expect(res.body.data.rows).toEqual([['Anthony']]);
  });
});
