// The PostgreSQL store answering 53100 disk_full is the same condition as the SQLite store's
// SQLITE_FULL: 507 storage_full with where "store", not a 500 and not a retryable 503.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { StorageFullError, StoreUnavailableError } from '../src/errors.ts';
import { classifyStoreError } from '../src/store/store-errors.ts';

describe('PostgreSQL store disk full', () => {
  it('classifies 53100 as storage_full (507) with the driver error as its cause', () => {
    const cause = Object.assign(new pg.DatabaseError('could not extend file', 0, 'error'), { code: '53100' });
    const classified = classifyStoreError(cause);
    expect(classified).toBeInstanceOf(StorageFullError);
    expect(classified).not.toBeInstanceOf(StoreUnavailableError);
    expect((classified as StorageFullError).status).toBe(507);
    expect((classified as StorageFullError).code).toBe('storage_full');
    expect((classified as StorageFullError).details).toEqual({ where: 'store' });
    expect((classified as StorageFullError).cause).toBe(cause);
  });

  it('leaves other resource errors as they were', () => {
    for (const code of ['53200', '53400']) {
      const err = Object.assign(new pg.DatabaseError('no', 0, 'error'), { code });
      expect(classifyStoreError(err)).toBe(err);
    }
  });
});
