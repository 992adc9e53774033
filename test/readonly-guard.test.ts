// The read-only guard decides which keys may run a statement (API.md, "Roles and permissions").
// A miss here is stopped by the engine's read-only mode only for plain writes; locks, sleeps,
// file access and session settings get through that backstop, so each attack family is pinned.
import { describe, expect, it } from 'vitest';
import { ENGINE_NAMES, type EngineName } from '../src/engines/engine.ts';
import { isSideEffectFunction, normalizeFunctionName } from '../src/sql/function-denylist.ts';
import { classifyStatement } from '../src/sql/guard.ts';
import { findStatementShape, lexSql } from '../src/sql/sql-lexer.ts';
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
    const writeTargets = /\b(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|REPLACE\s+INTO|(?<!FOR\s+(?:NO\s+KEY\s+)?)UPDATE|DELETE\s+FROM|DROP\s+TABLE|TRUNCATE(?:\s+TABLE)?|LOCK\s+TABLES?|ALTER\s+TABLE)\s+([A-Za-z_]\w*)/gi;
    for (const { sql } of [...ATTACK_STATEMENTS, ...READ_STATEMENTS]) {
      for (const match of sql.matchAll(writeTargets)) expect(match[1], sql).toMatch(/^guard_probe/);
    }
  });
});

describe.each(ENGINE_NAMES)('%s guard', (engine) => {
  const attacks = ATTACK_STATEMENTS.filter((attack) => attack.engine === engine);
  const reads = READ_STATEMENTS.filter((read) => read.engine === engine);

  it.each(attacks)('denies $sql ($why)', async (attack) => {
    const verdict = await classifyStatement(engine, attack.sql);
    expect(verdict.kind, attack.sql).toBe(attack.expected);
    expect(verdict.reason, attack.sql).toBeTruthy();
  });

  it.each(reads)('allows $sql ($why)', async (read) => {
    const verdict = await classifyStatement(engine, read.sql);
    expect(verdict, read.sql).toEqual({ kind: 'read', statementType: read.statementType });
  });

  it('rejects several statements as MULTIPLE with the one-statement reason', async () => {
    for (const sql of ['SELECT 1; SELECT 2', 'SELECT 1;;', '; SELECT 1']) {
      expect(await classifyStatement(engine, sql), sql).toEqual({
        kind: 'rejected',
        statementType: 'MULTIPLE',
        reason: 'Only one statement per request is allowed',
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

  it('treats unparseable text as a write of unknown type', async () => {
    expect(await classifyStatement(engine, 'SELEC 1 FROM guard_probe')).toEqual({
      kind: 'write',
      statementType: 'UNKNOWN',
      reason: 'Statement could not be parsed as a read',
    });
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
    const verdicts = await Promise.all(
      Array.from({ length: 5 }, () => classifyStatement('postgres', 'SELECT 1')),
    );
    expect(verdicts.every((verdict) => verdict.kind === 'read')).toBe(true);
  });
});

describe('function denylist', () => {
  it('strips schema and quotes and ignores case', () => {
    expect(normalizeFunctionName('pg_catalog."PG_SLEEP"')).toBe('pg_sleep');
    expect(normalizeFunctionName(['mysql', '`SLEEP`'])).toBe('sleep');
    expect(normalizeFunctionName('[load_extension]')).toBe('load_extension');
  });

  it('covers whole families by prefix and leaves harmless look-alikes alone', () => {
    expect(isSideEffectFunction('postgres', 'pg_try_advisory_xact_lock_shared')).toBe(true);
    expect(isSideEffectFunction('postgres', 'pg_create_logical_replication_slot')).toBe(true);
    expect(isSideEffectFunction('postgres', 'pg_stat_reset_shared')).toBe(true);
    expect(isSideEffectFunction('postgres', 'currval')).toBe(false);
    expect(isSideEffectFunction('postgres', 'pg_backend_pid')).toBe(false);
    expect(isSideEffectFunction('mysql', 'IS_FREE_LOCK')).toBe(true);
    expect(isSideEffectFunction('mysql', 'now')).toBe(false);
    expect(isSideEffectFunction('sqlite', 'zipfile_cds')).toBe(true);
    expect(isSideEffectFunction('sqlite', 'json_extract')).toBe(false);
  });

  it('is per dialect: sleep() is a MySQL function, not a PostgreSQL one', () => {
    expect(isSideEffectFunction('mysql', 'sleep')).toBe(true);
    expect(isSideEffectFunction('postgres', 'sleep')).toBe(false);
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
