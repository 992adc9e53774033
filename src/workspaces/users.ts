import type { Kysely } from 'kysely';
import { inTransaction, recordAudit, type Actor } from '../audit/audit.ts';
import { ConflictError, InvalidRequestError, NotFoundError } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import type { Database, UserRow } from '../store/schema.ts';
import { hashPassword } from './passwords.ts';
import { getWorkspace } from './workspaces.ts';

export type Role = UserRow['role'];
export const ROLES: readonly Role[] = ['admin', 'read_only'];

export interface User {
  id: string;
  email: string;
  role: Role;
  disabled: boolean;
  createdAt: string;
  updatedAt: string;
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

export function toUser(row: UserRow): User {
  return {
    id: row.id,
    email: row.email,
    role: row.role,
    disabled: row.disabled_at !== null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function assertRole(role: string): Role {
  if (!(ROLES as readonly string[]).includes(role)) {
    throw new InvalidRequestError(`role must be one of ${ROLES.join(', ')}`, { field: 'role' });
  }
  return role as Role;
}

/** The one password rule, for the CLI and the web alike. */
export const MIN_PASSWORD_LENGTH = 8;

export function assertPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw new InvalidRequestError(`password must be at least ${MIN_PASSWORD_LENGTH} characters`, { field: 'password' });
  }
}

export async function createUser(
  db: Kysely<Database>,
  input: { workspace: string; email: string; role: string; password?: string | null },
  actor: Actor,
): Promise<User> {
  const ws = await getWorkspace(db, input.workspace);
  const email = input.email.trim().toLowerCase();
  if (!EMAIL.test(email)) throw new InvalidRequestError('email is not a valid address', { field: 'email' });
  if (input.password != null) assertPassword(input.password);
  const now = nowIso();
  const row: UserRow = {
    id: newId('usr'),
    workspace_id: ws.id,
    email,
    role: assertRole(input.role),
    password_hash: input.password ? await hashPassword(input.password) : null,
    disabled_at: null,
    created_at: now,
    updated_at: now,
  };
  const existing = await findUserRow(db, ws.id, email);
  if (existing) throw new ConflictError(`User ${email} already exists in workspace ${ws.slug}`);
  await inTransaction(db, async (trx) => {
    await trx.insertInto('users').values(row).execute();
    await recordAudit(trx, { workspaceId: ws.id, actor, action: 'user.created', target: userTarget(row), changes: { role: row.role } });
  });
  return toUser(row);
}

function userTarget(row: UserRow) {
  return { type: 'user', id: row.id, name: row.email };
}

export async function findUserRow(db: Kysely<Database>, workspaceId: string, email: string): Promise<UserRow | undefined> {
  return db
    .selectFrom('users')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('email', '=', email.trim().toLowerCase())
    .executeTakeFirst();
}

export async function getUserRow(db: Kysely<Database>, workspace: string, email: string): Promise<UserRow> {
  const ws = await getWorkspace(db, workspace);
  const row = await findUserRow(db, ws.id, email);
  if (!row) throw new NotFoundError('User not found');
  return row;
}

export async function listUsers(db: Kysely<Database>, workspace: string): Promise<User[]> {
  const ws = await getWorkspace(db, workspace);
  const rows = await db.selectFrom('users').selectAll().where('workspace_id', '=', ws.id).orderBy('email').execute();
  return rows.map(toUser);
}

/** Audited as `user.role_changed` when the role is a different one (setting the same role
 * changes nothing anyone may do). */
export async function setUserRole(db: Kysely<Database>, workspace: string, email: string, role: string, actor: Actor): Promise<User> {
  const row = await getUserRow(db, workspace, email);
  const updated = { role: assertRole(role), updated_at: nowIso() };
  await inTransaction(db, async (trx) => {
    await trx.updateTable('users').set(updated).where('id', '=', row.id).execute();
    if (updated.role === row.role) return;
    await recordAudit(trx, {
      workspaceId: row.workspace_id,
      actor,
      action: 'user.role_changed',
      target: userTarget(row),
      changes: { role: { from: row.role, to: updated.role } },
    });
  });
  return toUser({ ...row, ...updated });
}

/** Audited as `user.disabled` / `user.enabled` when the state actually flips. */
export async function setUserDisabled(
  db: Kysely<Database>,
  workspace: string,
  email: string,
  disabled: boolean,
  actor: Actor,
): Promise<User> {
  const row = await getUserRow(db, workspace, email);
  const now = nowIso();
  const updated = { disabled_at: disabled ? (row.disabled_at ?? now) : null, updated_at: now };
  await inTransaction(db, async (trx) => {
    await trx.updateTable('users').set(updated).where('id', '=', row.id).execute();
    if ((row.disabled_at !== null) === disabled) return;
    await recordAudit(trx, {
      workspaceId: row.workspace_id,
      actor,
      action: disabled ? 'user.disabled' : 'user.enabled',
      target: userTarget(row),
    });
  });
  return toUser({ ...row, ...updated });
}

/**
 * Sets a user's password. Every web session of the user ends except `keepSessionId` (the one
 * that changed it, if any), and any unused "set your password" link dies: whoever knew the old
 * password, or holds an older link, is out from now on.
 */
export async function setUserPassword(
  db: Kysely<Database>,
  workspace: string,
  email: string,
  password: string,
  opts: { keepSessionId?: string } = {},
): Promise<User> {
  assertPassword(password);
  const row = await getUserRow(db, workspace, email);
  const updated = { password_hash: await hashPassword(password), updated_at: nowIso() };
  await db.transaction().execute(async (trx) => {
    await trx.updateTable('users').set(updated).where('id', '=', row.id).execute();
    let sessions = trx.deleteFrom('web_sessions').where('user_id', '=', row.id);
    if (opts.keepSessionId) sessions = sessions.where('id', '!=', opts.keepSessionId);
    await sessions.execute();
    await trx.deleteFrom('password_tokens').where('user_id', '=', row.id).execute();
  });
  return toUser({ ...row, ...updated });
}

/** Deletes a user with their API keys, sessions and password links (the store cascades);
 * their query history stays, under their email. */
export async function deleteUser(db: Kysely<Database>, workspace: string, email: string): Promise<User> {
  const row = await getUserRow(db, workspace, email);
  await db.deleteFrom('users').where('id', '=', row.id).execute();
  return toUser(row);
}
