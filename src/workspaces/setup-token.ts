// First run: a workspace without users has nobody who could sign in, so `dbq serve` issues a
// one-time setup token and prints the /setup link. Whoever holds the link creates the first
// admin. The token is stored hashed (a store reader cannot use it), compared in constant time,
// deleted when used, and refused as soon as the workspace has any user, so a link that leaks
// later (shell history, logs) is worthless.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import { recordAudit } from '../audit/audit.ts';
import { nowIso } from '../ids.ts';
import type { Database } from '../store/schema.ts';
import { createUser, type User } from './users.ts';
import { getWorkspace } from './workspaces.ts';
import { SetupUnavailableError } from '../errors.ts';

function hashSetupToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export async function workspaceHasUsers(db: Kysely<Database>, workspaceId: string): Promise<boolean> {
  const row = await db.selectFrom('users').select('id').where('workspace_id', '=', workspaceId).limit(1).executeTakeFirst();
  return row !== undefined;
}

/** Issues a fresh setup token for `slug` (replacing any earlier one), or returns null when the
 * workspace already has users and needs none. */
export async function issueSetupToken(db: Kysely<Database>, slug: string): Promise<string | null> {
  const ws = await getWorkspace(db, slug);
  if (await workspaceHasUsers(db, ws.id)) return null;
  const token = randomBytes(32).toString('base64url');
  const row = { workspace_id: ws.id, token_hash: hashSetupToken(token), created_at: nowIso() };
  // One upsert, not delete-then-insert: several processes starting together on one store
  // raced on the primary key and the loser failed to start. The last one to start wins;
  // the link it printed is the one that works.
  await db
    .insertInto('web_setup_tokens')
    .values(row)
    .onConflict((oc) => oc.column('workspace_id').doUpdateSet({ token_hash: row.token_hash, created_at: row.created_at }))
    .execute();
  return token;
}

async function setupTokenMatches(db: Kysely<Database>, workspaceId: string, token: string): Promise<boolean> {
  const row = await db.selectFrom('web_setup_tokens').select('token_hash').where('workspace_id', '=', workspaceId).executeTakeFirst();
  if (!row) return false;
  const expected = Buffer.from(row.token_hash);
  const given = Buffer.from(hashSetupToken(token));
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** True when /setup?token=… can still be used (the page shows the form only then). */
export async function setupTokenUsable(db: Kysely<Database>, slug: string, token: string): Promise<boolean> {
  const ws = await getWorkspace(db, slug);
  if (await workspaceHasUsers(db, ws.id)) return false;
  return setupTokenMatches(db, ws.id, token);
}

/** Creates the first admin with the setup token, and burns the token. Audited as
 * `user.created` and `setup.used`, both by the new admin from `ip` (nobody is signed in yet). */
export async function redeemSetupToken(
  db: Kysely<Database>,
  slug: string,
  input: { token: string; email: string; password: string },
  ip: string | null,
): Promise<User> {
  const ws = await getWorkspace(db, slug);
  if (await workspaceHasUsers(db, ws.id)) throw new SetupUnavailableError();
  if (!(await setupTokenMatches(db, ws.id, input.token))) throw new SetupUnavailableError();
  // One transaction: the token is deleted and the admin created together. Of two concurrent
  // redemptions only the one whose delete removed the row goes on, and a refused email or
  // password rolls the delete back, so a typo does not burn the link.
  return db.transaction().execute(async (trx) => {
    const deleted = await trx.deleteFrom('web_setup_tokens').where('workspace_id', '=', ws.id).executeTakeFirst();
    if (Number(deleted.numDeletedRows ?? 0) === 0) throw new SetupUnavailableError();
    const anonymous = { userId: null, email: input.email.trim().toLowerCase(), keyId: null, ip, source: 'ui' as const };
    const user = await createUser(trx, { workspace: slug, email: input.email, role: 'admin', password: input.password }, anonymous);
    const actor = { ...anonymous, userId: user.id, email: user.email };
    await recordAudit(trx, { workspaceId: ws.id, actor, action: 'setup.used', target: { type: 'workspace', id: ws.id, name: ws.slug } });
    return user;
  });
}
