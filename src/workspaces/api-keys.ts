// API keys: created for a user, shown once, stored only as a SHA-256 hash. Authentication
// reads the key, its user and its workspace in one indexed query, memoised per process for as
// long as the store's change epoch allows (src/store/store.ts): a revocation, demotion or
// disabled user made through this process applies to its very next request, and one made by
// any other process — the CLI included — within a second (docs/deployment.md).
import { timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import { ConflictError, InvalidApiKeyError, InvalidRequestError, NotFoundError } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import type { ApiKeyRow, Database } from '../store/schema.ts';
import type { Memo } from '../store/store.ts';
import { generateKey, hashKey, isWellFormedKey, keyPrefix } from './key-format.ts';
import { getUserRow, type Role } from './users.ts';
import { getWorkspace, type Plan } from './workspaces.ts';
import { effectiveRole, parseStoredScope, type KeyScope } from '../access/scope.ts';
import { cliActor, inTransaction, recordAudit, SYSTEM_ACTOR, type Actor } from '../audit/audit.ts';
import {
  resolveExpiry,
  resolveKeyScope,
  type KeyCeiling,
  type KeyLifetimeRequest,
  type KeyScopeRequest,
} from '../access/key-scope-input.ts';

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  user: { id: string; email: string };
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  /** What the key narrows (src/access/scope.ts); null: all of its user. */
  scope: KeyScope | null;
  expiresAt: string | null;
  /** Not expired, and expires within EXPIRES_SOON_DAYS: time to rotate. */
  expiresSoon: boolean;
  expired: boolean;
}

/** A key expiring within this many days is flagged in the lists (web, CLI, GET /keys). */
const EXPIRES_SOON_DAYS = 14;

/** Who is calling: the result of authentication, passed to every core function.
 * `user.role` is the role the caller acts with — the user's current role narrowed by the key's
 * scope (src/access/scope.ts); `user.accountRole` is the user's own. */
export interface Principal {
  workspace: { id: string; slug: string; plan: Plan };
  user: { id: string; email: string; role: Role; accountRole: Role };
  apiKey: { id: string; name: string; scope: KeyScope | null; expiresAt: string | null } | null;
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
    user: { id: row.userId, email: row.email, role: effectiveRole(row.role, apiKey?.scope ?? null), accountRole: row.role },
    apiKey,
  };
}

// lastUsedAt is informational; writing it on every request would turn each read into a
// store write. Once a minute per key is enough to answer "is this key still in use?".
export const LAST_USED_RESOLUTION_MS = 60_000;

// With look-ups memoised (store.memo) the row may carry a last_used_at older than the last
// write of it (on PostgreSQL that write notifies no other process: migration 0008), so each
// process also remembers when it last wrote a key's last_used_at.
// OAuth grants (src/oauth/grants.ts) share it: their ids are another id space than keys'.
const lastUsedWrites = new Map<string, number>();
export function lastUsedWriteDue(keyId: string, now = Date.now()): boolean {
  if (now - (lastUsedWrites.get(keyId) ?? 0) <= LAST_USED_RESOLUTION_MS) return false;
  if (lastUsedWrites.size >= 10_000) lastUsedWrites.clear();
  lastUsedWrites.set(keyId, now);
  return true;
}

function toApiKey(row: ApiKeyRow, email: string, now = Date.now()): ApiKey {
  const expires = row.expires_at === null ? null : Date.parse(row.expires_at);
  const expired = expires !== null && expires <= now;
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    user: { id: row.user_id, email },
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
    scope: parseStoredScope(row.scope),
    expiresAt: row.expires_at,
    expiresSoon: expires !== null && !expired && expires - now <= EXPIRES_SOON_DAYS * 86_400_000,
    expired,
  };
}

export interface CreateApiKeyInput extends KeyLifetimeRequest {
  workspace: string;
  email: string;
  name: string;
  scope?: KeyScopeRequest;
}

/** Creates a key for a user, at most as wide as the user (and as `ceiling`, the key that asks
 * for it, if one does): see src/access/key-scope-input.ts. `actor` is recorded in the audit
 * log; callers without a request (the CLI, tests' set-up) are the local operator. */
export async function createApiKey(
  db: Kysely<Database>,
  input: CreateApiKeyInput,
  actor: Actor = cliActor(),
  ceiling: KeyCeiling | null = null,
): Promise<{ apiKey: ApiKey; secret: string }> {
  const name = input.name.trim();
  if (!name || name.length > 100) throw new InvalidRequestError('name must be 1-100 characters', { field: 'name' });
  const ws = await db
    .selectFrom('workspaces')
    .select(['id', 'max_key_days'])
    .where('slug', '=', input.workspace.toLowerCase())
    .executeTakeFirst();
  const user = await getUserRow(db, input.workspace, input.email);
  const scope = await resolveKeyScope(db, user, input.scope ?? {}, ceiling);
  const expiresAt = resolveExpiry(input, ws?.max_key_days ?? null, ceiling);
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
    scope: scope ? JSON.stringify(scope) : null,
    expires_at: expiresAt,
    expiry_audited: 0,
  };
  await inTransaction(db, async (trx) => {
    await trx.insertInto('api_keys').values(row).execute();
    await recordAudit(trx, {
      workspaceId: user.workspace_id,
      actor,
      action: 'key.created',
      target: { type: 'key', id: row.id, name },
      changes: { user: user.email, scope, expiresAt },
    });
  });
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

export async function revokeApiKey(db: Kysely<Database>, workspace: string, keyId: string, actor: Actor = cliActor()): Promise<ApiKey> {
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
  if (row.revoked_at !== null) return toApiKey(row, row.email);
  const revokedAt = nowIso();
  await inTransaction(db, async (trx) => {
    await trx.updateTable('api_keys').set({ revoked_at: revokedAt }).where('id', '=', row.id).execute();
    await recordAudit(trx, {
      workspaceId: ws.id,
      actor,
      action: 'key.revoked',
      target: { type: 'key', id: row.id, name: row.name },
      changes: { user: row.email },
    });
  });
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
 * for every reason (malformed, unknown, revoked, user disabled), so callers learn nothing; an
 * expired key adds `details.reason: "expired"`, which only its holder (who knows the expiry)
 * can provoke. */
export async function authenticateKey(db: Kysely<Database>, presented: string | undefined | null, memo?: Memo): Promise<Principal> {
  if (!presented || !isWellFormedKey(presented)) throw new InvalidApiKeyError();
  const hash = hashKey(presented);
  const lookup = () =>
    db
      .selectFrom('api_keys as k')
      .innerJoin('users as u', 'u.id', 'k.user_id')
      .innerJoin('workspaces as w', 'w.id', 'k.workspace_id')
      .select([
        'k.id as keyId',
        'k.name as keyName',
        'k.hash as hash',
        'k.revoked_at as revokedAt',
        'k.last_used_at as lastUsedAt',
        'k.scope as scope',
        'k.expires_at as expiresAt',
        ...PRINCIPAL_COLUMNS,
      ])
      .where('k.hash', '=', hash)
      .executeTakeFirst();
  const row = memo ? await memo(`key:${hash}`, lookup) : await lookup();
  if (!row) throw new InvalidApiKeyError();
  const derived = derivedOf(row);
  // The look-up is by hash, so its timing says nothing about the secret; the constant-time
  // compare guards against a store that matched loosely (collation, trailing spaces).
  if (!timingSafeEqual(derived.hash, Buffer.from(hash))) throw new InvalidApiKeyError();
  if (row.revokedAt !== null || row.disabledAt !== null) throw new InvalidApiKeyError();
  // Checked on every request, after the memo: a cached row must not outlive its key.
  if (derived.expiresAt !== null && derived.expiresAt <= Date.now()) {
    auditExpiry(db, row);
    throw new InvalidApiKeyError({ reason: 'expired' });
  }
  if ((derived.lastUsedAt === null || Date.now() - derived.lastUsedAt > LAST_USED_RESOLUTION_MS) && lastUsedWriteDue(row.keyId)) {
    // Fire and forget: a failed bookkeeping write must not fail the request.
    db.updateTable('api_keys')
      .set({ last_used_at: nowIso() })
      .where('id', '=', row.keyId)
      .execute()
      .catch(() => {});
  }
  return toPrincipal(row, { id: row.keyId, name: row.keyName, scope: derived.scope, expiresAt: row.expiresAt });
}

/** What authentication reads from a key's row in another form: its stored hash as bytes, its
 * times as numbers, its scope parsed. */
interface KeyRowDerived {
  hash: Buffer;
  expiresAt: number | null;
  lastUsedAt: number | null;
  scope: KeyScope | null;
}

/** Worked out once per row object: the memoised row (store.memo) is the same object for every
 * request until the store's change epoch moves, and then it is dropped, and this with it (the
 * map holds nothing of its own: no secret, only the row's stored hash, as the memo does). The
 * scope is frozen because every principal of the row shares it. */
const rowDerived = new WeakMap<object, KeyRowDerived>();

function derivedOf(row: { hash: string; expiresAt: string | null; lastUsedAt: string | null; scope: string | null }): KeyRowDerived {
  let derived = rowDerived.get(row);
  if (derived === undefined) {
    derived = {
      hash: Buffer.from(row.hash),
      expiresAt: row.expiresAt === null ? null : Date.parse(row.expiresAt),
      lastUsedAt: row.lastUsedAt ? Date.parse(row.lastUsedAt) : null,
      scope: frozenScope(parseStoredScope(row.scope)),
    };
    rowDerived.set(row, derived);
  }
  return derived;
}

function frozenScope(scope: KeyScope | null): KeyScope | null {
  if (scope === null) return null;
  for (const value of Object.values(scope)) if (Array.isArray(value)) Object.freeze(value);
  return Object.freeze(scope);
}

/** The first refused request after expiry writes `key.expired`, once: the conditional UPDATE
 * lets exactly one request (of any process) win, and commits with the entry (a failed entry
 * leaves the key unmarked for the next request to try again). Fire and forget — the answer is
 * the same 401 whether or not the bookkeeping lands. */
function auditExpiry(db: Kysely<Database>, row: { keyId: string; keyName: string; workspaceId: string; expiresAt: string | null }): void {
  inTransaction(db, async (trx) => {
    const result = await trx
      .updateTable('api_keys')
      .set({ expiry_audited: 1 })
      .where('id', '=', row.keyId)
      .where('expiry_audited', '=', 0)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows ?? 0) === 0) return;
    await recordAudit(trx, {
      workspaceId: row.workspaceId,
      actor: SYSTEM_ACTOR,
      action: 'key.expired',
      target: { type: 'key', id: row.keyId, name: row.keyName },
      changes: { expiresAt: row.expiresAt },
    });
  }).catch(() => {});
}

/** GET /keys/self: what the presenting key may do, and until when. `effective` is the
 * intersection a program can act on without knowing dbq's rules. */
export async function describeOwnKey(db: Kysely<Database>, principal: Principal) {
  if (!principal.apiKey) throw new NotFoundError('API key not found');
  const row = await db.selectFrom('api_keys').select(['prefix']).where('id', '=', principal.apiKey.id).executeTakeFirst();
  const scope = principal.apiKey.scope;
  return {
    apiKey: {
      id: principal.apiKey.id,
      name: principal.apiKey.name,
      prefix: row?.prefix ?? '',
      scope,
      expiresAt: principal.apiKey.expiresAt,
      user: { id: principal.user.id, email: principal.user.email, role: principal.user.accountRole },
    },
    effective: {
      readOnly: principal.user.role !== 'admin',
      rawSql: !scope?.toolsOnly,
      connections: scope?.connections ?? null,
      tools: scope?.tools ?? null,
    },
  };
}
