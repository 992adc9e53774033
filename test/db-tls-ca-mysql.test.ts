// Database TLS with a CA of the connection's own on MySQL/MariaDB, against a real TLS server: a
// private MariaDB (mariadb-install-db into a temp dir, mariadbd on a free port with --ssl-ca,
// --ssl-cert, --ssl-key from a CA this test makes with openssl, grant tables skipped so root
// needs no password). With the CA, reads run over TLS; without it, with another CA, or dialling
// a host name the certificate is not for (an IP address: refused, the driver cannot check it),
// the connection is refused saying TLS decided.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import mysqlPromise from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issue, makeCa, readPem } from './support/certificates.ts';
import { createHarness, type Harness } from './support/harness.ts';
import { freePort } from './support/processes.ts';

const run = promisify(execFile);

let h: Harness;
let dir: string;
let port: number;
let server: ChildProcess;
const pem: Record<string, string> = {};

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dbq-mariadb-tls-'));
  for (const ca of ['ca', 'other-ca']) await makeCa(dir, ca);
  await issue(dir, 'server', 'localhost', ['subjectAltName=DNS:localhost', 'extendedKeyUsage=serverAuth']);
  Object.assign(pem, readPem(dir, ['ca.crt', 'other-ca.crt']));
  // MariaDB refuses to run as root unless told which user to become.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const [uid, gid] = await Promise.all([run('id', ['-u', 'mysql']), run('id', ['-g', 'mysql'])]);
    for (const f of fs.readdirSync(dir).concat('')) fs.chownSync(path.join(dir, f), Number(uid.stdout), Number(gid.stdout));
  }
  const data = path.join(dir, 'data');
  await run('mariadb-install-db', [
    `--datadir=${data}`,
    ...(asRoot ? ['--user=mysql'] : []),
    '--skip-test-db',
    '--auth-root-authentication-method=normal',
  ]);
  port = await freePort();
  server = spawn(
    'mariadbd',
    [
      '--no-defaults',
      `--datadir=${data}`,
      ...(asRoot ? ['--user=mysql'] : []),
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      `--socket=${path.join(dir, 'sock')}`,
      `--pid-file=${path.join(dir, 'pid')}`,
      `--log-error=${path.join(dir, 'error.log')}`,
      '--skip-grant-tables',
      `--ssl-ca=${path.join(dir, 'ca.crt')}`,
      `--ssl-cert=${path.join(dir, 'server.crt')}`,
      `--ssl-key=${path.join(dir, 'server.key')}`,
    ],
    { stdio: 'ignore' },
  );
  h = await createHarness();
  const deadline = Date.now() + 30_000;
  while (!fs.existsSync(path.join(dir, 'pid'))) {
    if (Date.now() > deadline)
      throw new Error(`mariadbd did not start: ${fs.readFileSync(path.join(dir, 'error.log'), 'utf8').slice(-500)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}, 120_000);

afterAll(async () => {
  await h?.close();
  if (server?.pid && server.exitCode === null) {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
  }
  fs.rmSync(dir, { recursive: true, force: true });
});

let n = 0;
async function queryOver(body: Record<string, unknown>, sql = "SHOW STATUS LIKE 'Ssl_version'") {
  const conn = await h.call('POST', '/api/connections', h.adminKey, { name: `mytls${++n}`, ...body });
  expect(conn.status, JSON.stringify(conn.body)).toBe(201);
  return h.call('POST', '/api/query', h.adminKey, { connectionId: conn.body.data.connection.id, sql });
}
const url = (host: string) => `mysql://root@${host}:${port}/mysql?ssl=true`;

describe('MariaDB TLS with a CA of the connection', { timeout: 60_000 }, () => {
  it('with the CA: reads run over TLS', async () => {
    const q = await queryOver({ url: url('localhost'), sslCa: pem['ca.crt'] });
    expect(q.status, JSON.stringify(q.body)).toBe(200);
    expect(q.body.data.rows[0][1]).toMatch(/^TLSv1\.[23]$/);
  });

  it('without the CA, or with another CA, the server is refused and the message says TLS decided', async () => {
    for (const body of [{ url: url('localhost') }, { url: url('localhost'), sslCa: pem['other-ca.crt'] }]) {
      const q = await queryOver(body);
      expect(q.status, JSON.stringify(q.body)).toBe(502);
      expect(q.body.code).toBe('connection_failed');
      expect(q.body.error).toContain('TLS: the handshake failed (');
      expect(q.body.error).toContain("the server's certificate must chain to the connection's sslCa");
    }
  });

  it('verify-full: the right CA but a host name the certificate is not for is refused', async () => {
    // mysql2 checks host names only: an IP address is refused outright rather than left unchecked.
    const q = await queryOver({ url: url('127.0.0.1'), sslCa: pem['ca.crt'] });
    expect(q.status, JSON.stringify(q.body)).toBe(502);
    expect(q.body.error).toContain('TLS to MySQL needs the host name its certificate is issued for, not the address 127.0.0.1');
    // Other spellings of the same address (inet_aton's short and numeric forms) are not IP
    // literals to net.isIP, so they reach the driver as names: no certificate is issued for
    // them, and the host check refuses them. Only an error comes back, never a result.
    for (const host of ['127.1', '2130706433', '0x7f000001']) {
      const spelled = await queryOver({ url: url(host), sslCa: pem['ca.crt'] });
      expect(spelled.status, `${host}: ${JSON.stringify(spelled.body)}`).toBe(502);
      expect(spelled.body.code).toBe('connection_failed');
      expect(spelled.body.error).toContain("is not in the cert's altnames");
      expect(spelled.body.data).toBeUndefined();
    }
    // A name the certificate is not for: the server reloads a certificate from the same CA issued
    // for another name (FLUSH SSL), and `localhost` is refused by the host check (verifyIdentity).
    await issue(dir, 'other', 'db.example.test', ['subjectAltName=DNS:db.example.test', 'extendedKeyUsage=serverAuth']);
    const original = ['server.crt', 'server.key'].map((f) => fs.readFileSync(path.join(dir, f)));
    fs.copyFileSync(path.join(dir, 'other.crt'), path.join(dir, 'server.crt'));
    fs.copyFileSync(path.join(dir, 'other.key'), path.join(dir, 'server.key'));
    const flush = async () => {
      const c = await mysqlPromise.createConnection({ host: '127.0.0.1', port, user: 'root' });
      await c.query('FLUSH SSL');
      await c.end();
    };
    await flush();
    try {
      const other = await queryOver({ url: url('localhost'), sslCa: pem['ca.crt'] });
      expect(other.status, JSON.stringify(other.body)).toBe(502);
      expect(other.body.error).toContain('TLS: the handshake failed (');
    } finally {
      fs.writeFileSync(path.join(dir, 'server.crt'), original[0]!);
      fs.writeFileSync(path.join(dir, 'server.key'), original[1]!);
      await flush();
    }
    const back = await queryOver({ url: url('localhost'), sslCa: pem['ca.crt'] });
    expect(back.status, JSON.stringify(back.body)).toBe(200);
  });
});
