// The dbq command as users run it: ./bin/dbq in a child process, against a data dir shared
// with an in-process server, so "a revocation made by the CLI in another process applies at
// the next request" is proven with two real processes on one SQLite store.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './support/harness.ts';
import { runDbq } from './support/cli.ts';

let h: Harness;

const dbq = (...args: string[]) => runDbq(h.dataDir, args);

const json = async (...args: string[]) => {
  const res = await dbq(...args, '--json');
  expect(res.code, res.stderr).toBe(0);
  return JSON.parse(res.stdout);
};

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h.close();
});

describe('dbq CLI', () => {
  it('creates a workspace, a user, a key (printed once) and a connection, each with --json', async () => {
    const ws = await json('workspace', 'create', 'cli-ws', '--plan', 'professional', '--name', 'CLI Co');
    expect(ws.workspace).toMatchObject({ slug: 'cli-ws', plan: 'professional', name: 'CLI Co' });
    const user = await json('user', 'create', '--workspace', 'cli-ws', '--email', 'ops@cli.test', '--role', 'admin');
    expect(user.user).toMatchObject({ email: 'ops@cli.test', role: 'admin', disabled: false });
    const key = await json('key', 'create', '--workspace', 'cli-ws', '--user', 'ops@cli.test', '--name', 'deploy');
    expect(Object.keys(key).sort()).toEqual(['apiKey', 'secret']);
    expect(key.apiKey).toEqual({
      id: expect.stringMatching(/^key_/),
      name: 'deploy',
      prefix: key.secret.slice(0, 12),
      scope: null,
      expiresAt: null,
    });
    const listed = await json('key', 'list', '--workspace', 'cli-ws');
    expect(JSON.stringify(listed)).not.toContain(key.secret);
    const conn = await json(
      'connection',
      'add',
      '--workspace',
      'cli-ws',
      '--name',
      'pg',
      '--url',
      'postgres://postgres:pw@127.0.0.1:5432/test',
      '--read-only',
    );
    expect(conn.connection).toMatchObject({ name: 'pg', engine: 'postgres', readOnly: true });
    const conns = await json('connection', 'list', '--workspace', 'cli-ws');
    expect(JSON.stringify(conns)).not.toContain('pw@');
    // The server process sees what the CLI wrote, and the key works.
    const res = await h.call('GET', '/w/cli-ws/api/connections', key.secret);
    expect(res.body.data.connections.map((c: any) => c.name)).toEqual(['pg']);
    const plan = await json('workspace', 'set-plan', 'cli-ws', 'enterprise');
    expect(plan.workspace.plan).toBe('enterprise');
  });

  it('revokes a key and disables a user from another process, refused at the next request', async () => {
    const key = await json('key', 'create', '--workspace', 'default', '--user', 'reader@acme.test', '--name', 'cli-made');
    expect((await h.call('GET', '/api/connections', key.secret)).status).toBe(200);
    await json('key', 'revoke', key.apiKey.id, '--workspace', 'default');
    expect((await h.call('GET', '/api/connections', key.secret)).status).toBe(401);

    expect((await h.call('GET', '/api/connections', h.readerKey)).status).toBe(200);
    await json('user', 'disable', '--workspace', 'default', '--email', 'reader@acme.test');
    expect((await h.call('GET', '/api/connections', h.readerKey)).status).toBe(401);
    await json('user', 'enable', '--workspace', 'default', '--email', 'reader@acme.test');
    expect((await h.call('GET', '/api/connections', h.readerKey)).status).toBe(200);

    await json('user', 'set-role', '--workspace', 'default', '--email', 'admin@acme.test', '--role', 'read_only');
    expect((await h.call('POST', '/api/connections', h.adminKey, { name: 'nope', engine: 'sqlite', database: 'n.db' })).status).toBe(403);
    await json('user', 'set-role', '--workspace', 'default', '--email', 'admin@acme.test', '--role', 'admin');
  });

  it('exits non-zero with a clear message on bad input', async () => {
    const unknown = await dbq('user', 'create', '--workspace', 'nope', '--email', 'x@y.test', '--role', 'admin');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('Workspace not found');
    const badRole = await dbq('user', 'create', '--workspace', 'default', '--email', 'x@y.test', '--role', 'owner');
    expect(badRole.code).not.toBe(0);
    expect(badRole.stderr).toMatch(/role/);
    const badUrl = await dbq('connection', 'add', '--workspace', 'default', '--name', 'x', '--url', 'postgres://h/db?options=-c%20x');
    expect(badUrl.code).toBe(1);
    expect(badUrl.stderr).toContain('not supported');
    const dup = await dbq('workspace', 'create', 'default', '--json');
    expect(dup.code).toBe(1);
    expect(JSON.parse(dup.stderr)).toMatchObject({ success: false, code: 'conflict' });
  });

  it('documents every command in --help', async () => {
    const help = await dbq('--help');
    for (const cmd of ['serve', 'workspace', 'user', 'key', 'connection']) expect(help.stdout).toContain(cmd);
    const keyHelp = await dbq('key', 'create', '--help');
    expect(keyHelp.stdout).toContain('--workspace');
    expect(keyHelp.stdout).toContain('printed once');
  });
});
