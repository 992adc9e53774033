// `dbq workspace set-sso|show-sso|remove-sso` as an operator runs them: the secret from
// standard input only and never printed, repeated --allowed-domain, --no-password-sign-in, the
// redirect URI to register, audited as the local operator, and refusals in words.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './support/harness.ts';

const run = promisify(execFile);
const BIN = path.resolve('bin/dbq');
let h: Harness;

async function dbq(args: string[], input = ''): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = run(BIN, args, {
    env: { ...process.env, DBQ_DATA_DIR: h.dataDir, DBQ_PUBLIC_URL: 'https://dbq.example.com' },
    timeout: 30_000,
  });
  child.child.stdin!.end(input);
  try {
    const { stdout, stderr } = await child;
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const SET = ['workspace', 'set-sso', '--workspace', 'other', '--issuer', 'https://acme.okta.test', '--client-id', '0oa123'];

beforeAll(async () => {
  h = await createHarness();
}, 60_000);

afterAll(async () => {
  await h?.close();
});

// Each command starts a Node process (through tsx while src/ is newer than the build): seconds
// apiece on the shared machine.
describe('dbq workspace set-sso', { timeout: 120_000 }, () => {
  it('documents its options in --help', async () => {
    const help = await dbq(['workspace', 'set-sso', '--help']);
    for (const option of [
      '--issuer',
      '--client-id',
      '--client-secret-stdin',
      '--allowed-domain',
      '--default-role',
      '--no-password-sign-in',
    ]) {
      expect(help.stdout).toContain(option);
    }
  });

  it('needs the secret the first time, and a domain', async () => {
    const noSecret = await dbq([...SET, '--allowed-domain', 'acme.test']);
    expect(noSecret.code).not.toBe(0);
    expect(noSecret.stderr).toContain('clientSecret is required the first time');
    const noDomain = await dbq([...SET, '--client-secret-stdin'], 'shh\n');
    expect(noDomain.code).not.toBe(0);
    expect(noDomain.stderr).toContain('allowedDomains');
    expect(await h.svc.db.selectFrom('workspace_sso').selectAll().execute()).toHaveLength(0);
  });

  it('sets it from stdin, never printing the secret', async () => {
    const res = await dbq(
      [
        ...SET,
        '--client-secret-stdin',
        '--allowed-domain',
        'acme.test',
        '--allowed-domain',
        'ACME.example',
        '--default-role',
        'admin',
        '--no-password-sign-in',
        '--json',
      ],
      'piped client secret\n',
    );
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout + res.stderr).not.toContain('piped client secret');
    expect(JSON.parse(res.stdout)).toMatchObject({
      configured: true,
      issuer: 'https://acme.okta.test',
      clientId: '0oa123',
      clientSecretSet: true,
      allowedDomains: ['acme.test', 'acme.example'],
      defaultRole: 'admin',
      passwordSignIn: false,
      redirectUri: 'https://dbq.example.com/w/other/sso/callback',
    });
    const entry = await h.svc.db.selectFrom('audit_log').selectAll().where('action', '=', 'sso.configured').executeTakeFirstOrThrow();
    expect(entry.source).toBe('cli');
    expect(entry.actor_email).toMatch(/^local:/);
    expect(entry.changes).not.toContain('piped client secret');
    // The workspace's admins see the same over the API.
    const api = await h.call('GET', '/w/other/api/workspace/sso', h.otherKey);
    expect(api.body.data).toMatchObject({ configured: true, passwordSignIn: false, clientSecretSet: true });
  });

  it('turns password sign-in back on without the secret (the way back in), shows and removes it', async () => {
    const again = await dbq([...SET, '--allowed-domain', 'acme.test']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('password sign-in: on');
    const shown = await dbq(['workspace', 'show-sso', 'other']);
    expect(shown.stdout).toContain('redirect URI to register at the provider: https://dbq.example.com/w/other/sso/callback');
    expect(shown.stdout).toContain('secret set');
    const removed = await dbq(['workspace', 'remove-sso', 'other']);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toContain('Single sign-on is off for other');
    const twice = await dbq(['workspace', 'remove-sso', 'other']);
    expect(twice.code).not.toBe(0);
    expect(twice.stderr).toContain('not set');
  });
});
