// Reader credentials on the machine's real PostgreSQL and MariaDB: with them set, every read
// (query, export, async query) logs in as the reader, while an admin's write on the same
// connection runs as the connection user; their secrets never appear in a response, in the
// CLI's --json output, in an error or in the logs; a readUrl of another engine or database is a
// 400 naming the field. Roles and accounts are cluster-wide: unique names, dropped in afterAll.
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getConnectionRow, readerOf } from '../src/connections/connections.ts';
import { getWorkspace } from '../src/workspaces/workspaces.ts';
import { createHarness, MYSQL_URL, PG_URL, type Harness } from './support/harness.ts';
import { runDbq } from './support/cli.ts';

let h: Harness;
const logs: string[] = [];
const suffix = `${process.pid}_${Math.random().toString(36).slice(2, 7)}`;
const table = `rc_${suffix}`;
const viewer = `dbq_t_viewer_${suffix}`;
const VIEWER_PW = `Viewer-Secret-${suffix}`;
let pgAdmin: pg.Client;
let my: mysql.Connection;
const createdPg: string[] = [];
const createdMy: string[] = [];
/** Every response body and CLI output of the file, searched for secrets at the end. */
const seen: string[] = [];

type Server = 'postgres' | 'mysql';
const SERVERS: Server[] = ['postgres', 'mysql'];
const ADMIN_URL: Record<Server, string> = { postgres: PG_URL, mysql: MYSQL_URL };
const VIEWER_URL: Record<Server, string> = {
  postgres: `postgres://${viewer}:${VIEWER_PW}@127.0.0.1:5432/test`,
  mysql: `mysql://${viewer}:${VIEWER_PW}@127.0.0.1:3306/test`,
};
const WHO: Record<Server, string> = { postgres: 'SELECT current_user AS who', mysql: 'SELECT CURRENT_USER() AS who' };
const ADMIN_USER: Record<Server, RegExp> = { postgres: /^postgres$/, mysql: /^root@/ };

async function call(method: string, url: string, key: string | null, body?: unknown) {
  const res = await h.call(method, url, key, body);
  seen.push(JSON.stringify(res.body));
  return res;
}

async function dbq(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await runDbq(h.dataDir, args);
  seen.push(out.stdout, out.stderr);
  return out;
}

function remember(c: { engine: Server; readUser: string | null }) {
  if (c.readUser?.startsWith('dbq_reader_')) (c.engine === 'postgres' ? createdPg : createdMy).push(c.readUser);
}

async function who(key: string, connectionId: string, server: Server): Promise<string> {
  const res = await call('POST', '/api/query', key, { connectionId, sql: WHO[server] });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.rows[0][0];
}

/** The generated reader password, from the store: the one secret the test is not told. */
async function storedReaderPassword(name: string): Promise<string> {
  const ws = await getWorkspace(h.svc.db, 'default');
  const password = readerOf(await getConnectionRow(h.svc.db, ws.id, name), h.svc.secretBox)?.password;
  expect(password).toMatch(/^[A-Za-z0-9_-]{32}$/);
  return password!;
}

beforeAll(async () => {
  h = await createHarness({}, { logs });
  pgAdmin = new pg.Client({ connectionString: PG_URL });
  await pgAdmin.connect();
  await pgAdmin.query(`CREATE TABLE ${table} (id int PRIMARY KEY, who text)`);
  await pgAdmin.query(`CREATE ROLE ${viewer} LOGIN PASSWORD '${VIEWER_PW}'`);
  await pgAdmin.query(`GRANT SELECT ON ${table} TO ${viewer}`);
  my = await mysql.createConnection({ host: '127.0.0.1', user: 'root', database: 'test' });
  await my.query(`CREATE TABLE ${table} (id int PRIMARY KEY, who varchar(200))`);
  await my.query(`CREATE USER '${viewer}'@'%' IDENTIFIED BY '${VIEWER_PW}'`);
  await my.query(`GRANT SELECT ON test.${table} TO '${viewer}'@'%'`);
});

afterAll(async () => {
  await h.close();
  for (const role of [viewer, ...createdPg]) {
    if (!(await pgAdmin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role])).rowCount) continue;
    await pgAdmin.query(`REASSIGN OWNED BY ${role} TO postgres`);
    await pgAdmin.query(`DROP OWNED BY ${role}`);
    await pgAdmin.query(`DROP ROLE ${role}`);
  }
  await pgAdmin.query(`DROP TABLE IF EXISTS ${table}`);
  await pgAdmin.end();
  for (const user of [viewer, ...createdMy]) await my.query(`DROP USER IF EXISTS '${user}'@'%'`);
  await my.query(`DROP TABLE IF EXISTS ${table}`);
  await my.end();
});

describe('reader credentials', () => {
  it("runs every read as the reader a createReader made, and an admin's write as the connection user", async () => {
    for (const server of SERVERS) {
      const name = `made-${server}`;
      const res = await call('POST', '/api/connections', h.adminKey, { name, url: ADMIN_URL[server], createReader: true });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      const c = res.body.data.connection;
      remember(c);
      const reader = c.readUser as string;
      expect(reader).toMatch(/^dbq_reader_/);
      const asReader = (v: string) => expect(v.replace(/@.*$/, '')).toBe(reader);

      asReader(await who(h.readerKey, name, server));
      asReader(await who(h.adminKey, name, server)); // an admin's read is a read too
      const insert =
        server === 'postgres'
          ? `INSERT INTO ${table} (id, who) VALUES (1, current_user) RETURNING who`
          : `INSERT INTO ${table} (id, who) VALUES (1, CURRENT_USER())`;
      const write = await call('POST', '/api/query', h.adminKey, { connectionId: name, sql: insert });
      expect(write.status, JSON.stringify(write.body)).toBe(200);
      const stored =
        server === 'postgres'
          ? (await pgAdmin.query(`SELECT who FROM ${table} WHERE id = 1`)).rows[0].who
          : ((await my.query(`SELECT who FROM ${table} WHERE id = 1`)) as any)[0][0].who;
      expect(stored).toMatch(ADMIN_USER[server]);
      // A read-only key's write is still refused before anything runs.
      const refused = await call('POST', '/api/query', h.readerKey, { connectionId: name, sql: `DELETE FROM ${table}` });
      expect(refused.status).toBe(403);

      // Exports and async reads take the same path.
      const exported = await h.app.inject({
        method: 'POST',
        url: '/api/query/export',
        headers: { authorization: `Bearer ${h.readerKey}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ connectionId: name, sql: WHO[server], format: 'ndjson' }),
      });
      expect(exported.statusCode, exported.body).toBe(200);
      asReader(JSON.parse(exported.body.trim().split('\n')[1])[0]);
      const submitted = await call('POST', '/api/query', h.readerKey, { connectionId: name, sql: WHO[server], async: true });
      expect(submitted.status).toBe(202);
      let outcome: any;
      for (let i = 0; i < 200; i++) {
        outcome = (await call('GET', `/api/query/${submitted.body.data.queryId}`, h.readerKey)).body.data;
        if (outcome.status !== 'running') break;
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(outcome.status, JSON.stringify(outcome)).toBe('succeeded');
      asReader(outcome.result.rows[0][0]);

      const secret = await storedReaderPassword(name);
      seen.push(`__generated__${secret}`);
    }
  });

  it('takes readUrl or readUser/readPassword, changes them with PATCH and removes them with readUser: null', async () => {
    for (const server of SERVERS) {
      const name = `given-${server}`;
      const res = await call('POST', '/api/connections', h.adminKey, { name, url: ADMIN_URL[server], readUrl: VIEWER_URL[server] });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body.data.connection).toMatchObject({ readUser: viewer, readAccess: { level: 'read_only', findings: [] } });
      expect(await who(h.readerKey, name, server)).toMatch(new RegExp(`^${viewer}`));

      const removed = await call('PATCH', `/api/connections/${name}`, h.adminKey, { readUser: null });
      expect(removed.body.data.connection).toMatchObject({ readUser: null, readAccess: { level: 'superuser' } });
      expect(await who(h.readerKey, name, server)).toMatch(ADMIN_USER[server]);

      const fields = await call('PATCH', `/api/connections/${name}`, h.adminKey, { readUser: viewer, readPassword: VIEWER_PW });
      expect(fields.body.data.connection.readUser).toBe(viewer);
      expect(await who(h.readerKey, name, server)).toMatch(new RegExp(`^${viewer}`));
      // A PATCH that leaves the reader alone keeps it, password included.
      await call('PATCH', `/api/connections/${name}`, h.adminKey, { maxConnections: 3 });
      expect(await who(h.readerKey, name, server)).toMatch(new RegExp(`^${viewer}`));
      const tested = await call('POST', '/api/connections/test', h.readerKey, { connectionId: name });
      expect(tested.body.data).toMatchObject({ ok: true, readAccess: { level: 'read_only' } });
    }
    // A wrong reader password fails the test: every read would fail.
    await call('PATCH', '/api/connections/given-mysql', h.adminKey, { readPassword: 'not-it' });
    const wrong = await call('POST', '/api/connections/test', h.readerKey, { connectionId: 'given-mysql' });
    expect(wrong.body.data).toMatchObject({ ok: false, readAccess: null });
    expect(wrong.body.data.error).toMatch(/^reader credentials: /);
  });

  it('refuses bad reader settings with a 400 naming the field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ url: PG_URL, readUrl: `mysql://${viewer}:${VIEWER_PW}@127.0.0.1:3306/test` }, 'readUrl'],
      [{ url: PG_URL, readUrl: `postgres://${viewer}:${VIEWER_PW}@127.0.0.1:5432/postgres` }, 'readUrl'],
      [{ url: PG_URL, readUrl: `sqlite:x.db` }, 'readUrl'],
      [{ url: PG_URL, readUrl: `postgres://127.0.0.1:5432/test` }, 'readUrl'],
      [{ url: PG_URL, readUrl: VIEWER_URL.postgres, readUser: viewer }, 'readUrl'],
      [{ url: PG_URL, readUrl: VIEWER_URL.postgres, createReader: true }, 'createReader'],
      [{ url: PG_URL, readPassword: VIEWER_PW }, 'readPassword'],
      [{ engine: 'sqlite', database: 'r.db', readUser: 'someone' }, 'readUser'],
      [{ engine: 'sqlite', database: 'r.db', createReader: true }, 'createReader'],
    ];
    for (const [body, field] of cases) {
      const res = await call('POST', '/api/connections', h.adminKey, { name: 'bad', ...body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.details?.field, JSON.stringify(res.body)).toBe(field);
      expect(res.body.error).toContain(field);
    }
    const adhoc = await call('POST', '/api/connections/test', h.adminKey, { url: PG_URL, readUrl: VIEWER_URL.mysql });
    expect(adhoc.status).toBe(400);
    expect(adhoc.body.details.field).toBe('readUrl');
    expect((await call('GET', '/api/connections', h.adminKey)).body.data.connections.map((c: any) => c.name)).not.toContain('bad');
  });

  it('sets reader credentials from the CLI, with --json output that carries no secret', async () => {
    const added = await dbq(
      'connection',
      'add',
      '--workspace',
      'default',
      '--name',
      'cli-pg',
      '--url',
      PG_URL,
      '--create-reader',
      '--json',
    );
    expect(added.code, added.stderr).toBe(0);
    const c = JSON.parse(added.stdout).connection;
    remember(c);
    expect(c).toMatchObject({ readUser: expect.stringMatching(/^dbq_reader_/), readAccess: { level: 'read_only', findings: [] } });
    seen.push(`__generated__${await storedReaderPassword('cli-pg')}`);
    expect(c.readUser.replace(/@.*$/, '')).toBe(await who(h.readerKey, 'cli-pg', 'postgres'));

    const viaUrl = await dbq(
      'connection',
      'add',
      '--workspace',
      'default',
      '--name',
      'cli-my',
      '--url',
      MYSQL_URL,
      '--read-url',
      VIEWER_URL.mysql,
      '--json',
    );
    expect(viaUrl.code, viaUrl.stderr).toBe(0);
    expect(JSON.parse(viaUrl.stdout).connection).toMatchObject({ readUser: viewer, readAccess: { level: 'read_only' } });

    const removed = await dbq('connection', 'set-reader', '--workspace', 'default', '--connection', 'cli-my', '--remove', '--json');
    expect(JSON.parse(removed.stdout).connection).toMatchObject({ readUser: null, readAccess: { level: 'superuser' } });
    const created = await dbq('connection', 'set-reader', '--workspace', 'default', '--connection', 'cli-my', '--create', '--json');
    expect(created.code, created.stderr).toBe(0);
    const my2 = JSON.parse(created.stdout).connection;
    remember(my2);
    expect(my2.readAccess).toEqual({ level: 'read_only', findings: [] });
    seen.push(`__generated__${await storedReaderPassword('cli-my')}`);

    const bad = await dbq(
      'connection',
      'add',
      '--workspace',
      'default',
      '--name',
      'cli-bad',
      '--url',
      PG_URL,
      '--read-url',
      VIEWER_URL.mysql,
      '--json',
    );
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stderr)).toMatchObject({ success: false, code: 'invalid_request', error: expect.stringContaining('readUrl') });
    expect((await dbq('connection', 'list', '--workspace', 'default', '--json')).code).toBe(0);
  });

  it('never shows a reader secret in a response, CLI output, error or log', () => {
    const secrets = [VIEWER_PW, ...seen.filter((s) => s.startsWith('__generated__')).map((s) => s.slice('__generated__'.length))];
    expect(secrets.length).toBeGreaterThanOrEqual(4);
    const shown = seen.filter((s) => !s.startsWith('__generated__')).join('\n') + logs.join('\n');
    for (const secret of secrets) expect(shown).not.toContain(secret);
  });

  it('lists records with readUser and readAccess, and no reader secret field', async () => {
    const { connections } = (await call('GET', '/api/connections', h.readerKey)).body.data;
    for (const c of connections) {
      expect(Object.keys(c)).toEqual(expect.arrayContaining(['readUser', 'readAccess']));
      expect(Object.keys(c)).not.toEqual(expect.arrayContaining(['readPassword']));
      expect(Object.keys(c)).not.toEqual(expect.arrayContaining(['readUrl']));
    }
  });
});
