// A change and its audit entry are one transaction, on both store backends: concurrent grant
// changes of one connection each read what the other wrote (none drops another's user), every
// change's entry starts from the state the previous one left, a change refused halfway leaves
// neither the change nor an entry, and recordAudit refuses a plain database handle at compile time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction, recordAudit, type Actor } from '../src/audit/audit.ts';
import { grantUser, readGrants, revokeUser, writeGrants } from '../src/access/grants.ts';
import { createConnection } from '../src/connections/connections.ts';
import { InvalidRequestError } from '../src/errors.ts';
import { createSecretBox } from '../src/secrets/secret-box.ts';
import { openStore, type Store } from '../src/store/store.ts';
import { createUser } from '../src/workspaces/users.ts';
import { createWorkspace, type Workspace } from '../src/workspaces/workspaces.ts';
import { freshPostgresDatabase, tempDir } from './support/databases.ts';

const ACTOR: Actor = { userId: 'usr_actor', email: 'boss@grants.test', keyId: null, ip: null, source: 'api' };
const USERS = ['a@grants.test', 'b@grants.test', 'c@grants.test', 'd@grants.test', 'e@grants.test', 'f@grants.test'];

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`grant changes on ${backend}`, () => {
    let store: Store;
    let dropPg: (() => Promise<void>) | undefined;
    let ws: Workspace;

    beforeAll(async () => {
      if (backend === 'postgres') {
        const fresh = await freshPostgresDatabase();
        dropPg = fresh.drop;
        store = await openStore({ dataDir: tempDir(), storeUrl: fresh.url });
      } else {
        store = await openStore({ dataDir: tempDir(), storeUrl: null });
      }
      ws = await createWorkspace(store.db, { slug: 'granted', plan: 'free' });
      for (const email of USERS) await createUser(store.db, { workspace: 'granted', email, role: 'read_only' }, ACTOR);
      await createConnection(
        { db: store.db, secretBox: createSecretBox(Buffer.alloc(32, 5)), sqliteDir: tempDir() },
        ws.id,
        { name: 'wh', url: 'postgres://u:p@db.internal:5432/sales' },
        ACTOR,
      );
    });
    afterAll(async () => {
      await store.close();
      await dropPg?.();
    });

    const grantEntries = async () =>
      (
        await store.db
          .selectFrom('audit_log')
          .select(['id', 'changes'])
          .where('workspace_id', '=', ws.id)
          .where('action', '=', 'connection.grants_changed')
          .orderBy('id')
          .execute()
      ).map(
        (r) =>
          JSON.parse(r.changes ?? 'null') as { from: { everyone: boolean; users?: string[] }; to: { everyone: boolean; users?: string[] } },
      );

    it('grants made at the same time all land, and each entry starts where the previous one ended', async () => {
      await Promise.all(USERS.map((email) => grantUser(store.db, ws.id, 'wh', email, ACTOR)));
      const { grants } = await readGrants(store.db, ws.id, 'wh');
      expect(grants.everyone).toBe(false);
      expect(grants.everyone ? [] : grants.users.map((u) => u.email)).toEqual(USERS);
      const entries = await grantEntries();
      expect(entries).toHaveLength(USERS.length);
      expect(entries[0].from).toEqual({ everyone: true });
      for (let i = 1; i < entries.length; i++) expect(entries[i].from).toEqual(entries[i - 1].to);
      expect(entries.at(-1)!.to.users).toEqual(USERS);
    });

    it('revokes made at the same time as grants lose nobody else', async () => {
      const [a, b] = USERS;
      await Promise.all([
        revokeUser(store.db, ws.id, 'wh', a, ACTOR),
        revokeUser(store.db, ws.id, 'wh', b, ACTOR),
        grantUser(store.db, ws.id, 'wh', a, ACTOR),
      ]);
      const { grants } = await readGrants(store.db, ws.id, 'wh');
      const emails = grants.everyone ? [] : grants.users.map((u) => u.email);
      // a was revoked and granted again in some order; everyone else stays as they were.
      expect(emails.filter((e) => e !== a)).toEqual(USERS.slice(2));
      const entries = await grantEntries();
      for (let i = 1; i < entries.length; i++) expect(entries[i].from).toEqual(entries[i - 1].to);
    });

    it('a change refused halfway writes neither the change nor an entry', async () => {
      const before = await readGrants(store.db, ws.id, 'wh');
      const entries = (await grantEntries()).length;
      await expect(
        writeGrants(store.db, ws.id, 'wh', { everyone: false, users: ['c@grants.test', 'nobody@grants.test'] }, ACTOR),
      ).rejects.toBeInstanceOf(InvalidRequestError);
      expect(await readGrants(store.db, ws.id, 'wh')).toEqual(before);
      expect(await grantEntries()).toHaveLength(entries);
    });

    it('an audit entry rolls back with the transaction of its change', async () => {
      const count = async () =>
        Number(
          (
            await store.db
              .selectFrom('audit_log')
              .select((eb) => eb.fn.countAll().as('n'))
              .where('workspace_id', '=', ws.id)
              .executeTakeFirstOrThrow()
          ).n,
        );
      const n = await count();
      await expect(
        inTransaction(store.db, async (trx) => {
          await recordAudit(trx, {
            workspaceId: ws.id,
            actor: ACTOR,
            action: 'workspace.settings_changed',
            target: { type: 'workspace', id: ws.id },
          });
          throw new Error('the change failed after its entry');
        }),
      ).rejects.toThrow('the change failed');
      expect(await count()).toBe(n);
    });
  });
}

// Type-level: not run, only compiled (tsc checks test files). A plain handle is refused, so an
// entry cannot be written outside its change's transaction.
export function auditOutsideATransactionDoesNotCompile(store: Store): Promise<void> {
  // @ts-expect-error recordAudit takes a Transaction, never the store's Kysely
  return recordAudit(store.db, { workspaceId: 'w', actor: ACTOR, action: 'key.created', target: { type: 'key' } });
}
