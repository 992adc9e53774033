// API keys: created for a user, shown once, stored only as a SHA-256 hash. Authentication
// reads the key, its user and its workspace in one indexed query on every request (no cache),
// so a revocation, demotion or disabled user made by any process — the CLI included — applies
// to the very next request.
import { timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import { ConflictError, InvalidApiKeyError, InvalidRequestError, NotFoundError } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import type { ApiKeyRow, Database } from '../store/schema.ts';
import type { Memo } from '../store/store.ts';
import { generateKey, hashKey, isWellFormedKey, keyPrefix } from './key-format.ts';
import { getUserRow, type Role } from './users.ts';
import { getWorkspace, type Plan } from './workspaces.ts';

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  user: { id: string; email: string };
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

/** Who is calling: the result of authentication, passed to every core function. */
export interface Principal {
  workspace: { id: string; slug: string; plan: Plan };
  user: { id: string; email: string; role: Role };
  apiKey: { id: string; name: string } | null;
}

/** The user and workspace columns every credential look-up (API key, web session) joins in as
 * `u` and `w`; toPrincipal turns them into the caller. */
export const PRINCIPAL_COLUMNS = [
  'u.id as userId',
  'u.email as email',
  'u.role as role',
  'u.disabled_at as disabledAt',
  'w.id as workspaceId',
  'w.slug as slug',
  'w.plan as plan',
] as const;

export function toPrincipal(
  row: { workspaceId: string; slug: string; plan: Plan; userId: string; email: string; role: Role },
  apiKey: Principal['apiKey'],
): Principal {
  return {
    workspace: { id: row.workspaceId, slug: row.slug, plan: row.plan },
    user: { id: row.userId, email: row.email, role: row.role },
    apiKey,
  };
}

// lastUsedAt is informational; writing it on every request would turn each read into a
// store write. Once a minute per key is enough to answer "is this key still in use?".
const LAST_USED_RESOLUTION_MS = 60_000;

function toApiKey(row: ApiKeyRow, email: string): ApiKey {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    user: { id: row.user_id, email },
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
  };
}

export async function createApiKey(
  db: Kysely<Database>,
  input: { workspace: string; email: string; name: string },
): Promise<{ apiKey: ApiKey; secret: string }> {
  const name = input.name.trim();
  if (!name || name.length > 100) throw new InvalidRequestError('name must be 1-100 characters', { field: 'name' });
  const user = await getUserRow(db, input.workspace, input.email);
  const secret = generateKey();
  const row: ApiKeyRow = {
    id: newId('key'),
    workspace_id: user.workspace_id,
    user_id: user.id,
    name,
    prefix: keyPrefix(secret),
    hash: hashKey(secret),
    created_at: nowIso(),
    last_used_at: null,
    revoked_at: null,
  };
  await db.insertInto('api_keys').values(row).execute();
  return { apiKey: toApiKey(row, user.email), secret };
}

export async function listApiKeys(db: Kysely<Database>, workspace: string, userId?: string): Promise<ApiKey[]> {
  const ws = await getWorkspace(db, workspace);
  let q = db
    .selectFrom('api_keys')
    .innerJoin('users', 'users.id', 'api_keys.user_id')
    .selectAll('api_keys')
    .select('users.email as email')
    .where('api_keys.workspace_id', '=', ws.id);
  if (userId) q = q.where('api_keys.user_id', '=', userId);
  const rows = await q.orderBy('api_keys.created_at', 'desc').orderBy('api_keys.id', 'desc').execute();
  return rows.map((r) => toApiKey(r, r.email));
}

export async function revokeApiKey(db: Kysely<Database>, workspace: string, keyId: string): Promise<ApiKey> {
  const ws = await getWorkspace(db, workspace);
  const row = await db
    .selectFrom('api_keys')
    .innerJoin('users', 'users.id', 'api_keys.user_id')
    .selectAll('api_keys')
    .select('users.email as email')
    .where('api_keys.workspace_id', '=', ws.id)
    .where('api_keys.id', '=', keyId)
    .executeTakeFirst();
  if (!row) throw new NotFoundError('API key not found');
  const revokedAt = row.revoked_at ?? nowIso();
  await db.updateTable('api_keys').set({ revoked_at: revokedAt }).where('id', '=', row.id).execute();
  return toApiKey({ ...row, revoked_at: revokedAt }, row.email);
}

/** Removes a revoked key from the lists by deleting its row. Only revoked keys: a live key must
 * be revoked first, so removal never doubles as a silent revocation. Query history keeps the
 * key's id and name (copied into each entry), so the audit trail does not depend on the row;
 * a deleted key's secret fails authentication as unknown, the same error as revoked. */
export async function deleteRevokedApiKey(db: Kysely<Database>, workspace: string, keyId: string): Promise<void> {
  const ws = await getWorkspace(db, workspace);
  const row = await db
    .selectFrom('api_keys')
    .select(['id', 'revoked_at'])
    .where('workspace_id', '=', ws.id)
    .where('id', '=', keyId)
    .executeTakeFirst();
  if (!row) throw new NotFoundError('API key not found');
  if (row.revoked_at === null) throw new ConflictError('Revoke the API key before removing it', { id: keyId });
  await db.deleteFrom('api_keys').where('id', '=', row.id).where('revoked_at', 'is not', null).execute();
}

/** Resolves a presented key to its principal, or throws InvalidApiKeyError — the same error
 * for every reason (malformed, unknown, revoked, user disabled), so callers learn nothing. */
export async function authenticateKey(db: Kysely<Database>, presented: string | undefined | null, memo?: Memo): Promise<Principal> {
  if (!presented || !isWellFormedKey(presented)) throw new InvalidApiKeyError();
  const hash = hashKey(presented);
  const lookup = () => db
    .selectFrom('api_keys as k')
    .innerJoin('users as u', 'u.id', 'k.user_id')
    .innerJoin('workspaces as w', 'w.id', 'k.workspace_id')
    .select([
      'k.id as keyId',
      'k.name as keyName',
      'k.hash as hash',
      'k.revoked_at as revokedAt',
      'k.last_used_at as lastUsedAt',
      ...PRINCIPAL_COLUMNS,
    ])
    .where('k.hash', '=', hash)
    .executeTakeFirst();
  const row = memo ? await memo(`key:${hash}`, lookup) : await lookup();
  // The look-up is by hash, so its timing says nothing about the secret; the constant-time
  // compare guards against a store that matched loosely (collation, trailing spaces).
  if (!row || !timingSafeEqual(Buffer.from(row.hash), Buffer.from(hash))) throw new InvalidApiKeyError();
  if (row.revokedAt !== null || row.disabledAt !== null) throw new InvalidApiKeyError();
  if (!row.lastUsedAt || Date.now() - Date.parse(row.lastUsedAt) > LAST_USED_RESOLUTION_MS) {
    // Fire and forget: a failed bookkeeping write must not fail the request.
    db.updateTable('api_keys').set({ last_used_at: nowIso() }).where('id', '=', row.keyId).execute().catch(() => {});
  }
  return toPrincipal(row, { id: row.keyId, name: row.keyName });
}
