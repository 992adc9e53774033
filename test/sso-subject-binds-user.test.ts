// Single sign-on finds a user by the provider's subject once linked, not by email: an email can
// be handed to someone else at the provider, a subject is never reused. The first SSO sign-in
// links the user (a new one, or a password user with that email); from then on another subject
// presenting the same email is refused and changes nothing; the linked subject is admitted even
// when the provider now sends another email; setting SSO up again (remove, then set) forgets
// the links. Two first sign-ins of one person at once end as one user with one link.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliActor } from '../src/audit/audit.ts';
import { SsoSignInError } from '../src/errors.ts';
import { ssoClientSettings, type SsoClientSettings } from '../src/sso/sso-settings.ts';
import { admitSsoUser } from '../src/sso/sso-users.ts';
import { authenticateKey } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { createHarness, type Harness } from './support/harness.ts';

let h: Harness;
let settings: SsoClientSettings;
let workspaceId: string;

const SSO = { issuer: 'https://login.acme.test', clientId: 'dbq', clientSecret: 'secret', allowedDomains: ['acme.test'] };
const who = (subject: unknown, email: string) => ({ subject, email, emailVerified: true });
const state = async () => ({
  users: await h.svc.db.selectFrom('users').select(['id', 'email']).where('workspace_id', '=', workspaceId).orderBy('id').execute(),
  links: await h.svc.db.selectFrom('sso_identities').selectAll().where('workspace_id', '=', workspaceId).orderBy('subject').execute(),
});
const refusal = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SsoSignInError);
  return err as SsoSignInError;
};

async function setUp(): Promise<void> {
  const res = await h.call('PUT', '/api/workspace/sso', h.adminKey, SSO);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  settings = (await ssoClientSettings(h.svc.db, h.svc.secretBox, workspaceId))!;
}

beforeAll(async () => {
  h = await createHarness();
  workspaceId = (await authenticateKey(h.svc.db, h.adminKey)).workspace.id;
  await setUp();
}, 60_000);

afterAll(async () => {
  await h?.close();
});

describe('SSO users are their subject at the provider', () => {
  it('a first sign-in creates the user linked to its subject; the same subject signs the same user in', async () => {
    const first = await admitSsoUser(h.svc.db, settings, who('sub-ann', 'ann@acme.test'), null);
    expect(first.created).toBe(true);
    const again = await admitSsoUser(h.svc.db, settings, who('sub-ann', 'ann@acme.test'), null);
    expect(again).toEqual({ user: first.user, created: false });
    const { links } = await state();
    expect(links).toEqual([expect.objectContaining({ issuer: SSO.issuer, subject: 'sub-ann', user_id: first.user.id })]);
  });

  it('another subject with a linked email is refused and changes nothing', async () => {
    const before = await state();
    const err = await refusal(admitSsoUser(h.svc.db, settings, who('sub-mallory', 'ann@acme.test'), null));
    expect(err.details).toEqual({ reason: 'other_identity' });
    expect(err.message).toContain('ann@acme.test');
    // Case and spaces of the email do not make it another account either.
    await refusal(admitSsoUser(h.svc.db, settings, who('sub-mallory', ' ANN@acme.test '), null));
    expect(await state()).toEqual(before);
  });

  it('the linked subject is admitted when the provider now sends another email of an allowed domain', async () => {
    const ann = (await state()).users.find((u) => u.email === 'ann@acme.test')!;
    const renamed = await admitSsoUser(h.svc.db, settings, who('sub-ann', 'ann.smith@acme.test'), null);
    expect(renamed).toEqual({ user: expect.objectContaining({ id: ann.id, email: 'ann@acme.test' }), created: false });
    // The domain and verification rules still apply to a linked subject.
    const err = await refusal(admitSsoUser(h.svc.db, settings, who('sub-ann', 'ann@elsewhere.test'), null));
    expect(err.details).toEqual({ reason: 'domain' });
  });

  it('a password user is linked by email at their first SSO sign-in, and only that subject is them after', async () => {
    const { workspace } = await authenticateKey(h.svc.db, h.adminKey);
    await createUser(
      h.svc.db,
      { workspace: workspace.slug, email: 'bob@acme.test', role: 'read_only', password: 'a long enough password 1' },
      cliActor(),
    );
    const bob = await admitSsoUser(h.svc.db, settings, who('sub-bob', 'bob@acme.test'), null);
    expect(bob.created).toBe(false);
    expect(bob.user.email).toBe('bob@acme.test');
    await refusal(admitSsoUser(h.svc.db, settings, who('sub-bob-2', 'bob@acme.test'), null));
  });

  it('a missing or oversized subject is refused', async () => {
    const before = await state();
    for (const subject of [undefined, '', 42, 'x'.repeat(256)]) {
      const err = await refusal(admitSsoUser(h.svc.db, settings, who(subject, 'carol@acme.test'), null));
      expect(err.details).toEqual({ reason: 'no_subject' });
    }
    expect(await state()).toEqual(before);
  });

  it('two first sign-ins of one person at once make one user with one link', async () => {
    const both = await Promise.all([
      admitSsoUser(h.svc.db, settings, who('sub-dan', 'dan@acme.test'), null),
      admitSsoUser(h.svc.db, settings, who('sub-dan', 'dan@acme.test'), null),
    ]);
    expect(both[0].user.id).toBe(both[1].user.id);
    const { users, links } = await state();
    expect(users.filter((u) => u.email === 'dan@acme.test')).toHaveLength(1);
    expect(links.filter((l) => l.subject === 'sub-dan')).toHaveLength(1);
  });

  it('removing single sign-on forgets the links: set up again, an email links the user anew', async () => {
    expect((await h.call('DELETE', '/api/workspace/sso', h.adminKey)).status).toBe(200);
    expect((await state()).links).toEqual([]);
    await setUp();
    const ann = await admitSsoUser(h.svc.db, settings, who('sub-ann-new', 'ann@acme.test'), null);
    expect(ann.created).toBe(false);
    expect((await state()).links.map((l) => l.subject)).toEqual(['sub-ann-new']);
  });
});
