// What an OAuth grant allows is a scoped key's scope, never wider than its user, on one
// resource: a read-only grant cannot write (and nothing changes), a grant narrowed to a
// connection cannot use another, a read_only user grants no dbq:write, a demoted user's token
// narrows at its next use and a disabled user's stops; the grants API lists and revokes (own;
// admins all), a revoked grant's token stops at once; the consent API wants a session and
// refuses what it does not know. On the SQLite store and on a PostgreSQL store.
import Database from 'better-sqlite3';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliActor } from '../src/audit/audit.ts';
import { createConnection } from '../src/connections/connections.ts';
import { hashPassword } from '../src/workspaces/passwords.ts';
import { setUserDisabled, setUserRole } from '../src/workspaces/users.ts';
import { getWorkspace } from '../src/workspaces/workspaces.ts';
import { createHarness, createPgStoreHarness, workspaceSqliteDir, type Harness } from './support/harness.ts';
import {
  consentApi,
  discover,
  followToRedirect,
  listenOn,
  obtainTokens,
  register,
  signIn,
  startAuthorization,
  type Metadata,
  type Session,
} from './support/oauth-client.ts';

const REDIRECT = 'http://127.0.0.1:41999/callback';

const STORES = [
  ['SQLite store', () => createHarness()],
  ['PostgreSQL store', () => createPgStoreHarness()],
] as const;

describe.each(STORES)('OAuth grants on the %s', (_name, make) => {
  let h: Harness;
  let base: string;
  let as: Metadata;
  let clientId: string;
  let admin: Session;
  let reader: Session;
  let liteId: string;
  let file: string;

  const count = () => {
    const db = new Database(file, { readonly: true });
    try {
      return (db.prepare('SELECT count(*) AS n FROM items').get() as { n: number }).n;
    } finally {
      db.close();
    }
  };
  const query = (token: string, sql: string, connectionId = 'lite') =>
    fetch(`${base}/api/query`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ connectionId, sql }),
    });
  const tokens = (session: Session, allow = {}, extra: { scope?: string } = {}) =>
    obtainTokens({ as, clientId, redirectUri: REDIRECT, resource: `${base}/api`, workspaceUrl: base, session, allow, ...extra });

  beforeAll(async () => {
    h = await make();
    base = await listenOn(h.app);
    file = path.join(workspaceSqliteDir(h, 'default'), 'grants.db');
    const lite = new Database(file);
    lite.exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL); INSERT INTO items (name) VALUES ('apple'), ('pear');`);
    lite.close();
    const ws = await getWorkspace(h.svc.db, 'default');
    const deps = { db: h.svc.db, secretBox: h.svc.secretBox, sqliteDir: h.config.sqliteDir };
    liteId = (await createConnection(deps, ws.id, { name: 'lite', url: 'sqlite:grants.db' }, cliActor())).id;
    await createConnection(deps, ws.id, { name: 'lite2', url: 'sqlite:grants.db' }, cliActor());
    await h.svc.db
      .updateTable('users')
      .set({ password_hash: await hashPassword('reader password') })
      .where('email', '=', 'reader@acme.test')
      .execute();
    admin = await signIn(base, 'admin@acme.test', 'correct horse');
    reader = await signIn(base, 'reader@acme.test', 'reader password');
    as = (await discover(`${base}/api/connections`)).as;
    clientId = (await register(as, { client_name: 'Scoped agent', redirect_uris: [REDIRECT] })).client_id;
  });
  afterAll(async () => {
    await h?.close();
  });

  it('a read-only grant of an admin reads, and its DELETE is refused with nothing changed', async () => {
    const t = await tokens(admin, { readOnly: true });
    expect(t.scope.split(' ')).not.toContain('dbq:write');
    expect((await query(t.access_token, 'SELECT count(*) AS n FROM items')).status).toBe(200);
    const before = count();
    const res = await query(t.access_token, 'DELETE FROM items');
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).code).toBe('insufficient_permissions');
    expect(count()).toBe(before);
  });

  it('a grant narrowed to one connection cannot use another', async () => {
    const t = await tokens(admin, { connections: [liteId] });
    expect((await query(t.access_token, 'SELECT 1')).status).toBe(200);
    const other = await query(t.access_token, 'SELECT 1', 'lite2');
    expect(other.status).toBe(403);
  });

  it('a read_only user grants no dbq:write, whatever the client asks', async () => {
    const started = await startAuthorization({ as, clientId, redirectUri: REDIRECT, resource: `${base}/api` });
    const uid = /consent\/([^/?]+)/.exec(started.location!)![1];
    const details = await consentApi(base, reader, 'GET', uid);
    expect(details.body.data.userRole).toBe('read_only');
    const t = await tokens(reader, { readOnly: false });
    expect(t.scope.split(' ')).not.toContain('dbq:write');
    const before = count();
    expect((await query(t.access_token, "DELETE FROM items WHERE name = 'pear'")).status).toBe(403);
    expect(count()).toBe(before);
  });

  it("a demoted user's token narrows at its next use; a disabled user's stops", async () => {
    await h.svc.db
      .updateTable('users')
      .set({ password_hash: await hashPassword('writer password') })
      .where('email', '=', 'admin@acme.test')
      .execute();
    const t = await tokens(admin);
    const update = "UPDATE items SET name = name WHERE name = 'apple'";
    expect((await query(t.access_token, update)).status).toBe(200);
    await setUserRole(h.svc.db, 'default', 'admin@acme.test', 'read_only', cliActor());
    try {
      expect((await query(t.access_token, update)).status).toBe(403);
      expect((await query(t.access_token, 'SELECT 1')).status).toBe(200);
    } finally {
      await setUserRole(h.svc.db, 'default', 'admin@acme.test', 'admin', cliActor());
    }
    await setUserDisabled(h.svc.db, 'default', 'admin@acme.test', true, cliActor());
    try {
      expect((await query(t.access_token, 'SELECT 1')).status).toBe(401);
      // Nor does its refresh token mint a new one.
      const refreshed = await fetch(as.token_endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: t.refresh_token!, client_id: clientId }).toString(),
      });
      expect(refreshed.status).toBe(400);
    } finally {
      await setUserDisabled(h.svc.db, 'default', 'admin@acme.test', false, cliActor());
      admin = await signIn(base, 'admin@acme.test', 'writer password');
    }
  });

  it('GET /oauth/grants lists your own (admins: ?all=true); revoking one stops its token at once', async () => {
    const t = await tokens(reader);
    const mine = await h.call('GET', '/api/oauth/grants', h.readerKey);
    expect(mine.status).toBe(200);
    const grant = mine.body.data.grants[0];
    expect(grant).toMatchObject({
      client: { id: clientId, name: 'Scoped agent', redirectHost: '127.0.0.1:41999' },
      scope: { readOnly: true },
      lastUsedAt: null,
    });
    expect(Object.keys(grant)).toEqual(expect.arrayContaining(['id', 'client', 'scope', 'createdAt', 'lastUsedAt', 'expiresAt']));
    expect(Date.parse(grant.expiresAt) - Date.now()).toBeGreaterThan(29 * 86_400_000);
    expect(mine.body.data.grants.every((g: any) => g.user.email === 'reader@acme.test')).toBe(true);
    expect((await h.call('GET', '/api/oauth/grants?all=true', h.readerKey)).status).toBe(403);
    const all = await h.call('GET', '/api/oauth/grants?all=true', h.adminKey);
    expect(all.body.data.grants.some((g: any) => g.user.email === 'admin@acme.test')).toBe(true);
    expect(all.body.data.grants.some((g: any) => g.id === grant.id)).toBe(true);

    // Someone else's grant is not found for a reader; the other workspace never sees it.
    const adminGrant = all.body.data.grants.find((g: any) => g.user.email === 'admin@acme.test');
    expect((await h.call('POST', `/api/oauth/grants/${adminGrant.id}/revoke`, h.readerKey)).status).toBe(404);
    expect((await h.call('POST', `/api/oauth/grants/${grant.id}/revoke`, h.otherKey)).status).toBe(401);
    expect((await h.call('POST', `/w/other/api/oauth/grants/${grant.id}/revoke`, h.otherKey)).status).toBe(404);

    expect((await query(t.access_token, 'SELECT 1')).status).toBe(200);
    // lastUsedAt is bookkeeping written beside the request (not awaited by it).
    let lastUsedAt: string | null = null;
    for (let i = 0; i < 40 && !lastUsedAt; i++) {
      const used = await h.call('GET', '/api/oauth/grants', h.readerKey);
      lastUsedAt = used.body.data.grants.find((g: any) => g.id === grant.id).lastUsedAt;
      if (!lastUsedAt) await new Promise((r) => setTimeout(r, 25));
    }
    expect(lastUsedAt).toBeTruthy();
    const revoked = await h.call('POST', `/api/oauth/grants/${grant.id}/revoke`, h.readerKey);
    expect(revoked.status).toBe(200);
    expect(revoked.body.data.grant.revokedAt).toBeTruthy();
    expect((await query(t.access_token, 'SELECT 1')).status).toBe(401);
    const listed = await h.call('GET', '/api/oauth/grants', h.readerKey);
    expect(listed.body.data.grants.some((g: any) => g.id === grant.id)).toBe(false);
    const audit = await h.svc.db.selectFrom('audit_log').select(['action', 'target_id']).where('target_id', '=', grant.id).execute();
    expect(audit.map((a) => a.action).sort()).toEqual(['oauth.authorized', 'oauth.revoked']);
  });

  it("the console lists and revokes the signed-in user's grants too", async () => {
    await tokens(admin);
    const list = await fetch(`${base}/ui/api/oauth/grants`, { headers: { cookie: admin.cookie } });
    const body = (await list.json()) as any;
    expect(list.status).toBe(200);
    const id = body.data.grants[0].id;
    const res = await fetch(`${base}/ui/api/oauth/grants/${id}/revoke`, {
      method: 'POST',
      headers: { cookie: admin.cookie, 'x-csrf-token': admin.csrf },
    });
    expect(res.status).toBe(200);
    const noCsrf = await fetch(`${base}/ui/api/oauth/grants/${id}/revoke`, { method: 'POST', headers: { cookie: admin.cookie } });
    expect(noCsrf.status).toBe(403);
  });

  it('the consent API needs a session, refuses unknown or decided requests, and Deny answers access_denied', async () => {
    const started = await startAuthorization({ as, clientId, redirectUri: REDIRECT });
    const uid = /consent\/([^/?]+)/.exec(started.location!)![1];
    const anon = await fetch(`${base}/ui/api/oauth/interactions/${uid}`);
    expect(anon.status).toBe(401);
    expect((await consentApi(base, admin, 'GET', 'nosuchinteraction')).status).toBe(404);
    const badAllow = await consentApi(base, admin, 'POST', `${uid}/allow`, {
      readOnly: false,
      connections: [],
      tools: 'all',
      lifetimeDays: 30,
    });
    expect(badAllow.status).toBe(400);
    const tooLong = await consentApi(base, admin, 'POST', `${uid}/allow`, {
      readOnly: false,
      connections: 'all',
      tools: 'all',
      lifetimeDays: 5000,
    });
    expect(tooLong.status).toBe(400);
    const denied = await consentApi(base, admin, 'POST', `${uid}/deny`);
    expect(denied.status).toBe(200);
    const callback = await followToRedirect(denied.body.data.redirectTo, started.jar);
    expect(callback.searchParams.get('error')).toBe('access_denied');
    expect(callback.searchParams.get('iss')).toBe(base);
    expect((await consentApi(base, admin, 'GET', uid)).status).toBe(404);
  });
});
