// Issue "A newcomer's first hour", through ./bin/dbq in a child process as users run it: an
// admin made the README's way can sign in (one-time link, set-password), the store is never
// silently created in the wrong directory, empty lists say so, DBQ_DEFAULT_PLAN, --version,
// required options in --help, a bad --port, user delete, connection test|update|remove and
// key list's created/last-use columns.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSample } from '../src/cli/serve.ts';
import { createHarness, type Harness } from './support/harness.ts';

const run = promisify(execFile);
const BIN = path.resolve('bin/dbq');
let h: Harness;

async function dbqIn(
  cwd: string,
  env: Record<string, string | undefined>,
  args: string[],
  input?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = run(BIN, args, { cwd, env: { ...process.env, DBQ_DATA_DIR: undefined, ...env }, timeout: 30_000 });
  if (input !== undefined) {
    child.child.stdin!.end(input);
  } else {
    child.child.stdin!.end();
  }
  try {
    const { stdout, stderr } = await child;
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const dbq = (...args: string[]) => dbqIn(process.cwd(), { DBQ_DATA_DIR: h.dataDir }, args);
const json = async (...args: string[]) => {
  const res = await dbq(...args, '--json');
  expect(res.code, res.stderr).toBe(0);
  return JSON.parse(res.stdout);
};

async function signIn(slugBase: string, email: string, password: string): Promise<number> {
  const res = await h.app.inject({ method: 'POST', url: `${slugBase}/ui/api/login`, payload: { email, password } });
  return res.statusCode;
}

beforeAll(async () => {
  h = await createHarness();
  await ensureSample(h.svc);
});
afterAll(async () => {
  await h.close();
});

describe('a newcomer can sign in', () => {
  it('user create without a password prints a one-time link that sets it (once)', async () => {
    const made = await json('user', 'create', '--workspace', 'default', '--email', 'you@example.com', '--role', 'admin');
    expect(made.user).toMatchObject({ email: 'you@example.com', role: 'admin' });
    expect(made.setPasswordUrl).toMatch(/^http:\/\/localhost:8080\/set-password\?token=[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(made.setPasswordExpiresAt) - Date.now()).toBeGreaterThan(23 * 3_600_000);
    const token = new URL(made.setPasswordUrl).searchParams.get('token')!;
    // Only a hash is stored.
    const rows = await h.svc.db.selectFrom('password_tokens').select('token_hash').execute();
    expect(JSON.stringify(rows)).not.toContain(token);

    expect((await h.app.inject({ url: `/set-password?token=${token}` })).statusCode).toBe(200);
    expect((await h.app.inject({ url: '/set-password?token=nope' })).statusCode).toBe(403);
    expect(await signIn('', 'you@example.com', 'a new password')).toBe(401);
    const short = await h.app.inject({ method: 'POST', url: '/ui/api/set-password', payload: { token, password: 'short' } });
    expect(short.statusCode).toBe(400);
    const set = await h.app.inject({ method: 'POST', url: '/ui/api/set-password', payload: { token, password: 'a new password' } });
    expect(set.statusCode, set.body).toBe(200);
    expect(await signIn('', 'you@example.com', 'a new password')).toBe(200);
    // Single use.
    const again = await h.app.inject({ method: 'POST', url: '/ui/api/set-password', payload: { token, password: 'another password' } });
    expect(again.statusCode).toBe(403);
    expect(JSON.parse(again.body).code).toBe('password_link_unavailable');
    expect((await h.app.inject({ url: `/set-password?token=${token}` })).statusCode).toBe(403);

    // Another workspace's link is under /w/<slug>.
    const other = await json('user', 'create', '--workspace', 'other', '--email', 'new@other.test', '--role', 'read_only');
    expect(other.setPasswordUrl).toContain('/w/other/set-password?token=');
    // With a password: no link.
    const withPw = await dbqIn(
      process.cwd(),
      { DBQ_DATA_DIR: h.dataDir },
      ['user', 'create', '--workspace', 'default', '--email', 'pw@example.com', '--role', 'read_only', '--password-stdin', '--json'],
      'piped password\n',
    );
    expect(withPw.code, withPw.stderr).toBe(0);
    expect(JSON.parse(withPw.stdout).setPasswordUrl).toBeUndefined();
    expect(await signIn('', 'pw@example.com', 'piped password')).toBe(200);
  });

  it('user set-password reads stdin, applies the length rule and signs the user out everywhere', async () => {
    const login = await h.app.inject({
      method: 'POST',
      url: '/ui/api/login',
      payload: { email: 'admin@acme.test', password: 'correct horse' },
    });
    const cookie = /dbq_session=[^;]+/.exec(String(login.headers['set-cookie']))![0];
    expect((await h.app.inject({ url: '/ui/api/session', headers: { cookie } })).json().data.signedIn).toBe(true);

    const env = { DBQ_DATA_DIR: h.dataDir };
    const short = await dbqIn(
      process.cwd(),
      env,
      ['user', 'set-password', '--workspace', 'default', '--email', 'admin@acme.test', '--password-stdin'],
      'short\n',
    );
    expect(short.code).toBe(1);
    expect(short.stderr).toContain('at least 8 characters');
    const noTty = await dbqIn(process.cwd(), env, ['user', 'set-password', '--workspace', 'default', '--email', 'admin@acme.test']);
    expect(noTty.code).toBe(1);
    expect(noTty.stderr).toContain('--password-stdin');
    const ok = await dbqIn(
      process.cwd(),
      env,
      ['user', 'set-password', '--workspace', 'default', '--email', 'admin@acme.test', '--password-stdin'],
      'battery staple\n',
    );
    expect(ok.code, ok.stderr).toBe(0);
    expect((await h.app.inject({ url: '/ui/api/session', headers: { cookie } })).json().data.signedIn).toBe(false);
    expect(await signIn('', 'admin@acme.test', 'correct horse')).toBe(401);
    expect(await signIn('', 'admin@acme.test', 'battery staple')).toBe(200);
    // Put it back for the other tests.
    await dbqIn(
      process.cwd(),
      env,
      ['user', 'set-password', '--workspace', 'default', '--email', 'admin@acme.test', '--password-stdin'],
      'correct horse',
    );
  });

  it('user delete removes the user and their keys', async () => {
    await json('user', 'create', '--workspace', 'default', '--email', 'gone@example.com', '--role', 'read_only');
    const key = await json('key', 'create', '--workspace', 'default', '--user', 'gone@example.com', '--name', 'k');
    expect((await h.call('GET', '/api/connections', key.secret)).status).toBe(200);
    const deleted = await json('user', 'delete', '--workspace', 'default', '--email', 'gone@example.com');
    expect(deleted).toMatchObject({ deleted: true, user: { email: 'gone@example.com' } });
    expect((await h.call('GET', '/api/connections', key.secret)).status).toBe(401);
    const missing = await dbq('user', 'delete', '--workspace', 'default', '--email', 'gone@example.com');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('User not found');
  });
});

describe('the store', () => {
  it('is never created by an admin command from another directory, unless --init', async () => {
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'dbq-cwd-'));
    try {
      const res = await dbqIn(cwd, {}, ['user', 'list', '--workspace', 'default']);
      expect(res.code).toBe(1);
      expect(res.stderr).toContain(path.join(cwd, 'data', 'dbq.sqlite'));
      expect(res.stderr).toContain('--data-dir');
      expect(res.stderr).toContain('--init');
      expect(fs.existsSync(path.join(cwd, 'data'))).toBe(false);
      const asJson = await dbqIn(cwd, {}, ['key', 'list', '--workspace', 'default', '--json']);
      expect(JSON.parse(asJson.stderr)).toMatchObject({ success: false, code: 'invalid_request' });

      // --data-dir points at the real one.
      const there = await dbqIn(cwd, {}, ['--data-dir', h.dataDir, 'user', 'list', '--workspace', 'default']);
      expect(there.code, there.stderr).toBe(0);
      expect(there.stdout).toContain('admin@acme.test');

      // --init creates it; empty lists say so, and JSON is the usual shape.
      const users = await dbqIn(cwd, {}, ['user', 'list', '--workspace', 'default', '--init']);
      expect(users.code, users.stderr).toBe(0);
      expect(users.stdout).toMatch(/no users/);
      expect(fs.existsSync(path.join(cwd, 'data', 'dbq.sqlite'))).toBe(true);
      expect((await dbqIn(cwd, {}, ['key', 'list', '--workspace', 'default'])).stdout).toMatch(/no keys/);
      expect((await dbqIn(cwd, {}, ['connection', 'list', '--workspace', 'default'])).stdout).toMatch(/no connections/);
      expect(JSON.parse((await dbqIn(cwd, {}, ['user', 'list', '--workspace', 'default', '--json'])).stdout)).toEqual({ users: [] });
      expect(JSON.parse((await dbqIn(cwd, {}, ['key', 'list', '--workspace', 'default', '--json'])).stdout)).toEqual({ apiKeys: [] });
      expect(JSON.parse((await dbqIn(cwd, {}, ['connection', 'list', '--workspace', 'default', '--json'])).stdout)).toEqual({
        connections: [],
      });
      // The default workspace of a new store is on DBQ_DEFAULT_PLAN (enterprise unless set).
      const ws = JSON.parse((await dbqIn(cwd, {}, ['workspace', 'list', '--json'])).stdout);
      expect(ws.workspaces.find((w: any) => w.slug === 'default').plan).toBe('enterprise');
    } finally {
      fs.rmSync(cwd, { recursive: true, force: true });
    }
  });

  it('DBQ_DEFAULT_PLAN is the plan of a workspace created without --plan', async () => {
    expect((await json('workspace', 'create', 'plan-default')).workspace.plan).toBe('enterprise');
    const free = await dbqIn(process.cwd(), { DBQ_DATA_DIR: h.dataDir, DBQ_DEFAULT_PLAN: 'free' }, [
      'workspace',
      'create',
      'plan-free',
      '--json',
    ]);
    expect(JSON.parse(free.stdout).workspace.plan).toBe('free');
    const bad = await dbqIn(process.cwd(), { DBQ_DATA_DIR: h.dataDir, DBQ_DEFAULT_PLAN: 'gold' }, ['workspace', 'list']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('DBQ_DEFAULT_PLAN');
  });
});

describe('CLI details', () => {
  it('--version, required options in --help, a clear --port error', async () => {
    const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8'));
    expect((await dbq('--version')).stdout.trim()).toBe(pkg.version);
    const help = await dbq('user', 'set-password', '--help');
    expect(help.stdout).toMatch(/--workspace <slug>\s+workspace \(required\)/);
    expect(help.stdout).toMatch(/--email <email>\s+email \(required\)/);
    expect(help.stdout).not.toMatch(/--password-stdin.*\(required\)/);
    const port = await dbq('serve', '--port', 'abc');
    expect(port.code).not.toBe(0);
    expect(port.stderr).toContain("'abc' is invalid");
    expect(port.stderr).not.toMatch(/\n\s+at /);
  });

  it('connection test, update and remove call the API core', async () => {
    const tested = await json('connection', 'test', '--workspace', 'default', '--connection', 'sample');
    expect(tested).toMatchObject({ ok: true, serverVersion: expect.any(String) });
    const human = await dbq('connection', 'test', '--workspace', 'default', '--connection', 'sample');
    expect(human.stdout).toMatch(/^ok in \d+ ms/);

    await json('connection', 'add', '--workspace', 'default', '--name', 'spare', '--url', 'sqlite:sample.db');
    const updated = await json(
      'connection',
      'update',
      '--workspace',
      'default',
      '--connection',
      'spare',
      '--name',
      'spare2',
      '--read-only',
    );
    expect(updated.connection).toMatchObject({ name: 'spare2', readOnly: true });
    const back = await json('connection', 'update', '--workspace', 'default', '--connection', 'spare2', '--no-read-only');
    expect(back.connection.readOnly).toBe(false);
    const nothing = await dbq('connection', 'update', '--workspace', 'default', '--connection', 'spare2');
    expect(nothing.code).toBe(1);
    const removed = await json('connection', 'remove', '--workspace', 'default', '--connection', 'spare2');
    expect(removed).toMatchObject({ deleted: true, connection: { name: 'spare2' } });
    const res = await h.call('GET', '/api/connections', h.adminKey);
    expect(res.body.data.connections.map((c: any) => c.name)).not.toContain('spare2');

    const failing = await dbq('connection', 'test', '--workspace', 'default', '--connection', 'nope');
    expect(failing.code).toBe(1);
  });

  it('key list shows when each key was created and last used', async () => {
    await h.call('GET', '/api/connections', h.adminKey);
    const out = (await dbq('key', 'list', '--workspace', 'default')).stdout;
    expect(out).toMatch(/admin-key\tadmin@acme.test\tactive\tcreated \S+\tlast used \S+/);
    expect(out).toMatch(/never used|last used/);
  });
});
