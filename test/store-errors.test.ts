// Which store failures are "the store is not there right now" (503 store_unavailable, retry)
// and which stay a 500. Decided by SQLSTATE, Node error code and type only.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../src/errors.ts';
import { classifyStoreError, isStoreUnavailable } from '../src/store/store-errors.ts';

function dbError(code: string): pg.DatabaseError {
  const err = new pg.DatabaseError('server says no', 0, 'error');
  err.code = code;
  return err;
}

function systemError(code: string): Error {
  return Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code, syscall: 'connect' });
}

describe('store errors', () => {
  it('takes a stopping, starting, full or unreachable server as unavailable', () => {
    for (const code of ['57P01', '57P02', '57P03', '53300', '08006', '08001']) expect(isStoreUnavailable(dbError(code)), code).toBe(true);
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND'])
      expect(isStoreUnavailable(systemError(code)), code).toBe(true);
    // node-postgres' own: "Connection terminated unexpectedly", its connect timeout.
    expect(isStoreUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isStoreUnavailable(new AggregateError([systemError('ECONNREFUSED'), systemError('ECONNREFUSED')]))).toBe(true);
  });

  it('leaves refusals and bugs alone: a retry would not fix them', () => {
    // 42P01 undefined table, 23505 unique violation, 28P01 wrong password, 3D000 no database.
    for (const code of ['42P01', '23505', '28P01', '3D000', '53100']) expect(isStoreUnavailable(dbError(code)), code).toBe(false);
    expect(isStoreUnavailable(new TypeError('Cannot read properties of undefined'))).toBe(false);
    expect(isStoreUnavailable(Object.assign(new Error('x'), { code: 'SQLITE_CONSTRAINT' }))).toBe(false);
    expect(isStoreUnavailable('nope')).toBe(false);
  });

  it('wraps the driver error once, and passes everything else through', () => {
    const cause = systemError('ECONNREFUSED');
    const wrapped = classifyStoreError(cause);
    expect(wrapped).toBeInstanceOf(StoreUnavailableError);
    expect((wrapped as StoreUnavailableError).cause).toBe(cause);
    expect(classifyStoreError(wrapped)).toBe(wrapped);
    const refused = dbError('23505');
    expect(classifyStoreError(refused)).toBe(refused);
  });
});
