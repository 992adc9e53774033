// One-time "set your password" links: made for a user created without a password (`dbq user
// create`), or by an admin's reset (users page, `dbq user reset-link`). Like the setup token
// (setup-token.ts) the token has 256 bits, only its SHA-256 is stored, and it is burnt in the
// same transaction that sets the password. A link lives PASSWORD_LINK_TTL_MS, and a user has
// at most one live link: issuing a new one, or any password change, kills the older one.
import { createHash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { PasswordLinkUnavailableError } from '../errors.ts';
import type { Database } from '../store/schema.ts';
import { assertPassword, getUserRow, setUserPassword, toUser, type User } from './users.ts';
import { getWorkspace } from './workspaces.ts';

const PASSWORD_LINK_TTL_MS = 24 * 3_600_000;
/** The page that redeems a link, after `{workspace_url}`. */
export const PASSWORD_LINK_PATH = '/set-password';

const TOKEN = /^[A-Za-z0-9_-]{43}$/;

function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export interface PasswordLink {
  token: string;
  expiresAt: string;
  user: User;
}

/** Issues a fresh link for the user (replacing any earlier one). */
export async function issuePasswordToken(db: Kysely<Database>, workspace: string, email: string): Promise<PasswordLink> {
  const row = await getUserRow(db, workspace, email);
  const token = randomBytes(32).toString('base64url');
  const now = Date.now();
  const expiresAt = new Date(now + PASSWORD_LINK_TTL_MS).toISOString();
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('password_tokens').where('user_id', '=', row.id).execute();
    await trx
      .insertInto('password_tokens')
      .values({
        token_hash: hashToken(token),
        workspace_id: row.workspace_id,
        user_id: row.id,
        created_at: new Date(now).toISOString(),
        expires_at: expiresAt,
      })
      .execute();
  });
  return { token, expiresAt, user: toUser(row) };
}

/** The user a live link of `slug` belongs to, or null. Looked up by hash: the hash is the
 * primary key, so no comparison of secrets happens in application code. */
async function findLink(db: Kysely<Database>, slug: string, token: string): Promise<{ hash: string; email: string } | null> {
  if (!TOKEN.test(token)) return null;
  const ws = await getWorkspace(db, slug);
  const hash = hashToken(token);
  const row = await db
    .selectFrom('password_tokens as t')
    .innerJoin('users as u', 'u.id', 't.user_id')
    .select(['t.expires_at as expiresAt', 'u.email as email', 'u.disabled_at as disabledAt'])
    .where('t.token_hash', '=', hash)
    .where('t.workspace_id', '=', ws.id)
    .executeTakeFirst();
  if (!row || row.disabledAt !== null || Date.parse(row.expiresAt) <= Date.now()) return null;
  return { hash, email: row.email };
}

/** The email a link is for (the page shows it), or null when the link is not usable. */
export async function passwordTokenEmail(db: Kysely<Database>, slug: string, token: string): Promise<string | null> {
  return (await findLink(db, slug, token))?.email ?? null;
}

/** Sets the password with a link and burns it (setUserPassword deletes the user's links and
 * signs out every session). A refused password leaves the link usable. */
export async function redeemPasswordToken(db: Kysely<Database>, slug: string, input: { token: string; password: string }): Promise<User> {
  const link = await findLink(db, slug, input.token);
  if (!link) throw new PasswordLinkUnavailableError();
  assertPassword(input.password);
  // Claim the link first: of two concurrent redemptions only the one whose delete removed the
  // row goes on.
  const claimed = await db.deleteFrom('password_tokens').where('token_hash', '=', link.hash).executeTakeFirst();
  if (Number(claimed.numDeletedRows ?? 0) === 0) throw new PasswordLinkUnavailableError();
  return setUserPassword(db, slug, link.email, input.password);
}
