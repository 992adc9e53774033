// The audit log through the real CLI (./bin/dbq in child processes on the store an in-process
// server uses): user, plan and connection changes are recorded with the local OS account as
// the actor (`local:<name>`, no user, no key, no address) and `source: cli`; no secret given on
// the command line or in a key file reaches an entry; `dbq audit list` prints one line per
// entry or the API's JSON, and takes the API's filters.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './support/harness.ts';
import { runDbq } from './support/cli.ts';

const OPERATOR = `local:${os.userInfo().username}`;
const SSH_KEY =
  '-----BEGIN OPENSSH PRIVATE KEY-----\nCliKeyMaterialb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n';
const SECRETS = ['Cli-Pass-1', 'Cli-Pass-2', 'Cli-ReadPass-1', 'CliKeyMaterial', 'Cli-User-Pw'];

let h: Harness;

const dbq = (...args: string[]) => runDbq(h.dataDir, args, { env: { DBQ_CONNECTION_TEST_TIMEOUT_MS: '2000' }, timeoutMs: 60_000 });

const json = async (...args: string[]) => {
  const res = await dbq(...args, '--json');
  expect(res.code, res.stderr).toBe(0);
  return JSON.parse(res.stdout);
};

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h?.close();
});

describe('changes made with the CLI', () => {
  it('records user, plan and connection changes as the local operator, with source cli and no secret', async () => {
    const keyFile = path.join(h.dataDir, 'bastion_key');
    fs.writeFileSync(keyFile, SSH_KEY, { mode: 0o600 });
    const made = await json(
      'user',
      'create',
      '--workspace',
      'default',
      '--email',
      'cli-made@acme.test',
      '--role',
      'read_only',
      '--password',
      'Cli-User-Pw',
    );
    await json('user', 'set-role', '--workspace', 'default', '--email', 'cli-made@acme.test', '--role', 'admin');
    await json('user', 'disable', '--workspace', 'default', '--email', 'cli-made@acme.test');
    await json('user', 'enable', '--workspace', 'default', '--email', 'cli-made@acme.test');
    await json('workspace', 'set-plan', 'default', 'professional');
    const added = await json(
      'connection',
      'add',
      '--workspace',
      'default',
      '--name',
      'clidb',
      '--url',
      'postgres://postgres:Cli-Pass-1@127.0.0.1:5432/test',
      '--read-url',
      'postgres://postgres:Cli-ReadPass-1@127.0.0.1:5432/test',
      '--ssh-host',
      '127.0.0.1',
      '--ssh-port',
      '1',
      '--ssh-user',
      'jump',
      '--ssh-key-file',
      keyFile,
      '--ssh-host-key',
      `SHA256:${'B'.repeat(43)}`,
    );
    const connId = added.connection.id;
    const key = await json('key', 'create', '--workspace', 'default', '--user', 'cli-made@acme.test', '--name', 'cli-key', '--read-only');
    await json('key', 'revoke', '--workspace', 'default', key.apiKey.id);
    await json(
      'connection',
      'update',
      '--workspace',
      'default',
      '--connection',
      'clidb',
      '--url',
      'postgres://postgres:Cli-Pass-2@127.0.0.1:5432/test',
      '--read-only',
    );
    await json('connection', 'set-reader', '--workspace', 'default', '--connection', 'clidb', '--remove');
    await json('connection', 'remove', '--workspace', 'default', '--connection', 'clidb');

    const page = await json('audit', 'list', '--workspace', 'default', '--actor', OPERATOR, '--limit', '200');
    const mine = page.entries.filter(
      (e: any) => [made.user.id, connId, key.apiKey.id].includes(e.target.id) || e.action === 'workspace.plan_changed',
    );
    expect(mine.map((e: any) => e.action).reverse()).toEqual([
      'user.created',
      'user.role_changed',
      'user.disabled',
      'user.enabled',
      'workspace.plan_changed',
      'connection.created',
      'key.created',
      'key.revoked',
      'connection.updated',
      'connection.updated',
      'connection.deleted',
    ]);
    expect(JSON.stringify(page)).not.toContain(key.secret);
    for (const e of mine) {
      expect(e.actor).toEqual({ userId: null, email: OPERATOR, keyId: null });
      expect(e).toMatchObject({ ip: null, source: 'cli' });
    }
    const by = (action: string) => mine.filter((e: any) => e.action === action);
    expect(by('user.created')[0].target).toEqual({ type: 'user', id: made.user.id, name: 'cli-made@acme.test' });
    expect(by('user.role_changed')[0].changes).toEqual({ role: { from: 'read_only', to: 'admin' } });
    expect(by('workspace.plan_changed')[0]).toMatchObject({
      target: { type: 'workspace', name: 'default' },
      changes: { plan: { from: 'enterprise', to: 'professional' } },
    });
    expect(by('connection.created')[0].changes).toMatchObject({
      host: '127.0.0.1',
      readUser: 'postgres',
      password: 'set',
      readPassword: 'set',
      sshPrivateKey: 'set',
    });
    const [reader, update] = by('connection.updated');
    expect(update.changes).toEqual({ readOnly: { from: false, to: true }, password: 'changed' });
    expect(reader.changes).toEqual({ readUser: { from: 'postgres', to: null }, readPassword: 'removed' });

    const rows = JSON.stringify(await h.svc.db.selectFrom('audit_log').selectAll().execute());
    for (const secret of SECRETS) expect(rows, secret).not.toContain(secret);
    for (const secret of SECRETS) expect(JSON.stringify(page), secret).not.toContain(secret);
  }, 180_000);
});

describe('dbq audit list', () => {
  it('prints one line per entry, newest first, and filters by action, target and time', async () => {
    const human = await dbq('audit', 'list', '--workspace', 'default', '--action', 'user.role_changed');
    expect(human.code, human.stderr).toBe(0);
    const lines = human.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\d{4}-\d\d-\d\dT\S+\tuser\.role_changed\tlocal:\S+\tuser cli-made@acme\.test \(usr_\w+\)\tcli\t\{"role":\{"from":"read_only","to":"admin"\}\}$/,
    );

    const byTarget = await json('audit', 'list', '--workspace', 'default', '--target', 'cli-made@acme.test');
    expect(byTarget.entries.map((e: any) => e.action)).toEqual(['user.enabled', 'user.disabled', 'user.role_changed', 'user.created']);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await json('audit', 'list', '--workspace', 'default', '--since', future)).entries).toEqual([]);
    expect((await json('audit', 'list', '--workspace', 'default', '--until', '2000-01-01T00:00:00Z')).entries).toEqual([]);

    const paged = await json('audit', 'list', '--workspace', 'default', '--limit', '2');
    expect(paged.entries).toHaveLength(2);
    const next = await json('audit', 'list', '--workspace', 'default', '--limit', '2', '--cursor', paged.nextCursor);
    expect(next.entries[0].id < paged.entries[1].id).toBe(true);
  }, 120_000);

  it('refuses a bad action or limit with a message', async () => {
    const action = await dbq('audit', 'list', '--workspace', 'default', '--action', 'key.stolen');
    expect(action.code).not.toBe(0);
    expect(action.stderr).toMatch(/key\.stolen/);
    const limit = await dbq('audit', 'list', '--workspace', 'default', '--limit', '0');
    expect(limit.code).not.toBe(0);
    expect(limit.stderr).toMatch(/limit/);
  }, 60_000);
});
