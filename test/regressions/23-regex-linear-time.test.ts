// The audit of every place outside input meets a regular expression found three that were
// super-linear. The SQLite runner's comment gaps (`/\*[\s\S]*?\*/` inside `GAP*`) took
// exponential time in the number of comments before a statement (22 empty comments: 35 ms,
// each one more doubled it); a model reply of ``` and 20,000 blanks took extract-sql 1 s, and
// 20,000 trailing semicolons 6.5 s; a SQLite column named with 50,000 capitals took the AI's
// identifier splitter 7 s. Each now reads its input once; the results are unchanged.
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitIdentifier } from '../../src/ai/builtin/text.ts';
import { extractSql, extractSqlDetailed } from '../../src/ai/extract-sql.ts';
import { createHarness, workspaceSqliteDir, type Harness } from '../support/harness.ts';

/** The best of three runs of `work`, in ms (two shared cores can deschedule one run). */
function best(work: () => unknown): number {
  return Math.min(
    ...[0, 1, 2].map(() => {
      const started = performance.now();
      work();
      return performance.now() - started;
    }),
  );
}

describe('the SQLite runner reads comment gaps once', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
    const db = new Database(path.join(workspaceSqliteDir(h, 'default'), 'gaps.db'));
    db.exec('CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1)');
    db.close();
    expect((await h.call('POST', '/api/connections', h.adminKey, { name: 'gaps', url: 'sqlite:gaps.db' })).status).toBe(201);
  }, 30_000);
  afterAll(async () => {
    await h?.close();
  });

  it('500 comments before a SELECT answer at once (2^500 ways to read them before)', async () => {
    const started = performance.now();
    const res = await h.call('POST', '/api/query', h.readerKey, {
      connectionId: 'gaps',
      sql: '/**/'.repeat(500) + 'SELECT a FROM t',
      timeoutMs: 10_000,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.rows).toEqual([[1]]);
    expect(performance.now() - started).toBeLessThan(3_000);
  }, 30_000);

  it('comments still count as blanks: EXPLAIN /* … */ QUERY PLAN and a PRAGMA in query form', async () => {
    const plan = await h.call('POST', '/api/query', h.readerKey, {
      connectionId: 'gaps',
      sql: 'EXPLAIN /* a */ /**/ QUERY -- b\n PLAN SELECT a FROM t',
    });
    expect(plan.status, JSON.stringify(plan.body)).toBe(200);
    const pragma = await h.call('POST', '/api/query', h.readerKey, {
      connectionId: 'gaps',
      sql: 'PRAGMA /* x */ main . table_info ( t ) ;  ',
    });
    expect(pragma.status, JSON.stringify(pragma.body)).toBe(200);
  });
});

describe('extract-sql reads a model reply once', () => {
  it('an unclosed fence after 20,000 blanks, and 20,000 trailing semicolons', () => {
    const blanks = '```' + ' '.repeat(20_000) + 'x';
    expect(best(() => extractSql(blanks))).toBeLessThan(50);
    const semis = 'SELECT 1' + ';'.repeat(20_000);
    expect(extractSql(semis)).toBe('SELECT 1');
    expect(best(() => extractSql(semis))).toBeLessThan(50);
    expect(best(() => extractSql('SELECT 1' + '; '.repeat(20_000)))).toBeLessThan(50);
  });

  it('fences, tags and trailing semicolons read as before', () => {
    expect(extractSqlDetailed('Here:\n```sql\nSELECT 1;\n```\nDone.')).toEqual({ sql: 'SELECT 1', prose: 'Here: Done.' });
    expect(extractSql('```  \nSELECT 2 ; ;\n```')).toBe('SELECT 2');
    expect(extractSql('```text\nnot sql\n```\n```postgres\nSELECT 3\n```')).toBe('SELECT 3');
    expect(extractSql('cut short:\n```sql\nSELECT 4 FROM t')).toBe('SELECT 4 FROM t');
    expect(extractSql("SELECT ';' ;")).toBe("SELECT ';'");
  });
});

describe('splitIdentifier reads a name once', () => {
  it('50,000 capitals in well under the 7 s they took', () => {
    expect(best(() => splitIdentifier('A'.repeat(50_000)))).toBeLessThan(50);
  });

  it('splits as before', () => {
    expect(splitIdentifier('HTTPServerName')).toEqual(['http', 'server', 'name']);
    expect(splitIdentifier('orderID2Lines')).toEqual(['order', 'id', '2', 'line']);
    expect(splitIdentifier('ABCDeFGh')).toEqual(['abc', 'de', 'f', 'gh']);
  });
});
