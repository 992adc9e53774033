// The privilege audit of the credential a connection's reads use, on the machine's real
// PostgreSQL and MariaDB: a superuser says so, a login dbq created with createReader audits as
// read_only with no findings, a login with a write grant (or a membership reached through
// another role) is can_write with a finding that says what. Every role and account made here is
// cluster-wide, so each has a unique name and is dropped in afterAll.
import { createHash, createHmac } from 'node:crypto';
import { createRequire } from 'node:module';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assessMysqlGrants, parseGrant } from '../src/engines/mysql/mysql-privileges.ts';
import { scramVerifier } from '../src/engines/postgres/postgres-privileges.ts';
import { createHarness, MYSQL_URL, PG_URL, type Harness } from './support/harness.ts';

let h: Harness;
const suffix = `${process.pid}_${Math.random().toString(36).slice(2, 7)}`;
const table = `pa_${suffix}`;
const writer = `dbq_t_writer_${suffix}`;
const signaller = `dbq_t_signal_${suffix}`;
const group = `dbq_t_group_${suffix}`;
let pgAdmin: pg.Client;
let my: mysql.Connection;
/** Logins createReader made: dropped in afterAll. */
const createdPg: string[] = [];
const createdMy: string[] = [];

type Server = 'postgres' | 'mysql';
const SERVERS: Server[] = ['postgres', 'mysql'];
const ADMIN_URL: Record<Server, string> = { postgres: PG_URL, mysql: MYSQL_URL };
const WRITER_URL: Record<Server, string> = {
  postgres: `postgres://${writer}:writer-pw@127.0.0.1:5432/test`,
  mysql: `mysql://${writer}:writer-pw@127.0.0.1:3306/test`,
};

async function dropPgRole(role: string): Promise<void> {
  const exists = await pgAdmin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
  if (!exists.rowCount) return;
  await pgAdmin.query(`REASSIGN OWNED BY ${role} TO postgres`);
  await pgAdmin.query(`DROP OWNED BY ${role}`);
  await pgAdmin.query(`DROP ROLE ${role}`);
}

async function create(name: string, body: Record<string, unknown>) {
  const res = await h.call('POST', '/api/connections', h.adminKey, { name, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const c = res.body.data.connection;
  if (body.createReader) (c.engine === 'postgres' ? createdPg : createdMy).push(c.readUser);
  return c;
}

async function test(connectionId: string) {
  const res = await h.call('POST', '/api/connections/test', h.readerKey, { connectionId });
  expect(res.status).toBe(200);
  expect(res.body.data.ok, JSON.stringify(res.body)).toBe(true);
  return res.body.data.readAccess;
}

beforeAll(async () => {
  h = await createHarness();
  pgAdmin = new pg.Client({ connectionString: PG_URL });
  await pgAdmin.connect();
  await pgAdmin.query(`CREATE TABLE ${table} (id int PRIMARY KEY)`);
  await pgAdmin.query(`CREATE ROLE ${writer} LOGIN PASSWORD 'writer-pw'`);
  await pgAdmin.query(`GRANT SELECT, INSERT ON ${table} TO ${writer}`);
  // pg_signal_backend reached through another role: the audit follows memberships.
  await pgAdmin.query(`CREATE ROLE ${group} NOLOGIN`);
  await pgAdmin.query(`GRANT pg_signal_backend TO ${group}`);
  await pgAdmin.query(`CREATE ROLE ${signaller} LOGIN PASSWORD 'signal-pw' CREATEDB IN ROLE ${group}`);
  my = await mysql.createConnection({ host: '127.0.0.1', user: 'root', database: 'test' });
  await my.query(`CREATE TABLE ${table} (id int PRIMARY KEY)`);
  await my.query(`CREATE USER '${writer}'@'%' IDENTIFIED BY 'writer-pw'`);
  await my.query(`GRANT SELECT, INSERT ON test.${table} TO '${writer}'@'%'`);
});

afterAll(async () => {
  await h.close();
  for (const role of [writer, signaller, group, ...createdPg]) await dropPgRole(role);
  await pgAdmin.query(`DROP TABLE IF EXISTS ${table}`);
  await pgAdmin.end();
  for (const user of [writer, ...createdMy]) await my.query(`DROP USER IF EXISTS '${user}'@'%'`);
  await my.query(`DROP TABLE IF EXISTS ${table}`);
  await my.end();
});

describe('privilege audit', () => {
  it('reports a superuser connection as superuser, with findings, on the test and on the record', async () => {
    for (const server of SERVERS) {
      const c = await create(`su-${server}`, { url: ADMIN_URL[server] });
      expect(c.readUser).toBeNull();
      expect(c.readAccess.level).toBe('superuser');
      const access = await test(c.id);
      expect(access.level).toBe('superuser');
      expect(access.findings.length).toBeGreaterThan(0);
      if (server === 'postgres') expect(access.findings[0]).toMatch(/^superuser: .*server files/);
      else expect(access.findings.join('\n')).toMatch(/ALL PRIVILEGES on \*\.\*/);
      const listed = (await h.call('GET', '/api/connections', h.readerKey)).body.data.connections.find((x: any) => x.id === c.id);
      expect(listed.readAccess).toEqual(access);
    }
  });

  it('audits a login made by createReader as read_only with no findings', async () => {
    for (const server of SERVERS) {
      const c = await create(`made-${server}`, { url: ADMIN_URL[server], createReader: true });
      expect(c.readUser).toMatch(/^dbq_reader_[a-z0-9]{12}$/);
      expect(c.readAccess).toEqual({ level: 'read_only', findings: [] });
      expect(await test(c.id)).toEqual({ level: 'read_only', findings: [] });
      if (server === 'postgres') {
        const role = await pgAdmin.query(
          `SELECT rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls, rolcanlogin,
                  array(SELECT g.rolname FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid WHERE m.member = r.oid)::text[] AS member_of,
                  has_database_privilege(r.oid, 'test', 'CONNECT') AS can_connect
           FROM pg_roles r WHERE rolname = $1`,
          [c.readUser],
        );
        expect(role.rows[0]).toEqual({
          rolsuper: false,
          rolcreaterole: false,
          rolcreatedb: false,
          rolreplication: false,
          rolbypassrls: false,
          rolcanlogin: true,
          member_of: ['pg_read_all_data'],
          can_connect: true,
        });
      } else {
        const [grants] = (await my.query(`SHOW GRANTS FOR '${c.readUser}'@'%'`)) as any;
        expect(grants.map((g: any) => Object.values(g)[0]).filter((g: string) => !g.startsWith('GRANT USAGE ON *.*'))).toEqual([
          `GRANT SELECT, SHOW VIEW ON \`test\`.* TO \`${c.readUser}\`@\`%\``,
        ]);
      }
    }
  });

  it('reports a login with an INSERT grant as can_write, naming the privilege and the table', async () => {
    for (const server of SERVERS) {
      const c = await create(`writer-${server}`, { url: ADMIN_URL[server], readUrl: WRITER_URL[server] });
      expect(c.readUser).toBe(writer);
      const access = await test(c.id);
      expect(access.level).toBe('can_write');
      expect(access.findings.join('\n')).toContain('INSERT');
      expect(access.findings.join('\n')).toContain(table);
      // Ad-hoc tests (admin) audit the reader credentials they are given, too.
      const adhoc = await h.call('POST', '/api/connections/test', h.adminKey, { url: ADMIN_URL[server], readUrl: WRITER_URL[server] });
      expect(adhoc.body.data).toMatchObject({ ok: true, readAccess: { level: 'can_write' } });
    }
  });

  it('follows PostgreSQL memberships through other roles and reports role attributes', async () => {
    const c = await create('signaller', { url: PG_URL, readUser: signaller, readPassword: 'signal-pw' });
    const access = await test(c.id);
    expect(access.level).toBe('can_write');
    expect(access.findings).toContain('CREATEDB: can create databases');
    expect(access.findings).toContain('member of pg_signal_backend: can cancel and terminate other sessions');
  });

  it('reports SQLite as read_only (reads use a read-only handle), and no audit for an unreachable database', async () => {
    const lite = await create('lite', { engine: 'sqlite', database: 'audit.db' });
    expect(lite.readAccess).toEqual({ level: 'read_only', findings: [] });
    const down = await create('down', { url: 'postgres://postgres@127.0.0.1:5999/test' });
    expect(down.readAccess).toBeNull();
    const res = await h.call('POST', '/api/connections/test', h.adminKey, { connectionId: down.id });
    expect(res.body.data).toMatchObject({ ok: false, readAccess: null });
  });

  it('reads MySQL/MariaDB grants as SHOW GRANTS prints them', () => {
    expect(parseGrant("GRANT SELECT (`a`, `b ON c`), INSERT (`a`) ON `db`.`t` TO `u`@`%` IDENTIFIED BY PASSWORD '*AB'")).toEqual({
      privileges: ['SELECT', 'INSERT'],
      on: 'db.t',
      roles: [],
      grantOption: false,
    });
    expect(parseGrant('GRANT `analyst`,`etl`@`%` TO `u`@`%` WITH ADMIN OPTION')?.roles).toEqual(['`analyst`', '`etl`@`%`']);
    expect(assessMysqlGrants(['GRANT USAGE ON *.* TO `u`@`%`', 'GRANT SELECT, SHOW VIEW ON `shop`.* TO `u`@`%`'])).toEqual({
      level: 'read_only',
      findings: [],
    });
    expect(
      assessMysqlGrants(['GRANT PROCESS, FILE ON *.* TO `u`@`%`', 'GRANT SELECT, DELETE ON `shop`.* TO `u`@`%` WITH GRANT OPTION']),
    ).toEqual({
      level: 'can_write',
      findings: [
        "PROCESS: can see every session's statements",
        'FILE: can read and write files on the database server',
        'write privileges on shop.*: DELETE',
        'GRANT OPTION on shop.*: can pass its privileges to other accounts',
      ],
    });
    expect(assessMysqlGrants(['GRANT SUPER ON *.* TO `u`@`%`']).level).toBe('superuser');
  });

  // The local server trusts every login, so it never checks a password: the SCRAM verifier a
  // created PostgreSQL reader gets is checked here against node-postgres's own SCRAM client,
  // playing the server's side of RFC 5802 with it.
  it('stores the created PostgreSQL login as a SCRAM verifier that its password authenticates against', async () => {
    const sasl = createRequire(import.meta.url)('pg/lib/crypto/sasl.js');
    const password = 'Generated-Password_123';
    const m = /^SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)$/.exec(scramVerifier(password))!;
    const [iterations, salt, storedKey, serverKey] = [m[1], m[2], Buffer.from(m[3], 'base64'), Buffer.from(m[4], 'base64')];
    const session = sasl.startSession(['SCRAM-SHA-256']);
    const serverFirst = `r=${session.clientNonce}server,s=${salt},i=${iterations}`;
    await sasl.continueSession(session, password, serverFirst);
    const [withoutProof, proof] = session.response.split(',p=');
    const authMessage = `n=*,r=${session.clientNonce},${serverFirst},${withoutProof}`;
    const clientSignature = createHmac('sha256', storedKey).update(authMessage).digest();
    const clientKey = Buffer.from(proof, 'base64').map((b: number, i: number) => b ^ clientSignature[i]);
    expect(createHash('sha256').update(clientKey).digest().equals(storedKey)).toBe(true);
    const serverSignature = createHmac('sha256', serverKey).update(authMessage).digest('base64');
    expect(() => sasl.finalizeSession(session, `v=${serverSignature}`)).not.toThrow();
  });
});
