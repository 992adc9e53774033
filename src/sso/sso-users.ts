// Who a finished single sign-on lets in. The provider vouches for an email; the workspace's
// rules decide: the email must be verified (email_verified true, not merely present) and its
// domain one of allowedDomains; a disabled user stays out; someone new from an allowed domain
// becomes a user with the default role. The provider's subject (`sub`, with the issuer) is what
// the user is from their first SSO sign-in on: an email can be handed to someone else at the
// provider, a subject is never reused. So a linked user is found by subject; an email match
// only links a user who has no subject at this issuer yet (the first sign-in, or the first
// since SSO was set up again), and another subject presenting a linked user's email is refused.
import type { Kysely } from 'kysely';
import { inTransaction, recordAudit, type Actor } from '../audit/audit.ts';
import { SsoSignInError } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import type { Database, UserRow } from '../store/schema.ts';
import { findUserRow } from '../workspaces/users.ts';
import type { SsoClientSettings } from './sso-settings.ts';

export interface VouchedIdentity {
  /** The ID token's `sub`. */
  subject: unknown;
  email: unknown;
  emailVerified: unknown;
}

// Comparisons are on the lower-cased address; a pattern for its shape only, bounded.
const EMAIL = /^[^\s@]{1,200}@[^\s@]{1,253}$/;

export function checkIdentity(settings: Pick<SsoClientSettings, 'allowedDomains'>, who: VouchedIdentity): string {
  if (typeof who.email !== 'string' || !EMAIL.test(who.email.trim())) {
    throw new SsoSignInError('no_email', 'The identity provider did not give an email address for this account');
  }
  const email = who.email.trim().toLowerCase();
  const domain = email.slice(email.lastIndexOf('@') + 1);
  if (!settings.allowedDomains.includes(domain)) {
    throw new SsoSignInError('domain', `Accounts of ${domain} may not sign in to this workspace`);
  }
  // Providers send a boolean; some older ones a string. Anything but true is unverified.
  if (who.emailVerified !== true && who.emailVerified !== 'true') {
    throw new SsoSignInError('unverified', `The identity provider has not verified ${email}`);
  }
  return email;
}

/** OIDC Core: a locally unique string of at most 255 ASCII characters. */
function checkSubject(subject: unknown): string {
  if (typeof subject !== 'string' || subject.length === 0 || subject.length > 255) {
    throw new SsoSignInError('no_subject', 'The identity provider did not identify the account (no subject in its ID token)');
  }
  return subject;
}

const disabled = (email: string) => new SsoSignInError('disabled', `The account ${email} is disabled in this workspace`);

/** The user linked to this subject at the workspace's issuer, if any. */
async function linkedUser(db: Kysely<Database>, settings: SsoClientSettings, subject: string): Promise<UserRow | undefined> {
  return db
    .selectFrom('sso_identities as i')
    .innerJoin('users as u', 'u.id', 'i.user_id')
    .selectAll('u')
    .where('i.workspace_id', '=', settings.workspaceId)
    .where('i.issuer', '=', settings.issuer)
    .where('i.subject', '=', subject)
    .executeTakeFirst();
}

/** The user the sign-in is for, created on a first sign-in (`user.created`, source `sso`). */
export async function admitSsoUser(
  db: Kysely<Database>,
  settings: SsoClientSettings,
  who: VouchedIdentity,
  ip: string | null,
): Promise<{ user: UserRow; created: boolean }> {
  const email = checkIdentity(settings, who);
  const subject = checkSubject(who.subject);
  const identity = { workspace_id: settings.workspaceId, issuer: settings.issuer, subject };
  const admitted = async (): Promise<UserRow | undefined> => {
    const linked = await linkedUser(db, settings, subject);
    if (linked) {
      if (linked.disabled_at !== null) throw disabled(linked.email);
      return linked;
    }
    const existing = await findUserRow(db, settings.workspaceId, email);
    if (!existing) return undefined;
    if (existing.disabled_at !== null) throw disabled(email);
    const other = await db
      .selectFrom('sso_identities')
      .select('subject')
      .where('workspace_id', '=', settings.workspaceId)
      .where('issuer', '=', settings.issuer)
      .where('user_id', '=', existing.id)
      .executeTakeFirst();
    if (other) {
      throw new SsoSignInError(
        'other_identity',
        `The account ${email} belongs to another identity at the identity provider; an admin can link it anew by setting up single sign-on again`,
      );
    }
    await db
      .insertInto('sso_identities')
      .values({ ...identity, user_id: existing.id, created_at: nowIso() })
      .execute();
    return existing;
  };
  const create = async (): Promise<UserRow> => {
    const now = nowIso();
    const row: UserRow = {
      id: newId('usr'),
      workspace_id: settings.workspaceId,
      email,
      role: settings.defaultRole,
      password_hash: null,
      disabled_at: null,
      created_at: now,
      updated_at: now,
    };
    const actor: Actor = { userId: row.id, email, keyId: null, ip, source: 'sso' };
    await inTransaction(db, async (trx) => {
      await trx.insertInto('users').values(row).execute();
      await trx
        .insertInto('sso_identities')
        .values({ ...identity, user_id: row.id, created_at: now })
        .execute();
      await recordAudit(trx, {
        workspaceId: settings.workspaceId,
        actor,
        action: 'user.created',
        target: { type: 'user', id: row.id, name: email },
        changes: { role: row.role, source: 'sso' },
      });
    });
    return row;
  };
  try {
    const found = await admitted();
    return found ? { user: found, created: false } : { user: await create(), created: true };
  } catch (err) {
    if (err instanceof SsoSignInError) throw err;
    // Two first sign-ins of one person at once: the other one linked or created the user.
    const raced = await admitted();
    if (!raced) throw err;
    return { user: raced, created: false };
  }
}
