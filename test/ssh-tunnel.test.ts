// Connections through an SSH bastion, against a real OpenSSH server this file
// starts on a free high port (Debian's openssh-server, installed by .ci/run): PostgreSQL is
// queried through the tunnel (127.0.0.1:5432 as the bastion sees it); a bastion whose host key
// is not the pinned one is refused with a 502 before anything logs in; the tunnel is opened again
// after the SSH server restarts; one SSH connection carries a pool's concurrent sessions and ends
// with the engine. Records never carry the key.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toEngineConfig } from '../src/connections/connections.ts';
import { InsufficientPermissionsError } from '../src/errors.ts';
import { parseConnectionUrl } from '../src/connections/connection-url.ts';
import { parseConnectionTargets, pinConnectionTarget } from '../src/connections/connection-targets.ts';
import { createEngine } from '../src/engines/index.ts';
import { parseHostKey } from '../src/engines/ssh/ssh-host-key.ts';
import { createHarness, MYSQL_URL, PG_URL, tempDir, type Harness } from './support/harness.ts';

const run = promisify(execFile);
const SSHD = '/usr/sbin/sshd';
let h: Harness;
let dir: string;
let port: number;
let sshd: ChildProcess | null = null;
/** Everything sshd wrote (-e: the log goes to stderr). */
let sshdLog = '';
let clientKey: string;
let hostKeyLine: string;
let otherHostKeyLine: string;
const user = os.userInfo().username;
const seen: string[] = [];

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function startSshd(): Promise<void> {
  const from = sshdLog.length;
  const child = spawn(SSHD, ['-D', '-f', path.join(dir, 'sshd_config'), '-e'], { stdio: ['ignore', 'ignore', 'pipe'] });
  sshd = child;
  child.stderr!.on('data', (d: Buffer) => (sshdLog += d.toString()));
  const deadline = Date.now() + 10_000;
  while (!sshdLog.slice(from).includes(`Server listening on 127.0.0.1 port ${port}`)) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`sshd did not start:\n${sshdLog}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Stops the listener and the sessions it forked (each by its pid): a server restart. */
async function stopSshd(): Promise<void> {
  const child = sshd;
  sshd = null;
  if (!child?.pid) return;
  const { stdout } = await run('ps', ['-o', 'pid=', '--ppid', String(child.pid)]).catch(() => ({ stdout: '' }));
  const sessions = stdout.split(/\s+/).filter(Boolean).map(Number);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  for (const pid of sessions) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
  await exited;
}

const accepted = () => sshdLog.split('Accepted publickey for').length - 1;
const disconnected = () => (sshdLog.match(/Disconnected from user|Received disconnect from/g) ?? []).length;

async function waitFor(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${sshdLog}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function sshBody(hostKey = hostKeyLine) {
  return { host: '127.0.0.1', port, user, privateKey: clientKey, hostKey };
}

async function call(method: string, url: string, body?: unknown) {
  const res = await h.call(method, url, h.adminKey, body);
  seen.push(JSON.stringify(res.body));
  return res;
}

beforeAll(async () => {
  if (!fs.existsSync(SSHD)) throw new Error(`${SSHD} is missing: apt-get install openssh-server (.ci/run does)`);
  dir = tempDir('dbq-sshd-');
  port = await freePort();
  for (const name of ['host_key', 'client_key', 'other_host_key']) {
    await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', path.join(dir, name)]);
  }
  fs.copyFileSync(path.join(dir, 'client_key.pub'), path.join(dir, 'authorized_keys'));
  fs.writeFileSync(
    path.join(dir, 'sshd_config'),
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${path.join(dir, 'host_key')}`,
      `AuthorizedKeysFile ${path.join(dir, 'authorized_keys')}`,
      `PidFile ${path.join(dir, 'sshd.pid')}`,
      'StrictModes no',
      'UsePAM no',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      'AllowTcpForwarding yes',
      `AllowUsers ${user}`,
      'LogLevel INFO',
      '',
    ].join('\n'),
  );
  // Privilege separation directory Debian's sshd wants (normally made by its systemd unit).
  fs.mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  clientKey = fs.readFileSync(path.join(dir, 'client_key'), 'utf8');
  const hostPub = fs.readFileSync(path.join(dir, 'host_key.pub'), 'utf8').trim();
  hostKeyLine = `[127.0.0.1]:${port} ${hostPub}`;
  otherHostKeyLine = fs.readFileSync(path.join(dir, 'other_host_key.pub'), 'utf8').trim();
  await startSshd();
  h = await createHarness();
});

afterAll(async () => {
  await h?.close();
  await stopSshd();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  // No response carried the private key.
  const keyBody = clientKey?.split('\n')[1];
  for (const text of seen) if (keyBody) expect(text).not.toContain(keyBody);
});

describe('SSH tunnels', () => {
  it('parses a host key in known_hosts, public key and fingerprint forms alike', async () => {
    const { stdout } = await run('ssh-keygen', ['-l', '-E', 'sha256', '-f', path.join(dir, 'host_key.pub')]);
    const fingerprint = stdout.split(/\s+/)[1]!;
    expect(parseHostKey(hostKeyLine)).toBe(fingerprint);
    expect(parseHostKey(hostKeyLine.split(' ').slice(1).join(' '))).toBe(fingerprint);
    expect(parseHostKey(fingerprint)).toBe(fingerprint);
    expect(parseHostKey('ssh-ed25519 bm90IGEga2V5')).toBeNull();
    expect(parseHostKey(`@revoked ${hostKeyLine}`)).toBeNull();
  });

  it('DBQ_CONNECTION_TARGETS must allow the bastion and the database host; the bastion is pinned', async () => {
    const fields = {
      ...parseConnectionUrl('postgres://u@db.internal:5432/x'),
      ssh: { host: 'bastion.example', port: 22, user, privateKey: 'k', password: null, hostKey: 'SHA256:x' },
    };
    const config = toEngineConfig(fields, { sqliteWorkspaceDir: null, maxConnections: 1, acquireTimeoutMs: 1000, connectTimeoutMs: 1000 });
    const lookup = async (host: string) => (host === 'bastion.example' ? ['192.0.2.7'] : ['10.0.0.5']);
    const both = parseConnectionTargets(['192.0.2.0/24', '10.0.0.0/8'], { lookupTimeoutMs: 1000 })!;
    const pinned = await pinConnectionTarget(both, config, lookup);
    expect(pinned.ssh?.host).toBe('192.0.2.7');
    expect(pinned.host).toBe('db.internal');
    await expect(
      pinConnectionTarget(parseConnectionTargets(['10.0.0.0/8'], { lookupTimeoutMs: 1000 })!, config, lookup),
    ).rejects.toBeInstanceOf(InsufficientPermissionsError);
    await expect(
      pinConnectionTarget(parseConnectionTargets(['192.0.2.0/24'], { lookupTimeoutMs: 1000 })!, config, lookup),
    ).rejects.toBeInstanceOf(InsufficientPermissionsError);
  });

  it('queries PostgreSQL through the bastion; the record shows the bastion, never its key', async () => {
    const before = accepted();
    const created = await call('POST', '/api/connections', { name: 'via-ssh', url: PG_URL, ssh: sshBody() });
    expect(created.status).toBe(201);
    const record = created.body.data.connection ?? created.body.data;
    expect(record.ssh).toEqual({ host: '127.0.0.1', port, user, hostKey: parseHostKey(hostKeyLine) });
    expect(JSON.stringify(created.body)).not.toContain('PRIVATE KEY');
    const res = await call('POST', '/api/query', { connectionId: 'via-ssh', sql: "SELECT 'through the tunnel' AS how" });
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.body.data.rows)).toContain('through the tunnel');
    expect(accepted()).toBeGreaterThan(before);
    const listed = await call('GET', '/api/connections');
    expect(JSON.stringify(listed.body)).not.toContain('PRIVATE KEY');
  });

  it('queries MySQL through the bastion too', async () => {
    const created = await call('POST', '/api/connections', { name: 'my-via-ssh', url: MYSQL_URL, ssh: sshBody() });
    expect(created.status).toBe(201);
    const res = await call('POST', '/api/query', { connectionId: 'my-via-ssh', sql: "SELECT 'mysql tunnel' AS how" });
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.body.data.rows)).toContain('mysql tunnel');
    expect((await call('DELETE', '/api/connections/my-via-ssh')).status).toBe(200);
  });

  it('refuses a bastion whose host key is not the pinned one, before logging in', async () => {
    const before = accepted();
    const created = await call('POST', '/api/connections', { name: 'wrong-key', url: PG_URL, ssh: sshBody(otherHostKeyLine) });
    expect(created.status).toBe(201);
    const res = await call('POST', '/api/query', { connectionId: 'wrong-key', sql: 'SELECT 1' });
    expect(res.status).toBe(502);
    expect(res.body.code).toBe('connection_failed');
    expect(res.body.error).toMatch(/SSH host key of 127\.0\.0\.1:\d+ is SHA256:\S+, not the pinned hostKey SHA256:\S+; refused/);
    expect(accepted()).toBe(before);
  });

  it('rejects a hostKey that is no key and ssh on a SQLite connection, naming the field', async () => {
    const bad = await call('POST', '/api/connections', { name: 'bad-key', url: PG_URL, ssh: sshBody('trust me') });
    expect(bad.status).toBe(400);
    expect(bad.body.details.field).toBe('ssh.hostKey');
    const missing = await call('POST', '/api/connections', { name: 'no-key', url: PG_URL, ssh: { ...sshBody(), hostKey: undefined } });
    expect(missing.status).toBe(400);
    const sqlite = await call('POST', '/api/connections', { name: 'lite', url: 'sqlite:x.db', ssh: sshBody() });
    expect(sqlite.status).toBe(400);
  });

  it('opens the tunnel again after the SSH server restarts', async () => {
    expect((await call('POST', '/api/query', { connectionId: 'via-ssh', sql: 'SELECT 1 AS one' })).status).toBe(200);
    await stopSshd();
    const down = await call('POST', '/api/query', { connectionId: 'via-ssh', sql: 'SELECT 1 AS one' });
    expect(down.status).toBe(502);
    expect(down.body.code).toBe('connection_failed');
    await startSshd();
    const before = accepted();
    const back = await call('POST', '/api/query', { connectionId: 'via-ssh', sql: 'SELECT 2 AS two' });
    expect(back.status).toBe(200);
    expect(accepted()).toBe(before + 1);
  });

  it('PATCH keeps the stored key, and ssh: null removes the bastion', async () => {
    const { privateKey: _k, ...withoutKey } = sshBody();
    const kept = await call('PATCH', '/api/connections/via-ssh', { ssh: withoutKey });
    expect(kept.status).toBe(200);
    expect((await call('POST', '/api/query', { connectionId: 'via-ssh', sql: 'SELECT 1' })).status).toBe(200);
    const removed = await call('PATCH', '/api/connections/via-ssh', { ssh: null });
    expect(removed.status).toBe(200);
    expect((removed.body.data.connection ?? removed.body.data).ssh).toBeNull();
  });

  it('shares one SSH connection among a pool of concurrent sessions and ends it with the engine', async () => {
    const fields = {
      ...parseConnectionUrl(PG_URL),
      ssh: { host: '127.0.0.1', port, user, privateKey: clientKey, password: null, hostKey: parseHostKey(hostKeyLine)! },
    };
    const engine = createEngine(
      toEngineConfig(fields, { sqliteWorkspaceDir: null, maxConnections: 4, acquireTimeoutMs: 10_000, connectTimeoutMs: 10_000 }),
    );
    const before = accepted();
    const gone = disconnected();
    const opts = {
      sql: 'SELECT pg_backend_pid() AS pid, pg_sleep(0.3)',
      params: [],
      readOnly: true,
      timeoutMs: 10_000,
      maxRows: 10,
      maxBytes: 1_000_000,
    };
    const results = await Promise.all([1, 2, 3, 4].map(() => engine.execute(opts)));
    // Four sessions at once: four backends, one SSH login.
    expect(new Set(results.map((r) => JSON.stringify(r.rows[0]?.[0] ?? r.rows[0]))).size).toBe(4);
    expect(accepted()).toBe(before + 1);
    await engine.close();
    await waitFor(() => disconnected() > gone, 'the SSH connection to end');
  });

  it('the CLI adds a connection through a bastion from a key file, never printing the key', async () => {
    let out: { stdout: string; stderr: string };
    try {
      out = await run(
        './bin/dbq',
        [
          'connection',
          'add',
          '--workspace',
          'default',
          '--name',
          'cli-ssh',
          '--url',
          PG_URL,
          '--ssh-host',
          '127.0.0.1',
          '--ssh-port',
          String(port),
          '--ssh-user',
          user,
          '--ssh-key-file',
          path.join(dir, 'client_key'),
          '--ssh-host-key',
          hostKeyLine,
          '--json',
        ],
        { env: { ...process.env, DBQ_DATA_DIR: h.dataDir }, timeout: 30_000 },
      );
    } catch (err) {
      throw new Error(`dbq failed: ${(err as { stderr: string }).stderr}`, { cause: err });
    }
    seen.push(out.stdout, out.stderr);
    const record = JSON.parse(out.stdout).connection;
    expect(record.ssh).toEqual({ host: '127.0.0.1', port, user, hostKey: parseHostKey(hostKeyLine) });
    expect(record.readAccess).not.toBeNull();
    expect(out.stdout + out.stderr).not.toContain('PRIVATE KEY');
  });
});
