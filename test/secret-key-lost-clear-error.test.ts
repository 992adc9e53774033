// A server whose secret key is not the one the store was sealed with (a lost key file, a
// replaced DBQ_SECRET_KEY, a restore without its key) used to answer a query on a connection
// with a password with a bare 500 `internal_error`, and `connection update --url …` failed the
// same way, leaving remove + add (new id, grants lost) as the only way back. Now: 500
// `secret_unreadable` naming the connection; an update that gives a new password replaces the
// unreadable secrets and the connection works again; any other update is refused and changes
// nothing, so putting the right key back still opens what is stored.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { buildApp } from '../src/server/app.ts';
import { frontDoors } from '../src/server/front-doors.ts';
import { closeServices, createServices } from '../src/services.ts';
import { createHarness, injectCall, type Harness } from './support/harness.ts';

const KEY_A = randomBytes(32).toString('hex');
const KEY_B = randomBytes(32).toString('hex');

let h: Harness;
/** A second server on the same store with another secret key. */
let other: { call: Harness['call']; close(): Promise<void> };
let connectionId: string;

beforeAll(async () => {
  h = await createHarness({ DBQ_SECRET_KEY: KEY_A });
  const created = await h.call('POST', '/api/connections', h.adminKey, {
    name: 'warehouse',
    url: 'postgres://postgres:first-password@127.0.0.1:5432/test',
  });
  expect(created.status).toBe(201);
  connectionId = created.body.data.connection.id;
  const svc = await createServices(loadConfig({ DBQ_DATA_DIR: h.dataDir, DBQ_SECRET_KEY: KEY_B, DBQ_LOG_LEVEL: 'silent' }));
  const app = await buildApp(svc, frontDoors());
  other = {
    call: injectCall(app),
    async close() {
      await app.close();
      await closeServices(svc);
    },
  };
}, 60_000);

afterAll(async () => {
  await other?.close();
  await h?.close();
});

const storedRow = () => h.svc.db.selectFrom('connections').selectAll().where('id', '=', connectionId).executeTakeFirstOrThrow();
const query = (via: { call: Harness['call'] }) => via.call('POST', '/api/query', h.adminKey, { connectionId, sql: 'SELECT 1 AS one' });

describe('a connection whose secrets this server cannot open', () => {
  it('answers a query with secret_unreadable naming the connection, never the key', async () => {
    expect((await query(h)).status).toBe(200);
    const res = await query(other);
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ success: false, code: 'secret_unreadable', details: { connection: 'warehouse' } });
    expect(res.body.error).toMatch(/connection warehouse cannot be opened with this server's secret key/);
    const text = JSON.stringify(res.body);
    for (const secret of [KEY_A, KEY_B, 'first-password']) expect(text).not.toContain(secret);
  });

  it('refuses an update without a new password and changes nothing', async () => {
    const before = await storedRow();
    const res = await other.call('PATCH', `/api/connections/${connectionId}`, h.adminKey, { name: 'warehouse2' });
    expect(res.status).toBe(500);
    expect(res.body.code).toBe('secret_unreadable');
    expect(await storedRow()).toEqual(before);
    // The right key still opens what is stored.
    expect((await query(h)).status).toBe(200);
  });

  it('replaces the unreadable secrets when the update gives a new password, keeping the id and grants', async () => {
    const res = await other.call('PATCH', `/api/connections/${connectionId}`, h.adminKey, {
      url: 'postgres://postgres:second-password@127.0.0.1:5432/test',
    });
    expect(res.status).toBe(200);
    expect(res.body.data.connection).toMatchObject({ id: connectionId, name: 'warehouse' });
    expect((await query(other)).status).toBe(200);
    // Sealed under the new key now: the old key is the one that cannot open it.
    expect((await query(h)).body.code).toBe('secret_unreadable');
    const audit = await h.svc.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'connection.updated')
      .where('target_id', '=', connectionId)
      .execute();
    expect(audit).toHaveLength(1);
    expect(JSON.stringify(audit)).not.toContain('second-password');
  });
});
