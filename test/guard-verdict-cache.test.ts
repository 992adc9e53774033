// The guard caches verdicts by dialect and text. A cached verdict must never answer for
// another dialect (PRAGMA is a read on SQLite only), must be the same as a fresh parse, and
// must not be changeable by a caller.
import { describe, expect, it } from 'vitest';
import { classifyStatement } from '../src/guard/guard.ts';

describe('guard verdict cache', () => {
  it('keeps dialects apart, whichever is asked first', async () => {
    const pragma = `PRAGMA table_info(cache_${Date.now()})`;
    expect((await classifyStatement('sqlite', pragma)).kind).toBe('read');
    expect((await classifyStatement('mysql', pragma)).kind).toBe('write');
    // PostgreSQL's own grammar has no PRAGMA: a syntax error (422 for every role).
    expect((await classifyStatement('postgres', pragma)).kind).toBe('invalid');
    expect((await classifyStatement('sqlite', pragma)).kind).toBe('read');
    const show = `SHOW TABLES /* ${Date.now()} */`;
    expect((await classifyStatement('mysql', show)).kind).toBe('read');
    expect((await classifyStatement('sqlite', show)).kind).toBe('write');
  });

  it('answers a repeated statement exactly as the first time, refusals included', async () => {
    for (const sql of ['SELECT 1; DROP TABLE t', 'WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d', 'SELECT 1']) {
      const first = await classifyStatement('postgres', sql);
      const again = await classifyStatement('postgres', sql);
      expect(again).toEqual(first);
    }
    expect((await classifyStatement('postgres', 'SELECT 1; DROP TABLE t')).kind).toBe('rejected');
  });

  it('hands out verdicts no caller can change for the next one', async () => {
    const verdict = await classifyStatement('postgres', 'DELETE FROM cache_t');
    expect(() => {
      (verdict as { kind: string }).kind = 'read';
    }).toThrow(TypeError);
    expect((await classifyStatement('postgres', 'DELETE FROM cache_t')).kind).toBe('write');
  });

  it('classifies texts too long to cache on every call', async () => {
    const long = `SELECT 1 /* ${'x'.repeat(5000)} */; DELETE FROM t`;
    expect((await classifyStatement('postgres', long)).kind).toBe('rejected');
    expect((await classifyStatement('postgres', long)).kind).toBe('rejected');
  });
});
