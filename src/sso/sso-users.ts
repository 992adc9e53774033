// Who a finished single sign-on lets in. The provider vouches for an email; the workspace's
// rules decide: the email must be verified (email_verified true, not merely present) and its
// domain one of allowedDomains; a disabled user stays out; someone new from an allowed domain
// becomes a user with the default role. Users are matched by email, as password users are.
import type { Kysely } from 'kysely';
import { inTransaction, recordAudit, type Actor } from '../audit/audit.ts';
import { SsoSignInError } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import type { Database, UserRow } from '../store/schema.ts';
import { findUserRow } from '../workspaces/users.ts';
import type { SsoClientSettings } from './sso-settings.ts';

export interface VouchedIdentity {
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

/** The user the sign-in is for, created on a first sign-in (`user.created`, source `sso`). */
export async function admitSsoUser(
  db: Kysely<Database>,
  settings: SsoClientSettings,
  who: VouchedIdentity,
  ip: string | null,
): Promise<{ user: UserRow; created: boolean }> {
  const email = checkIdentity(settings, who);
  const existing = await findUserRow(db, settings.workspaceId, email);
  if (existing) {
    if (existing.disabled_at !== null) throw new SsoSignInError('disabled', `The account ${email} is disabled in this workspace`);
    return { user: existing, created: false };
  }
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
  try {
    await inTransaction(db, async (trx) => {
      await trx.insertInto('users').values(row).execute();
      await recordAudit(trx, {
        workspaceId: settings.workspaceId,
        actor,
        action: 'user.created',
        target: { type: 'user', id: row.id, name: email },
        changes: { role: row.role, source: 'sso' },
      });
    });
  } catch (err) {
    // Two first sign-ins of one person at once: the other one created the user.
    const raced = await findUserRow(db, settings.workspaceId, email);
    if (!raced) throw err;
    if (raced.disabled_at !== null) throw new SsoSignInError('disabled', `The account ${email} is disabled in this workspace`);
    return { user: raced, created: false };
  }
  return { user: row, created: true };
}
