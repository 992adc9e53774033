// src/guard/read-policy-mysql.ts alone, without a server: which names of a statement reach which
// view (qualified, in the default database, `.v`, any case), that views are followed through
// the views they read, and how definitions and column expressions are judged. The same rules
// against the real MariaDB: test/readonly-v3-mysql-plan-only.test.ts.
import { describe, expect, it } from 'vitest';
import { classifyMysql } from '../src/guard/guard-mysql.ts';
import { buildViewCatalog, findExpressionRefusal, followViews, type MysqlViewRow } from '../src/guard/read-policy-mysql.ts';

// Definitions as MariaDB 10.11 prints them in information_schema.VIEWS.
const ROWS: MysqlViewRow[] = [
  { schema: 'shop', name: 'v_plain', definition: 'select `shop`.`t`.`id` AS `id` from `shop`.`t`' },
  {
    schema: 'shop',
    name: 'v_alias',
    definition: "select `shop`.`t`.`x` + 1 AS ```x`` + 1`,concat(`shop`.`t`.`x`,'a') AS `CONCAT(x, 'a')` from `shop`.`t`",
  },
  { schema: 'shop', name: 'v_fn', definition: 'select `log_hit`() AS `x`' },
  { schema: 'shop', name: 'v_seq', definition: 'select nextval(`shop`.`s`) AS `x`' },
  { schema: 'shop', name: 'v_lock', definition: "select get_lock('x',0) AS `l`" },
  { schema: 'shop', name: 'v_over', definition: 'select `v_fn`.`x` AS `x` from `shop`.`v_fn`' },
  { schema: 'shop', name: 'v_over_over', definition: 'select `o`.`x` AS `x` from `shop`.`v_over` `o`' },
  { schema: 'shop', name: 'v_hidden', definition: '' },
  { schema: 'other', name: 'v_plain', definition: 'select `other`.`log_hit`() AS `x`' },
];

function reach(sql: string, database: string | null = 'shop') {
  const names = classifyMysql(sql).relationNames;
  expect(names, sql).toBeDefined();
  return followViews(buildViewCatalog(ROWS, new Map()), names!, database);
}

describe('which names reach a view', () => {
  it('resolves unqualified names in the default database and qualified ones in theirs', async () => {
    expect((await reach('SELECT * FROM v_plain')).refusal).toBeUndefined();
    expect((await reach('SELECT * FROM other.v_plain')).refusal?.name).toBe('other.v_plain');
    expect((await reach('SELECT * FROM `other` . `v_plain`')).refusal?.name).toBe('other.v_plain');
    expect((await reach('SELECT * FROM v_plain', 'other')).refusal?.name).toBe('other.v_plain');
    expect((await reach('SELECT * FROM v_fn', null)).refusal).toBeUndefined();
    expect((await reach('SELECT * FROM shop.v_fn', null)).refusal?.name).toBe('shop.v_fn');
  });

  it('matches `.v`, any case, quoted names, and names in every clause', async () => {
    for (const sql of [
      'SELECT * FROM .v_fn',
      'SELECT * FROM V_FN',
      'SELECT * FROM "v_fn"',
      'SELECT 1 FROM t WHERE id IN (SELECT x FROM `v_fn`)',
      'SELECT 1 ORDER BY (SELECT x FROM v_seq)',
      'WITH c AS (SELECT * FROM v_lock) SELECT * FROM c',
      'EXPLAIN DELETE t FROM t JOIN v_fn f ON f.x = t.id',
    ]) {
      expect((await reach(sql)).refusal, sql).toBeDefined();
    }
    // A comment or a string naming a view reaches nothing.
    expect((await reach("SELECT 'v_fn' /* v_fn */ FROM t")).refusal).toBeUndefined();
  });

  it('follows views through the views they read, naming the one the statement named', async () => {
    const found = await reach('SELECT * FROM v_over_over');
    expect(found.refusal).toEqual({
      what: 'View',
      name: 'shop.v_over_over',
      why: 'reads view shop.v_fn, which runs what a read may not: Function log_hit() is quoted, which calls a stored function rather than the built-in',
    });
  });

  it('refuses a definition it cannot see, calls off the allowlist and sequences; allows built-ins and auto-named columns', async () => {
    expect((await reach('SELECT * FROM v_hidden')).refusal?.why).toMatch(/lacks SHOW VIEW/);
    expect((await reach('SELECT * FROM v_seq')).refusal?.why).toMatch(/nextval\(\) is not on the MySQL\/MariaDB allowlist/);
    expect((await reach('SELECT * FROM v_lock')).refusal?.why).toMatch(/get_lock\(\)/);
    const safe = await reach('SELECT * FROM v_alias');
    expect(safe.refusal).toBeUndefined();
    expect([...safe.calls.keys()]).toEqual(['concat']);
    expect(safe.tableNames).toContain('t');
  });
});

describe('column expressions a plan-only EXPLAIN may reach', () => {
  it('refuses a sequence default and DEFAULT(col) in a generated column, allows literals and built-ins', () => {
    const at = { schema: 'shop', table: 't', column: 'c' };
    expect(
      findExpressionRefusal([
        { ...at, kind: 'default', expression: "'a(b'" },
        { ...at, kind: 'default', expression: 'current_timestamp()' },
        { ...at, kind: 'generated', expression: '`id` * 2' },
      ]),
    ).toBeUndefined();
    expect(findExpressionRefusal([{ ...at, kind: 'default', expression: 'nextval(`shop`.`s`)' }])?.why).toMatch(/^has a default \(nextval/);
    expect(findExpressionRefusal([{ ...at, kind: 'generated', expression: 'default(`id`)' }])?.name).toBe('shop.t.c');
  });
});
