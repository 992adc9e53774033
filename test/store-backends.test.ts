// The metadata store suite, run against both backends: SQLite (the default) and a fresh
// PostgreSQL database. Same code path (Kysely), same assertions.
import { cliActor } from '../src/audit/audit.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createConnection, fieldsOf, getConnectionRow, updateConnection } from '../src/connections/connections.ts';
import { createSecretBox } from '../src/secrets/secret-box.ts';
import { InvalidApiKeyError } from '../src/errors.ts';
import { listHistory, pruneHistory } from '../src/history/history.ts';
import { HistoryLog } from '../src/history/history-log.ts';
import { firstIdAt } from '../src/ids.ts';
import { openStore, type Store } from '../src/store/store.ts';
import { authenticateKey, createApiKey, listApiKeys, revokeApiKey } from '../src/workspaces/api-keys.ts';
import { verifyPassword } from '../src/workspaces/passwords.ts';
import { createUser, setUserDisabled, setUserRole } from '../src/workspaces/users.ts';
import { createWorkspace, ensureDefaultWorkspace, getWorkspace, setWorkspacePlan } from '../src/workspaces/workspaces.ts';
import { freshPostgresDatabase, tempDir } from './support/databases.ts';

const secretBox = createSecretBox(Buffer.alloc(32, 7));

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`store on ${backend}`, () => {
    let store: Store;
    let dropPg: (() => Promise<void>) | undefined;

    beforeAll(async () => {
      if (backend === 'postgres') {
        const fresh = await freshPostgresDatabase();
        dropPg = fresh.drop;
        store = await openStore({ dataDir: tempDir(), storeUrl: fresh.url });
      } else {
        store = await openStore({ dataDir: tempDir(), storeUrl: null });
      }
      await ensureDefaultWorkspace(store.db);
      await createWorkspace(store.db, { slug: 'acme', plan: 'professional' });
      await createUser(store.db, { workspace: 'acme', email: 'Ana@Acme.test', role: 'admin', password: 'a long password' }, cliActor());
    });
    afterAll(async () => {
      await store.close();
      await dropPg?.();
    });

    it('applies migrations idempotently (a second open is a no-op)', async () => {
      expect(store.kind).toBe(backend);
      const again = await ensureDefaultWorkspace(store.db);
      expect(again.slug).toBe('default');
    });

    it('refuses duplicate workspaces and users, and bad slugs, plans and roles', async () => {
      await expect(createWorkspace(store.db, { slug: 'acme' })).rejects.toThrow(/already exists/);
      await expect(createWorkspace(store.db, { slug: 'Bad Slug!' })).rejects.toThrow(/slug/);
      await expect(setWorkspacePlan(store.db, 'acme', 'gold', cliActor())).rejects.toThrow(/plan/);
      await expect(createUser(store.db, { workspace: 'acme', email: 'ana@acme.test', role: 'admin' }, cliActor())).rejects.toThrow(
        /already exists/,
      );
      await expect(createUser(store.db, { workspace: 'acme', email: 'x@acme.test', role: 'owner' }, cliActor())).rejects.toThrow(/role/);
    });

    it('stores passwords as scrypt hashes only', async () => {
      const row = await store.db.selectFrom('users').selectAll().where('email', '=', 'ana@acme.test').executeTakeFirstOrThrow();
      expect(row.password_hash).toMatch(/^scrypt\$/);
      expect(row.password_hash).not.toContain('a long password');
      expect(await verifyPassword('a long password', row.password_hash)).toBe(true);
      expect(await verifyPassword('wrong password', row.password_hash)).toBe(false);
    });

    it('creates keys shown once, stores only their hash, and authenticates them', async () => {
      const { apiKey, secret } = await createApiKey(store.db, { workspace: 'acme', email: 'ana@acme.test', name: 'ci' });
      expect(secret).toMatch(/^dbq_[0-9A-Za-z]{38}$/);
      expect(apiKey.prefix).toBe(secret.slice(0, 12));
      const dump = JSON.stringify(await store.db.selectFrom('api_keys').selectAll().execute());
      expect(dump).not.toContain(secret);
      expect(dump).not.toContain(secret.slice(12));
      const principal = await authenticateKey(store.db, secret);
      expect(principal).toMatchObject({
        workspace: { slug: 'acme', plan: 'professional' },
        user: { email: 'ana@acme.test', role: 'admin' },
        apiKey: { id: apiKey.id, name: 'ci' },
      });
      const listed = await listApiKeys(store.db, 'acme');
      expect(listed.find((k) => k.id === apiKey.id)).toMatchObject({ name: 'ci', revokedAt: null });
      expect(JSON.stringify(listed)).not.toContain(secret);
    });

    it('refuses malformed, unknown, revoked and disabled-user keys with the same error', async () => {
      const { apiKey, secret } = await createApiKey(store.db, { workspace: 'acme', email: 'ana@acme.test', name: 'temp' });
      const tampered = secret.slice(0, -1) + (secret.endsWith('a') ? 'b' : 'a');
      await expect(authenticateKey(store.db, tampered)).rejects.toBeInstanceOf(InvalidApiKeyError);
      await expect(authenticateKey(store.db, 'dbq_short')).rejects.toBeInstanceOf(InvalidApiKeyError);
      await expect(authenticateKey(store.db, null)).rejects.toBeInstanceOf(InvalidApiKeyError);

      await setUserRole(store.db, 'acme', 'ana@acme.test', 'read_only', cliActor());
      expect((await authenticateKey(store.db, secret)).user.role).toBe('read_only');
      await setUserRole(store.db, 'acme', 'ana@acme.test', 'admin', cliActor());

      await setUserDisabled(store.db, 'acme', 'ana@acme.test', true, cliActor());
      await expect(authenticateKey(store.db, secret)).rejects.toBeInstanceOf(InvalidApiKeyError);
      await setUserDisabled(store.db, 'acme', 'ana@acme.test', false, cliActor());
      await authenticateKey(store.db, secret);

      await revokeApiKey(store.db, 'acme', apiKey.id);
      await expect(authenticateKey(store.db, secret)).rejects.toBeInstanceOf(InvalidApiKeyError);
    });

    it('plan changes are visible to the next authentication', async () => {
      const { secret } = await createApiKey(store.db, { workspace: 'acme', email: 'ana@acme.test', name: 'plan' });
      await setWorkspacePlan(store.db, 'acme', 'enterprise', cliActor());
      expect((await authenticateKey(store.db, secret)).workspace.plan).toBe('enterprise');
      await setWorkspacePlan(store.db, 'acme', 'professional', cliActor());
    });

    it('seals connection passwords (AES-256-GCM, bound to the record id)', async () => {
      const ws = await getWorkspace(store.db, 'acme');
      const deps = { db: store.db, secretBox, sqliteDir: tempDir() };
      const rec = await createConnection(
        deps,
        ws.id,
        { name: 'wh', url: 'postgres://analyst:s3cret-pw@db.internal:5432/sales?sslmode=require' },
        cliActor(),
      );
      expect(rec).toMatchObject({
        engine: 'postgres',
        host: 'db.internal',
        port: 5432,
        database: 'sales',
        user: 'analyst',
        ssl: true,
        readOnly: false,
      });
      expect(JSON.stringify(rec)).not.toContain('s3cret-pw');
      const row = await getConnectionRow(store.db, ws.id, 'wh');
      expect(row.secret).toMatch(/^v1:/);
      expect(JSON.stringify(row)).not.toContain('s3cret-pw');
      expect(fieldsOf(row, secretBox).password).toBe('s3cret-pw');
      // A sealed secret moved to another record does not open.
      expect(() => secretBox.open(row.secret!, 'conn_other')).toThrow();
      await expect(createConnection(deps, ws.id, { name: 'wh', url: 'postgres://h/db' }, cliActor())).rejects.toThrow(/already exists/);
      const patched = await updateConnection(deps, ws.id, 'wh', { readOnly: true }, cliActor());
      expect(patched.readOnly).toBe(true);
      expect(patched.updatedAt > rec.updatedAt).toBe(true);
      expect(fieldsOf(await getConnectionRow(store.db, ws.id, rec.id), secretBox).password).toBe('s3cret-pw');
    });

    it('pages history by keyset without skips or repeats while entries arrive', async () => {
      const ws = await getWorkspace(store.db, 'acme');
      const principal = await authenticateKey(
        store.db,
        (await createApiKey(store.db, { workspace: 'acme', email: 'ana@acme.test', name: 'h' })).secret,
      );
      const history = new HistoryLog(store);
      const write = (i: number) =>
        history.write({
          principal,
          queryId: `q_${i}`,
          connection: { id: 'conn_x', name: 'x' },
          sql: `SELECT ${i}`,
          statementType: 'SELECT',
          status: i < 100 && i % 5 === 0 ? 'failed' : 'succeeded',
          rowCount: 1,
          affectedRows: null,
          durationMs: 1,
          error: null,
          source: 'api',
        });
      for (let i = 0; i < 25; i++) await write(i);
      const seen: string[] = [];
      let cursor: string | undefined;
      let extra = 100;
      do {
        const page = await listHistory(store.db, principal, { limit: 7, cursor });
        seen.push(...page.entries.map((e) => e.sql));
        await write(extra++); // new entries arrive between pages
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      const expected = Array.from({ length: 25 }, (_, i) => `SELECT ${24 - i}`);
      expect(seen).toEqual(expected);
      const failed = await listHistory(store.db, principal, { limit: 200, status: 'failed', search: 'select 1' });
      expect(failed.entries.map((e) => e.sql)).toEqual(['SELECT 15', 'SELECT 10']);
      expect(ws.id).toBe(principal.workspace.id);
    });

    it('prunes history past retention, and nothing newer', async () => {
      // Backdated the way an old entry really is: its id starts with its creation time.
      const old = Date.parse('2000-01-01T00:00:00.000Z');
      const oldId = `${firstIdAt('h', old)}${'0'.repeat(16)}`;
      await sql`update query_history set id = ${oldId}, created_at = ${new Date(old).toISOString()} where sql = 'SELECT 0'`.execute(
        store.db,
      );
      const principal = await authenticateKey(
        store.db,
        (await createApiKey(store.db, { workspace: 'acme', email: 'ana@acme.test', name: 'p' })).secret,
      );
      const before = (await listHistory(store.db, principal, { limit: 200 })).entries.length;
      expect(await pruneHistory(store.db, 90)).toBe(1);
      expect(await pruneHistory(store.db, 90)).toBe(0);
      expect((await listHistory(store.db, principal, { limit: 200 })).entries.length).toBe(before - 1);
    });
  });
}
