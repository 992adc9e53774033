// The audit log's core on both store backends (SQLite and a fresh PostgreSQL database): the
// changes made through core functions are appended with actor, target and changes; listing is
// admin-only, newest first and keyset-paged with no skips or repeats while entries are added;
// every filter; retention removes only entries older than DBQ_AUDIT_DAYS.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliActor, inTransaction, recordAudit, type Actor, type AuditEvent } from '../src/audit/audit.ts';
import { auditQuerySchema, listAudit, pruneAudit } from '../src/audit/audit-list.ts';
import { loadConfig } from '../src/config.ts';
import { createConnection, deleteConnection, updateConnection } from '../src/connections/connections.ts';
import { createSecretBox } from '../src/secrets/secret-box.ts';
import { InsufficientPermissionsError, InvalidRequestError } from '../src/errors.ts';
import { firstIdAt } from '../src/ids.ts';
import { openStore, type Store } from '../src/store/store.ts';
import type { Principal } from '../src/workspaces/api-keys.ts';
import { createUser, setUserDisabled, setUserRole } from '../src/workspaces/users.ts';
import { createWorkspace, setWorkspacePlan, type Workspace } from '../src/workspaces/workspaces.ts';
import { startServer } from '../src/server/server.ts';
import { freshPostgresDatabase, tempDir } from './support/databases.ts';
import { createHarness } from './support/harness.ts';

/** An entry alone, in its own transaction (recordAudit takes the transaction of a change). */
const appendAudit = (db: Parameters<typeof inTransaction>[0], e: AuditEvent) => inTransaction(db, (trx) => recordAudit(trx, e));

const secretBox = createSecretBox(Buffer.alloc(32, 9));
const ACTOR: Actor = { userId: 'usr_actor', email: 'boss@audit.test', keyId: 'key_actor', ip: '10.1.2.3', source: 'api' };

function principalOf(ws: Workspace, role: 'admin' | 'read_only'): Principal {
  return {
    workspace: { id: ws.id, slug: ws.slug, plan: ws.plan },
    user: { id: 'usr_x', email: 'x@audit.test', role, accountRole: role },
    apiKey: null,
  };
}

const q = (input: Record<string, unknown> = {}) => auditQuerySchema.parse(input);

/** An entry id made `daysAgo` days ago (ids start with their time, src/ids.ts). */
function idDaysAgo(daysAgo: number): string {
  return `${firstIdAt('aud', Date.now() - daysAgo * 86_400_000)}${randomBytes(10)
    .toString('hex')
    .replace(/[^0-9a-z]/g, '0')
    .slice(0, 16)}`;
}

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`audit log on ${backend}`, () => {
    let store: Store;
    let dropPg: (() => Promise<void>) | undefined;
    let ws: Workspace;
    let admin: Principal;

    beforeAll(async () => {
      if (backend === 'postgres') {
        const fresh = await freshPostgresDatabase();
        dropPg = fresh.drop;
        store = await openStore({ dataDir: tempDir(), storeUrl: fresh.url });
      } else {
        store = await openStore({ dataDir: tempDir(), storeUrl: null });
      }
      ws = await createWorkspace(store.db, { slug: 'audited', plan: 'free' });
      await createWorkspace(store.db, { slug: 'elsewhere', plan: 'free' });
      admin = principalOf(ws, 'admin');
    });
    afterAll(async () => {
      await store.close();
      await dropPg?.();
    });

    it('records user, plan and connection changes with actor, target and changes, and nothing for a no-op', async () => {
      const u = await createUser(
        store.db,
        { workspace: 'audited', email: 'New@Audit.test', role: 'read_only', password: 'a long password' },
        ACTOR,
      );
      await setUserRole(store.db, 'audited', u.email, 'admin', ACTOR);
      await setUserRole(store.db, 'audited', u.email, 'admin', ACTOR); // unchanged: no entry
      await setUserDisabled(store.db, 'audited', u.email, true, ACTOR);
      await setUserDisabled(store.db, 'audited', u.email, true, ACTOR); // unchanged
      await setUserDisabled(store.db, 'audited', u.email, false, ACTOR);
      await setWorkspacePlan(store.db, 'audited', 'professional', ACTOR);
      await setWorkspacePlan(store.db, 'audited', 'professional', ACTOR); // unchanged
      const deps = { db: store.db, secretBox, sqliteDir: tempDir() };
      const c = await createConnection(deps, ws.id, { name: 'wh', url: 'postgres://analyst:Core-Secret-1@db.internal:5432/sales' }, ACTOR);
      await updateConnection(deps, ws.id, 'wh', { readOnly: true, url: 'postgres://analyst:Core-Secret-2@db2.internal:5432/sales' }, ACTOR);
      await updateConnection(deps, ws.id, 'wh', { readOnly: true }, ACTOR); // unchanged
      await deleteConnection(store.db, ws.id, 'wh', ACTOR);

      const { entries } = await listAudit(store.db, admin, q());
      const actions = entries.map((e) => e.action).reverse();
      expect(actions).toEqual([
        'user.created',
        'user.role_changed',
        'user.disabled',
        'user.enabled',
        'workspace.plan_changed',
        'connection.created',
        'connection.updated',
        'connection.deleted',
      ]);
      for (const e of entries) {
        expect(e.actor).toEqual({ userId: 'usr_actor', email: 'boss@audit.test', keyId: 'key_actor' });
        expect(e).toMatchObject({ ip: '10.1.2.3', source: 'api' });
        expect(e.id).toMatch(/^aud_[0-9a-z]{26}$/);
        expect(Date.parse(e.createdAt)).toBeGreaterThan(Date.now() - 60_000);
      }
      const by = (a: string) => entries.find((e) => e.action === a)!;
      expect(by('user.created')).toMatchObject({
        target: { type: 'user', id: u.id, name: 'new@audit.test' },
        changes: { role: 'read_only' },
      });
      expect(by('user.role_changed').changes).toEqual({ role: { from: 'read_only', to: 'admin' } });
      expect(by('user.disabled')).toMatchObject({ target: { type: 'user', id: u.id }, changes: null });
      expect(by('workspace.plan_changed')).toMatchObject({
        target: { type: 'workspace', id: ws.id, name: 'audited' },
        changes: { plan: { from: 'free', to: 'professional' } },
      });
      expect(by('connection.created')).toMatchObject({
        target: { type: 'connection', id: c.id, name: 'wh' },
        changes: { host: 'db.internal', user: 'analyst', password: 'set' },
      });
      expect(by('connection.updated').changes).toEqual({
        host: { from: 'db.internal', to: 'db2.internal' },
        readOnly: { from: false, to: true },
        password: 'changed',
      });
      const stored = JSON.stringify(await store.db.selectFrom('audit_log').selectAll().execute());
      expect(stored).not.toContain('Core-Secret');
    });

    it('is for admins only: a reader gets 403', async () => {
      await expect(listAudit(store.db, principalOf(ws, 'read_only'), q())).rejects.toBeInstanceOf(InsufficientPermissionsError);
    });

    it('shows only its own workspace', async () => {
      const other = principalOf(
        {
          ...ws,
          id: (await store.db.selectFrom('workspaces').select('id').where('slug', '=', 'elsewhere').executeTakeFirstOrThrow()).id,
          slug: 'elsewhere',
        },
        'admin',
      );
      expect((await listAudit(store.db, other, q())).entries).toEqual([]);
    });

    it('pages newest first by keyset, with no skips or repeats while entries are added', async () => {
      const pager = await createWorkspace(store.db, { slug: `pager-${backend}`, plan: 'free' });
      const p = principalOf(pager, 'admin');
      const add = (i: number) =>
        appendAudit(store.db, {
          workspaceId: pager.id,
          actor: ACTOR,
          action: 'tool.created',
          target: { type: 'tool', id: `t${i}`, name: `tool_${i}` },
        });
      for (let i = 0; i < 45; i++) await add(i);
      const before = (
        await store.db.selectFrom('audit_log').select('id').where('workspace_id', '=', pager.id).orderBy('id', 'desc').execute()
      ).map((r) => r.id);
      const seen: string[] = [];
      let cursor: string | undefined;
      let extra = 100;
      for (;;) {
        const page = await listAudit(store.db, p, q({ limit: 7, ...(cursor ? { cursor } : {}) }));
        seen.push(...page.entries.map((e) => e.id));
        // Appended while paging: newer than the cursor, so neither shifts nor repeats a page.
        await add(extra++);
        await add(extra++);
        if (!page.nextCursor) break;
        cursor = page.nextCursor;
      }
      expect(seen).toEqual(before);
      expect(new Set(seen).size).toBe(45);
      const fresh = await listAudit(store.db, p, q({ limit: 200 }));
      expect(fresh.entries).toHaveLength(45 + (extra - 100));
    });

    it('filters by action, actor (user id, key id or email), target (id or name) and time', async () => {
      const f = await createWorkspace(store.db, { slug: `filters-${backend}`, plan: 'free' });
      const p = principalOf(f, 'admin');
      const cli = cliActor();
      const other: Actor = { userId: 'usr_other', email: 'other@audit.test', keyId: null, ip: null, source: 'ui' };
      await appendAudit(store.db, {
        workspaceId: f.id,
        actor: ACTOR,
        action: 'key.created',
        target: { type: 'key', id: 'key_1', name: 'ci' },
      });
      await appendAudit(store.db, {
        workspaceId: f.id,
        actor: other,
        action: 'tool.deleted',
        target: { type: 'tool', id: 'tool_9', name: 'orders' },
      });
      await appendAudit(store.db, {
        workspaceId: f.id,
        actor: cli,
        action: 'workspace.plan_changed',
        target: { type: 'workspace', id: f.id, name: f.slug },
      });
      const names = async (input: Record<string, unknown>) => (await listAudit(store.db, p, q(input))).entries.map((e) => e.action);
      expect(await names({ action: 'tool.deleted' })).toEqual(['tool.deleted']);
      expect(await names({ actorId: 'usr_actor' })).toEqual(['key.created']);
      expect(await names({ actorId: 'key_actor' })).toEqual(['key.created']);
      expect(await names({ actorId: 'OTHER@audit.test' })).toEqual(['tool.deleted']);
      expect(await names({ actorId: cli.email })).toEqual(['workspace.plan_changed']);
      expect(await names({ targetId: 'key_1' })).toEqual(['key.created']);
      expect(await names({ targetId: 'orders' })).toEqual(['tool.deleted']);
      expect(await names({ action: 'key.created', actorId: 'usr_other' })).toEqual([]);
      const past = new Date(Date.now() - 3_600_000).toISOString();
      const future = new Date(Date.now() + 3_600_000).toISOString();
      expect(await names({ since: future })).toEqual([]);
      expect(await names({ until: past })).toEqual([]);
      expect(await names({ since: past, until: future })).toHaveLength(3);
      expect(await names({ since: '1960-01-01T00:00:00Z' })).toHaveLength(3);
    });

    it('refuses a forged cursor and unknown parameters', async () => {
      await expect(listAudit(store.db, admin, q({ cursor: 'bm90LWEtY3Vyc29y' }))).rejects.toBeInstanceOf(InvalidRequestError);
      expect(auditQuerySchema.safeParse({ limit: 0 }).success).toBe(false);
      expect(auditQuerySchema.safeParse({ limit: 201 }).success).toBe(false);
      expect(auditQuerySchema.safeParse({ action: 'key.stolen' }).success).toBe(false);
      expect(auditQuerySchema.safeParse({ sort: 'asc' }).success).toBe(false);
      expect(auditQuerySchema.parse({}).limit).toBe(50);
    });

    it('is append-only in the store itself: an UPDATE is refused and the entry stays as written', async () => {
      const a = await createWorkspace(store.db, { slug: `append-only-${backend}`, plan: 'free' });
      await appendAudit(store.db, {
        workspaceId: a.id,
        actor: ACTOR,
        action: 'key.revoked',
        target: { type: 'key', id: 'key_x', name: 'ci' },
      });
      const before = await store.db.selectFrom('audit_log').selectAll().where('workspace_id', '=', a.id).execute();
      await expect(
        store.db
          .updateTable('audit_log')
          .set({ action: 'key.created', actor_email: 'someone-else' })
          .where('workspace_id', '=', a.id)
          .execute(),
      ).rejects.toThrow(/append-only/);
      expect(await store.db.selectFrom('audit_log').selectAll().where('workspace_id', '=', a.id).execute()).toEqual(before);
    });

    it('retention removes only entries older than the given days, in batches', async () => {
      const r = await createWorkspace(store.db, { slug: `retention-${backend}`, plan: 'free' });
      const row = (id: string) => ({
        id,
        workspace_id: r.id,
        action: 'key.created',
        actor_user_id: null,
        actor_email: 'dbq',
        actor_key_id: null,
        target_type: 'key',
        target_id: id,
        target_name: null,
        changes: null,
        ip: null,
        source: 'api' as const,
        created_at: new Date().toISOString(),
      });
      const old = [idDaysAgo(400), idDaysAgo(366), idDaysAgo(365.01), idDaysAgo(3000), idDaysAgo(500)];
      const kept = [idDaysAgo(364.9), idDaysAgo(10)];
      await store.db
        .insertInto('audit_log')
        .values([...old, ...kept].map(row))
        .execute();
      expect(await pruneAudit(store.db, 365, 2)).toBeGreaterThanOrEqual(old.length);
      const left = (await store.db.selectFrom('audit_log').select('id').where('workspace_id', '=', r.id).execute()).map((x) => x.id).sort();
      expect(left).toEqual([...kept].sort());
      // Everything the other tests wrote today is still there.
      expect((await listAudit(store.db, admin, q())).entries.length).toBeGreaterThan(0);
    });
  });
}

describe('DBQ_AUDIT_DAYS', () => {
  it('is applied by the server when it starts: older entries go, younger ones stay', async () => {
    const h = await createHarness({ DBQ_AUDIT_DAYS: '30' });
    const ws = (await h.svc.db.selectFrom('workspaces').select('id').where('slug', '=', 'default').executeTakeFirstOrThrow()).id;
    const row = (id: string) => ({
      id,
      workspace_id: ws,
      action: 'key.revoked',
      actor_user_id: null,
      actor_email: 'dbq',
      actor_key_id: null,
      target_type: 'key',
      target_id: id,
      target_name: null,
      changes: null,
      ip: null,
      source: 'cli' as const,
      created_at: new Date().toISOString(),
    });
    const old = idDaysAgo(31);
    const young = idDaysAgo(29);
    await h.svc.db
      .insertInto('audit_log')
      .values([row(old), row(young)])
      .execute();
    const server = await startServer(h.svc, h.app, { host: '127.0.0.1', port: 0 });
    try {
      await expect
        .poll(
          async () => (await h.svc.db.selectFrom('audit_log').select('id').where('id', 'in', [old, young]).execute()).map((r) => r.id),
          { timeout: 10_000 },
        )
        .toEqual([young]);
    } finally {
      // shutdown() closes the services too: the harness's close() would close them twice.
      await server.shutdown();
      fs.rmSync(h.dataDir, { recursive: true, force: true });
    }
  });

  it('defaults to 365 days and is validated at start', () => {
    expect(loadConfig({}).auditDays).toBe(365);
    expect(loadConfig({ DBQ_AUDIT_DAYS: '30' }).auditDays).toBe(30);
    expect(() => loadConfig({ DBQ_AUDIT_DAYS: '0' })).toThrow(/DBQ_AUDIT_DAYS/);
    expect(() => loadConfig({ DBQ_AUDIT_DAYS: 'forever' })).toThrow(/DBQ_AUDIT_DAYS/);
  });
});
