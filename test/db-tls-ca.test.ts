// Database TLS with a CA of the connection's own, against a real TLS PostgreSQL: a private
// cluster started with ssl=on and a server certificate from a CA this test makes with openssl.
// verify-full semantics: with the CA, reads run over TLS; without it (system CAs) or with
// another CA, the connection is refused with a message naming the CA; a certificate not issued
// for the host name dialled is refused too. A client certificate is presented where the server
// demands one (clientcert=verify-ca). The PEM texts are sealed with the password and never
// shown back; bad PEM is refused by field with nothing saved.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issue, makeCa, readPem } from './support/certificates.ts';
import { createHarness, type Harness } from './support/harness.ts';
import { privatePostgres, type PrivatePostgres } from './support/pg-cluster.ts';

const run = promisify(execFile);

let h: Harness;
let cluster: PrivatePostgres;
let certs: string;
const pem: Record<string, string> = {};

/** A CA, a server certificate for `localhost` only (no IP name: dialling 127.0.0.1 must fail the
 * host check), a client certificate, all from that CA; and an unrelated CA. */
async function makeCertificates(): Promise<void> {
  for (const ca of ['ca', 'other-ca']) await makeCa(certs, ca);
  await issue(certs, 'server', 'localhost', ['subjectAltName=DNS:localhost', 'extendedKeyUsage=serverAuth']);
  await issue(certs, 'client', 'postgres', ['extendedKeyUsage=clientAuth']);
  Object.assign(pem, readPem(certs, ['ca.crt', 'other-ca.crt', 'client.crt', 'client.key', 'server.crt']));
}

beforeAll(async () => {
  certs = fs.mkdtempSync(path.join(os.tmpdir(), 'dbq-tls-'));
  await makeCertificates();
  if (process.getuid?.() === 0) {
    const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
    for (const f of ['', 'server.key', 'server.crt', 'ca.crt']) fs.chownSync(path.join(certs, f), Number(uid.stdout), Number(gid.stdout));
  }
  fs.chmodSync(path.join(certs, 'server.key'), 0o600);
  cluster = await privatePostgres({
    serverOptions: `-c ssl=on -c ssl_cert_file=${certs}/server.crt -c ssl_key_file=${certs}/server.key -c ssl_ca_file=${certs}/ca.crt`,
  });
  // One database where the server demands a client certificate from the CA; the rest trust.
  const admin = new pg.Client({ connectionString: cluster.url() });
  await admin.connect();
  await admin.query('create database certdb');
  const hba = (await admin.query('show hba_file')).rows[0].hba_file as string;
  fs.writeFileSync(
    hba,
    'local all all trust\nhostssl certdb all 127.0.0.1/32 trust clientcert=verify-ca\nhost all all 127.0.0.1/32 trust\n',
  );
  await admin.query('select pg_reload_conf()');
  await admin.end();
  h = await createHarness();
}, 120_000);

afterAll(async () => {
  await h?.close();
  await cluster?.destroy();
  fs.rmSync(certs, { recursive: true, force: true });
});

let n = 0;
async function connectionWith(body: Record<string, unknown>) {
  const res = await h.call('POST', '/api/connections', h.adminKey, { name: `tls${++n}`, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.connection as { id: string; ssl: boolean };
}
const url = (host: string, db = 'postgres', mode = 'verify-full') => `postgres://postgres@${host}:${cluster.port}/${db}?sslmode=${mode}`;
const sslOfSession = 'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()';

describe('PostgreSQL TLS with a CA of the connection', { timeout: 60_000 }, () => {
  it('the server speaks TLS only with a verified chain: the machine has no trust in this CA', async () => {
    const c = new pg.Client({ connectionString: cluster.url(), ssl: { ca: pem['ca.crt'], servername: 'localhost' } });
    await c.connect();
    expect((await c.query(sslOfSession)).rows[0].ssl).toBe(true);
    await c.end();
  });

  it('with the CA: reads run over TLS', async () => {
    const conn = await connectionWith({ url: url('localhost'), sslCa: pem['ca.crt'] });
    expect(conn.ssl).toBe(true);
    const q = await h.call('POST', '/api/query', h.adminKey, { connectionId: conn.id, sql: sslOfSession });
    expect(q.status, JSON.stringify(q.body)).toBe(200);
    expect(q.body.data.rows).toEqual([[true]]);
  });

  it('a CA alone turns TLS on', async () => {
    const conn = await connectionWith({ url: `postgres://postgres@localhost:${cluster.port}/postgres`, sslCa: pem['ca.crt'] });
    expect(conn.ssl).toBe(true);
    const q = await h.call('POST', '/api/query', h.adminKey, { connectionId: conn.id, sql: sslOfSession });
    expect(q.body.data.rows).toEqual([[true]]);
  });

  it('without the CA (the system CAs) the server is refused, and the message says which setting decides', async () => {
    const conn = await connectionWith({ url: url('localhost', 'postgres', 'require') });
    const q = await h.call('POST', '/api/query', h.adminKey, { connectionId: conn.id, sql: 'SELECT 1' });
    expect(q.status).toBe(502);
    expect(q.body.code).toBe('connection_failed');
    expect(q.body.error).toContain("TLS: the server's certificate does not chain to a trusted CA (the connection's sslCa");
  });

  it('with another CA the server is refused the same way', async () => {
    const conn = await connectionWith({ url: url('localhost'), sslCa: pem['other-ca.crt'] });
    const q = await h.call('POST', '/api/query', h.adminKey, { connectionId: conn.id, sql: 'SELECT 1' });
    expect(q.status).toBe(502);
    expect(q.body.error).toMatch(
      /TLS: the server's certificate does not chain to a trusted CA .*\((UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)\)/,
    );
  });

  it('verify-full: the right CA but a host name the certificate is not for is refused', async () => {
    const conn = await connectionWith({ url: url('127.0.0.1'), sslCa: pem['ca.crt'] });
    const q = await h.call('POST', '/api/query', h.adminKey, { connectionId: conn.id, sql: 'SELECT 1' });
    expect(q.status).toBe(502);
    expect(q.body.error).toContain(
      "TLS: the server's certificate is not issued for the host name the connection dials (ERR_TLS_CERT_ALTNAME_INVALID)",
    );
  });

  it('presents the client certificate where the server demands one', async () => {
    const without = await connectionWith({ url: url('localhost', 'certdb'), sslCa: pem['ca.crt'] });
    const refused = await h.call('POST', '/api/query', h.adminKey, { connectionId: without.id, sql: 'SELECT 1' });
    expect(refused.status).toBe(502);
    const conn = await connectionWith({
      url: url('localhost', 'certdb'),
      sslCa: pem['ca.crt'],
      sslCert: pem['client.crt'],
      sslKey: pem['client.key'],
    });
    const q = await h.call('POST', '/api/query', h.adminKey, { connectionId: conn.id, sql: 'SELECT current_database()' });
    expect(q.status, JSON.stringify(q.body)).toBe(200);
    expect(q.body.data.rows).toEqual([['certdb']]);
  });

  it('keeps the PEM texts sealed: not in the record, the store row or the audit log', async () => {
    const conn = await connectionWith({
      url: url('localhost'),
      sslCa: pem['ca.crt'],
      sslCert: pem['client.crt'],
      sslKey: pem['client.key'],
    });
    const shown = await h.call('GET', `/api/connections/${conn.id}`, h.adminKey);
    const audit = await h.call('GET', '/api/audit', h.adminKey);
    const db = new SqliteDatabase(path.join(h.dataDir, 'dbq.sqlite'), { readonly: true });
    const row = db.prepare('select * from connections where id = ?').get(conn.id);
    db.close();
    for (const text of [JSON.stringify(shown.body), JSON.stringify(audit.body), JSON.stringify(row)]) {
      expect(text).not.toContain('BEGIN CERTIFICATE');
      expect(text).not.toContain('PRIVATE KEY');
    }
    const created = audit.body.data.entries.find((e: any) => e.action === 'connection.created' && e.target.id === conn.id);
    expect(created.changes).toMatchObject({ sslCa: 'set', sslCert: 'set', sslKey: 'set' });
  });

  it('refuses bad PEM by field, saving nothing', async () => {
    const before = (await h.call('GET', '/api/connections', h.adminKey)).body.data.connections.length;
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ sslCa: 'not a certificate' }, 'sslCa', 'sslCa must be PEM text'],
      [{ sslCert: pem['client.crt'] }, 'sslKey', 'sslCert and sslKey go together'],
      [{ sslCert: pem['client.crt'], sslKey: 'nope' }, 'sslKey', 'sslKey must be an unencrypted PEM private key'],
      [{ sslCert: pem['server.crt'], sslKey: pem['client.key'] }, 'sslKey', "sslKey is not the private key of sslCert's certificate"],
      [{ sslCa: pem['ca.crt'], ssl: false }, 'ssl', 'ssl: false with a CA or client certificate'],
      [{ url: `postgres://postgres@localhost:${cluster.port}/postgres?sslrootcert=/etc/ssl/ca.pem` }, 'url', 'give the PEM text as sslCa'],
    ];
    for (const [body, field, message] of cases) {
      const res = await h.call('POST', '/api/connections', h.adminKey, { name: 'bad-tls', url: url('localhost'), ...body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toContain(message);
      expect(res.body.details?.field).toBe(field);
      expect(JSON.stringify(res.body)).not.toContain(pem['client.key']!.split('\n')[1]);
    }
    expect((await h.call('GET', '/api/connections', h.adminKey)).body.data.connections.length).toBe(before);
  });

  it('an update can remove the CA (null), and keeps it when the body leaves it out', async () => {
    const conn = await connectionWith({ url: url('localhost'), sslCa: pem['ca.crt'] });
    const renamed = await h.call('PATCH', `/api/connections/${conn.id}`, h.adminKey, { name: `tls-renamed-${n}` });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
    const kept = await h.call('POST', '/api/query', h.adminKey, { connectionId: conn.id, sql: 'SELECT 1' });
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
    const removed = await h.call('PATCH', `/api/connections/${conn.id}`, h.adminKey, { sslCa: null });
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    const q = await h.call('POST', '/api/query', h.adminKey, { connectionId: conn.id, sql: 'SELECT 1' });
    expect(q.status).toBe(502);
    expect(q.body.error).toContain('TLS:');
  });
});
