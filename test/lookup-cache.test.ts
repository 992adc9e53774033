// Key and connection look-ups are memoised on the SQLite store for speed. The cache must never
// serve a stale answer: not after our own writes, and not after another process (a second
// SQLite connection standing in for the CLI) commits a change.
import { cliActor } from '../src/audit/audit.ts';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../src/store/store.ts';
import { authenticateKey, createApiKey } from '../src/workspaces/api-keys.ts';
import { InvalidApiKeyError } from '../src/errors.ts';
import { createUser } from '../src/workspaces/users.ts';
import { ensureDefaultWorkspace } from '../src/workspaces/workspaces.ts';
import { tempDir } from './support/databases.ts';

let store: Store;
let dir: string;

beforeAll(async () => {
  dir = tempDir();
  store = await openStore({ dataDir: dir, storeUrl: null });
  await ensureDefaultWorkspace(store.db);
  await createUser(store.db, { workspace: 'default', email: 'a@b.test', role: 'admin' }, cliActor());
});
afterAll(async () => {
  await store.close();
});

describe('memoised look-ups on the SQLite store', () => {
  it('serves a repeated look-up from the cache while nothing changed', async () => {
    const { secret } = await createApiKey(store.db, { workspace: 'default', email: 'a@b.test', name: 'k' });
    let loads = 0;
    const load = async () => ++loads;
    await store.memo('x', load);
    await store.memo('x', load);
    expect(loads).toBe(1);
    await authenticateKey(store.db, secret, store.memo);
    expect((await authenticateKey(store.db, secret, store.memo)).user.role).toBe('admin');
  });

  it('drops the cache after a write by another connection (another process)', async () => {
    const { secret } = await createApiKey(store.db, { workspace: 'default', email: 'a@b.test', name: 'k2' });
    await authenticateKey(store.db, secret, store.memo);
    const other = new Database(path.join(dir, 'dbq.sqlite'));
    other.prepare("UPDATE api_keys SET revoked_at = '2026-01-01T00:00:00.000Z' WHERE name = 'k2'").run();
    other.close();
    await expect(authenticateKey(store.db, secret, store.memo)).rejects.toBeInstanceOf(InvalidApiKeyError);
  });

  it('drops the cache after our own write to any table but the history', async () => {
    const { secret } = await createApiKey(store.db, { workspace: 'default', email: 'a@b.test', name: 'k3' });
    await authenticateKey(store.db, secret, store.memo);
    const before = store.epoch();
    await store.db.updateTable('users').set({ role: 'read_only' }).where('email', '=', 'a@b.test').execute();
    expect(store.epoch()).not.toBe(before);
    expect((await authenticateKey(store.db, secret, store.memo)).user.role).toBe('read_only');
    const afterUser = store.epoch();
    await store.db
      .insertInto('query_history')
      .values({
        id: 'h_00000000000000000000000000',
        workspace_id: (await ensureDefaultWorkspace(store.db)).id,
        query_id: 'q',
        connection_id: 'c',
        connection_name: 'c',
        sql: 'SELECT 1',
        statement_type: 'SELECT',
        status: 'succeeded',
        row_count: 1,
        affected_rows: null,
        duration_ms: 1,
        error: null,
        source: 'api',
        api_key_id: null,
        api_key_name: null,
        user_id: 'u',
        user_email: 'e',
        created_at: new Date().toISOString(),
      })
      .execute();
    expect(store.epoch()).toBe(afterUser);
  });
});
