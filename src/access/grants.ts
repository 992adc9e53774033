// Connection grants: which users may use a connection. Everyone (the default, v1's behaviour)
// or a list of users; admins always may. A connection the caller may not use does not exist
// for them — 404 and absent from lists, never a 403 that would confirm it — while a connection
// the user may use but the key's scope leaves out is a 403 naming the scope.
import type { Kysely, Transaction } from 'kysely';
import { ConflictError, ConnectionNotFoundError, InvalidRequestError } from '../errors.ts';
import { nowIso } from '../ids.ts';
import { inTransaction, recordAudit, type Actor } from '../audit/audit.ts';
import { getConnectionRow, toRecord, type ConnectionRecord, type StoredConnectionRow } from '../connections/connections.ts';
import type { ConnectionRow, Database } from '../store/schema.ts';
import type { Memo } from '../store/store.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { assertAdmin, assertKeyAllowsConnection, keyAllowsConnection } from './scope.ts';

interface Deps {
  db: Kysely<Database>;
  store?: { memo: Memo; epoch(): string | null };
  /** Services.toolChanges: tools follow their connection's grants. */
  toolChanges?: { announce(workspaceId: string): void };
}

/** Whether the principal's user (not its key) may use the connection. */
export async function userMayUse(
  deps: Deps,
  principal: { user: Pick<Principal['user'], 'id' | 'accountRole'> },
  row: Pick<ConnectionRow, 'id' | 'grants_everyone'>,
): Promise<boolean> {
  if (principal.user.accountRole === 'admin' || row.grants_everyone === 1) return true;
  const lookup = async () =>
    (await deps.db
      .selectFrom('connection_grants')
      .select('user_id')
      .where('connection_id', '=', row.id)
      .where('user_id', '=', principal.user.id)
      .executeTakeFirst()) !== undefined;
  return deps.store ? deps.store.memo(`grant:${row.id}:${principal.user.id}`, lookup) : lookup();
}

/** The one way a front door turns a caller's connection id or name into a connection: 404
 * when the user may not use it, 403 when the key's scope leaves it out. */
export async function getConnectionFor(deps: Deps, principal: Principal, idOrName: string): Promise<StoredConnectionRow> {
  const row = await getConnectionRow(deps.db, principal.workspace.id, idOrName, deps.store?.memo);
  if (!(await userMayUse(deps, principal, row))) throw new ConnectionNotFoundError();
  assertKeyAllowsConnection(principal, row);
  return row;
}

/** The connections the caller may use, and its key may see, sorted by name. */
export async function listConnectionsFor(deps: Deps, principal: Principal): Promise<ConnectionRecord[]> {
  const rows = await deps.db
    .selectFrom('connections')
    .selectAll()
    .where('workspace_id', '=', principal.workspace.id)
    .orderBy('name')
    .execute();
  let granted = new Set<string>();
  if (principal.user.accountRole !== 'admin' && rows.some((r) => r.grants_everyone !== 1)) {
    const grants = await deps.db.selectFrom('connection_grants').select('connection_id').where('user_id', '=', principal.user.id).execute();
    granted = new Set(grants.map((g) => g.connection_id));
  }
  const visible = (r: ConnectionRow) => principal.user.accountRole === 'admin' || r.grants_everyone === 1 || granted.has(r.id);
  return rows.filter((r) => visible(r) && keyAllowsConnection(principal, r.id)).map(toRecord);
}

/** Who may use a connection: everyone, or the listed users (admins always may). */
export type Grants = { everyone: true } | { everyone: false; users: { id: string; email: string }[] };

export interface GrantsInput {
  everyone: boolean;
  /** User ids or emails; with `everyone: true` ignored. */
  users?: string[];
}

/** The grants of a connection, by workspace: the CLI's door (no principal); the API's goes
 * through getGrants/setGrants, which ask for an admin first. */
export async function readGrants(
  db: Kysely<Database>,
  workspaceId: string,
  idOrName: string,
): Promise<{ connection: StoredConnectionRow; grants: Grants }> {
  const connection = await getConnectionRow(db, workspaceId, idOrName);
  return { connection, grants: await grantsOf(db, connection) };
}

async function grantsOf(db: Kysely<Database>, connection: ConnectionRow): Promise<Grants> {
  if (connection.grants_everyone === 1) return { everyone: true };
  const users = await db
    .selectFrom('connection_grants as g')
    .innerJoin('users as u', 'u.id', 'g.user_id')
    .select(['u.id as id', 'u.email as email'])
    .where('g.connection_id', '=', connection.id)
    .orderBy('u.email')
    .execute();
  return { everyone: false, users };
}

async function resolveUsers(db: Kysely<Database>, workspaceId: string, entries: string[]): Promise<{ id: string; email: string }[]> {
  const found: { id: string; email: string }[] = [];
  for (const entry of entries) {
    const key = entry.trim();
    const row = await db
      .selectFrom('users')
      .select(['id', 'email'])
      .where('workspace_id', '=', workspaceId)
      .where((eb) => eb.or([eb('id', '=', key), eb('email', '=', key.toLowerCase())]))
      .executeTakeFirst();
    if (!row) throw new InvalidRequestError(`users: unknown user "${entry}"`, { field: 'users', user: entry });
    if (!found.some((u) => u.id === row.id)) found.push(row);
  }
  return found;
}

function summary(g: Grants): { everyone: boolean; users?: string[] } {
  return g.everyone ? { everyone: true } : { everyone: false, users: g.users.map((u) => u.email) };
}

/**
 * One change of a connection's grants, read and written in one transaction: `decide` gets the
 * grants as they are and returns the new ones. The transaction's first statement locks the
 * connection's row (a no-op UPDATE: PostgreSQL holds the row lock, SQLite the write lock, until
 * commit), so two changes of the same connection — a grant and a revoke from two admins, or the
 * CLI beside a server — run one after the other and each reads what the other wrote, instead of
 * both reading the old list and the later write dropping the earlier one's user.
 */
async function changeGrants(
  db: Kysely<Database>,
  workspaceId: string,
  idOrName: string,
  actor: Actor,
  decide: (before: Grants, trx: Transaction<Database>) => Promise<GrantsInput> | GrantsInput,
): Promise<Grants> {
  return inTransaction(db, async (trx) => {
    await trx
      .updateTable('connections')
      .set((eb) => ({ grants_everyone: eb.ref('grants_everyone') }))
      .where('workspace_id', '=', workspaceId)
      .where(idOrName.startsWith('conn_') ? 'id' : 'name', '=', idOrName)
      .execute();
    const { connection, grants: before } = await readGrants(trx, workspaceId, idOrName);
    const input = await decide(before, trx);
    const users = input.everyone ? [] : await resolveUsers(trx, workspaceId, input.users ?? []);
    await trx
      .updateTable('connections')
      .set({ grants_everyone: input.everyone ? 1 : 0 })
      .where('id', '=', connection.id)
      .execute();
    await trx.deleteFrom('connection_grants').where('connection_id', '=', connection.id).execute();
    if (users.length) {
      const createdAt = nowIso();
      await trx
        .insertInto('connection_grants')
        .values(users.map((u) => ({ connection_id: connection.id, user_id: u.id, workspace_id: workspaceId, created_at: createdAt })))
        .execute();
    }
    const after: Grants = input.everyone
      ? { everyone: true }
      : { everyone: false, users: [...users].sort((a, b) => a.email.localeCompare(b.email)) };
    await recordAudit(trx, {
      workspaceId,
      actor,
      action: 'connection.grants_changed',
      target: { type: 'connection', id: connection.id, name: connection.name },
      changes: { from: summary(before), to: summary(after) },
    });
    return after;
  });
}

export function writeGrants(
  db: Kysely<Database>,
  workspaceId: string,
  idOrName: string,
  input: GrantsInput,
  actor: Actor,
): Promise<Grants> {
  return changeGrants(db, workspaceId, idOrName, actor, () => input);
}

/** Adds one user. A connection open to everyone becomes restricted to its granted users (the
 * admins always keep it): granting is how an admin starts choosing. */
export function grantUser(db: Kysely<Database>, workspaceId: string, idOrName: string, user: string, actor: Actor): Promise<Grants> {
  return changeGrants(db, workspaceId, idOrName, actor, (grants) => {
    const current = grants.everyone ? [] : grants.users.map((u) => u.id);
    return { everyone: false, users: [...current, user] };
  });
}

/** Removes one user from a restricted connection; on one open to everyone there is nobody to
 * remove — set chosen users first. */
export function revokeUser(db: Kysely<Database>, workspaceId: string, idOrName: string, user: string, actor: Actor): Promise<Grants> {
  return changeGrants(db, workspaceId, idOrName, actor, async (grants, trx) => {
    if (grants.everyone) throw new ConflictError('The connection is open to everyone: grant it to chosen users first', { field: 'user' });
    const [target] = await resolveUsers(trx, workspaceId, [user]);
    return { everyone: false, users: grants.users.filter((u) => u.id !== target.id).map((u) => u.id) };
  });
}

export async function getGrants(deps: Deps, principal: Principal, idOrName: string): Promise<Grants> {
  assertAdmin(principal);
  await getConnectionFor(deps, principal, idOrName);
  return (await readGrants(deps.db, principal.workspace.id, idOrName)).grants;
}

export async function setGrants(deps: Deps, principal: Principal, idOrName: string, input: GrantsInput, actor: Actor): Promise<Grants> {
  assertAdmin(principal);
  await getConnectionFor(deps, principal, idOrName);
  const grants = await writeGrants(deps.db, principal.workspace.id, idOrName, input, actor);
  // Tools follow their connection's grants: open MCP sessions re-check their lists now.
  deps.toolChanges?.announce(principal.workspace.id);
  return grants;
}
