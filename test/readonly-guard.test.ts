// The read-only guard decides which keys may run a statement (API.md, "Roles and permissions").
// A miss here is stopped by the engine's read-only mode only for plain writes; locks, sleeps,
// file access and session settings get through that backstop, so each attack family is pinned.
// The whole decision is asked (src/guard/decide.ts): the parser, then the connection's own
// catalog (PostgreSQL) or compiler (text the parser cannot read), on the real servers.
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE_NAMES, type Engine, type EngineName } from '../src/engines/engine.ts';
import { createEngine } from '../src/engines/index.ts';
import { ConnectionGuard } from '../src/guard/connection-guard.ts';
import { decideStatement } from '../src/guard/decide.ts';
import { findDisallowedCall } from '../src/guard/call-gate.ts';
import { classifyStatement } from '../src/guard/guard.ts';
import { MYSQL_FUNCTIONS, MYSQL_PAREN_KEYWORDS } from '../src/guard/allowlist-mysql.ts';
import { SQLITE_FUNCTIONS, SQLITE_PAREN_KEYWORDS } from '../src/guard/allowlist-sqlite.ts';
import { tempDir } from './support/databases.ts';
import { findStatementShape, lexSql } from '../src/guard/sql-lexer.ts';
import { ATTACK_STATEMENTS } from './fixtures/attack-statements.ts';
import { READ_STATEMENTS } from './fixtures/read-statements.ts';

describe('guard fixtures', () => {
  it('hold enough attacks and reads for every engine', () => {
    expect(ATTACK_STATEMENTS.length).toBeGreaterThanOrEqual(60);
    expect(READ_STATEMENTS.length).toBeGreaterThanOrEqual(25);
    for (const engine of ENGINE_NAMES) {
      expect(ATTACK_STATEMENTS.filter((attack) => attack.engine === engine).length).toBeGreaterThanOrEqual(20);
      expect(READ_STATEMENTS.filter((read) => read.engine === engine).length).toBeGreaterThanOrEqual(10);
    }
  });

  it('aim every write at the guard_probe family, so replays against real databases stay contained', () => {
    const writeTargets =
      /\b(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|REPLACE\s+INTO|(?<!FOR\s+(?:NO\s+KEY\s+)?)UPDATE|DELETE\s+FROM|DROP\s+TABLE|TRUNCATE(?:\s+TABLE)?|LOCK\s+TABLES?|ALTER\s+TABLE)\s+([A-Za-z_]\w*)/gi;
    for (const { sql } of [...ATTACK_STATEMENTS, ...READ_STATEMENTS]) {
      for (const match of sql.matchAll(writeTargets)) expect(match[1], sql).toMatch(/^guard_probe/);
    }
  });
});

const engines = {} as Record<EngineName, Engine>;
/** One per engine, as Services.readGuards keeps them: the catalog is loaded once. */
const guards = {} as Record<EngineName, ConnectionGuard>;
const sqliteDir = tempDir('dbq-guard-');

beforeAll(() => {
  const file = path.join(sqliteDir, 'guard.db');
  const lite = new Database(file);
  lite.exec('CREATE TABLE IF NOT EXISTS guard_probe (id integer PRIMARY KEY, v text)');
  lite.close();
  const common = { password: null, ssl: false, maxConnections: 2, acquireTimeoutMs: 5000, connectTimeoutMs: 5000 };
  engines.postgres = createEngine({ ...common, engine: 'postgres', host: '127.0.0.1', port: 5432, database: 'test', user: 'postgres' });
  engines.mysql = createEngine({ ...common, engine: 'mysql', host: '127.0.0.1', port: 3306, database: 'test', user: 'root' });
  engines.sqlite = createEngine({ ...common, engine: 'sqlite', host: null, port: null, database: file, user: null });
  for (const name of ENGINE_NAMES) guards[name] = new ConnectionGuard(engines[name]);
});

afterAll(async () => {
  await Promise.all(Object.values(engines).map((engine) => engine.close()));
  fs.rmSync(sqliteDir, { recursive: true, force: true });
});

describe.each(ENGINE_NAMES)('%s guard', (engine) => {
  const attacks = ATTACK_STATEMENTS.filter((attack) => attack.engine === engine);
  const reads = READ_STATEMENTS.filter((read) => read.engine === engine);

  it.each(attacks)('denies $sql ($why)', async (attack) => {
    const verdict = await decideStatement(guards[engine], attack.sql);
    // A statement the engine cannot compile is refused as invalid: it never runs either.
    expect(verdict.kind === 'invalid' ? 'write' : verdict.kind, attack.sql).toBe(attack.expected);
    expect(verdict.reason, attack.sql).toBeTruthy();
  });

  it.each(reads)('allows $sql ($why)', async (read) => {
    const verdict = await decideStatement(guards[engine], read.sql);
    expect({ kind: verdict.kind, statementType: verdict.statementType, reason: verdict.reason }, read.sql).toEqual({
      kind: 'read',
      statementType: read.statementType,
      reason: undefined,
    });
  });

  it('rejects several statements as MULTIPLE with the one-statement reason', async () => {
    for (const sql of ['SELECT 1; SELECT 2', 'SELECT 1;;', '; SELECT 1']) {
      expect(await classifyStatement(engine, sql), sql).toEqual({
        kind: 'rejected',
        statementType: 'MULTIPLE',
        reason: 'Only one statement per request is allowed',
        refusal: 'multiple_statements',
      });
    }
  });

  it('rejects empty text and text that is only comments', async () => {
    for (const sql of ['', '   \n', '/* nothing */', '-- nothing\n', ';']) {
      const verdict = await classifyStatement(engine, sql);
      expect(verdict.kind, JSON.stringify(sql)).toBe('rejected');
      expect(verdict.statementType).toBe('EMPTY');
    }
  });

  it("answers a typo with the engine's own syntax error, for every role", async () => {
    for (const sql of ['SELEC 1 FROM guard_probe', 'SELECT * FROMM guard_probe']) {
      const verdict = await decideStatement(guards[engine], sql);
      expect(verdict.kind, sql).toBe('invalid');
      expect(verdict.reason, sql).toMatch(/syntax/i);
    }
  });
});

describe('statement types', () => {
  const cases: [EngineName, string, string][] = [
    ['postgres', 'WITH p AS (SELECT 1) SELECT * FROM p', 'SELECT'],
    ['postgres', 'WITH p AS (SELECT 1) DELETE FROM guard_probe', 'DELETE'],
    ['postgres', "INSERT INTO guard_probe VALUES (1, 'x')", 'INSERT'],
    ['postgres', "UPDATE guard_probe SET v = 'x'", 'UPDATE'],
    ['postgres', 'CREATE INDEX ON guard_probe (id)', 'CREATE'],
    ['postgres', 'DROP TABLE guard_probe', 'DROP'],
    ['postgres', 'ALTER TABLE guard_probe ADD COLUMN w int', 'ALTER'],
    ['postgres', 'SET work_mem = 1024', 'SET'],
    ['postgres', 'BEGIN', 'BEGIN'],
    ['postgres', 'ROLLBACK', 'ROLLBACK'],
    ['postgres', 'ANALYZE guard_probe', 'ANALYZE'],
    ['postgres', 'REVOKE ALL ON guard_probe FROM PUBLIC', 'REVOKE'],
    ['mysql', 'SET @a = 1', 'SET'],
    ['mysql', 'BEGIN', 'BEGIN'],
    ['mysql', 'DROP TABLE guard_probe', 'DROP'],
    ['mysql', 'ALTER TABLE guard_probe ADD COLUMN w int', 'ALTER'],
    ['mysql', 'HANDLER guard_probe OPEN', 'HANDLER'],
    ['sqlite', 'PRAGMA journal_mode = WAL', 'PRAGMA'],
    ['sqlite', 'VACUUM', 'VACUUM'],
    ['sqlite', "ATTACH ':memory:' AS guard_attached", 'ATTACH'],
    ['sqlite', 'CREATE TABLE guard_probe_copy (id int)', 'CREATE'],
  ];

  it.each(cases)('%s: %s is %s', async (engine, sql, statementType) => {
    expect((await classifyStatement(engine, sql)).statementType).toBe(statementType);
  });
});

describe('postgres parser loading', () => {
  it('serves concurrent first calls from one module load', async () => {
    const verdicts = await Promise.all(Array.from({ length: 5 }, () => classifyStatement('postgres', 'SELECT 1')));
    expect(verdicts.every((verdict) => verdict.kind === 'read')).toBe(true);
  });
});

describe('function allowlists of MySQL and SQLite, on the text', () => {
  const mysql = { engine: 'MySQL/MariaDB', functions: MYSQL_FUNCTIONS, parenKeywords: MYSQL_PAREN_KEYWORDS };
  const sqlite = { engine: 'SQLite', functions: SQLITE_FUNCTIONS, parenKeywords: SQLITE_PAREN_KEYWORDS };

  it('refuses every call that is not a vetted built-in, however it is spelled', () => {
    for (const text of [
      'SELECT sleep(1)',
      'SELECT SLEEP (1)',
      'SELECT `sleep`(1)',
      'SELECT test.f(1)',
      'SELECT myudf(1)',
      'SELECT x FROM t WHERE get_lock(1, 0)',
    ]) {
      expect(findDisallowedCall(text, mysql), text).toBeDefined();
    }
    for (const text of [
      'SELECT load_extension(1)',
      'SELECT "load_extension"(1)',
      'SELECT [readfile](1)',
      'SELECT main.f(1)',
      'SELECT app_udf(1)',
    ]) {
      expect(findDisallowedCall(text, sqlite), text).toBeDefined();
    }
  });

  it('names the function it refused', () => {
    expect(findDisallowedCall('SELECT lower(a), GET_LOCK(1, 0)', mysql)?.name).toBe('get_lock');
  });

  it('lets keywords, types and column lists take a parenthesis', () => {
    for (const text of [
      'SELECT a FROM t WHERE a IN (1, 2) AND EXISTS (SELECT 1)',
      'SELECT CAST(a AS DECIMAL(10, 2)), CONVERT(a, CHAR(3)) FROM t',
      'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT * FROM r',
      'SELECT row_number() OVER (PARTITION BY a) FROM t',
    ]) {
      expect(findDisallowedCall(text, mysql), text).toBeUndefined();
    }
    expect(findDisallowedCall('SELECT count(*) FILTER (WHERE a > 1) FROM (VALUES (1), (2)) AS v', sqlite)).toBeUndefined();
  });

  it('does not take a call followed by AS for a CTE column list', () => {
    expect(findDisallowedCall('SELECT sleep(5) AS x', mysql)).toBeDefined();
    expect(findDisallowedCall('WITH a AS (SELECT 1), sleep(5) AS x SELECT 1', mysql)).toBeDefined();
  });
});

describe('statement splitting', () => {
  const shape = (engine: EngineName, sql: string) => findStatementShape(lexSql(sql, engine)).shape;

  it('follows each engine’s comment rules', () => {
    expect(shape('mysql', 'SELECT 1 # ;\n')).toBe('single');
    expect(shape('postgres', 'SELECT 1 /* /* ; */ ; */')).toBe('single');
    expect(shape('mysql', 'SELECT 1 /* /* */ ; */')).toBe('multiple');
    expect(shape('sqlite', "SELECT '\\'; SELECT 2")).toBe('multiple');
    expect(shape('mysql', "SELECT '\\'; SELECT 2'")).toBe('single');
  });

  it('reports text that reads differently to the parser and the server', () => {
    const problems = (engine: EngineName, sql: string) => lexSql(sql, engine).problems.map((problem) => problem.code);
    expect(problems('mysql', 'SELECT /*!50000 1 */')).toContain('executable-comment');
    expect(problems('mysql', 'SELECT /*M!100000 1 */')).toContain('executable-comment');
    expect(problems('mysql', 'SELECT /*+ BKA(t) */ 1')).toContain('optimizer-hint');
    expect(problems('mysql', 'SELECT 1--1')).toContain('dash-dash-operator');
    expect(problems('mysql', "SELECT 'a\\''")).toContain('ambiguous-backslash');
    expect(problems('sqlite', 'SELECT #a')).toContain('hash-parameter');
    expect(problems('mysql', "SELECT '/*!50000 not a comment */'")).toEqual([]);
  });
});
