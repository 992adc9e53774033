// dbq's side of an OAuth grant: a user allowed a client a scoped key's scope (src/access/scope.ts)
// on one resource of the workspace, until a date. An access token resolves to a Principal the
// way an API key does — the user's *current* role narrowed by that scope — so the guard, the
// connection grants and every door's checks apply unchanged; a demoted user's tokens narrow at
// their next use and a disabled user's stop. Look-ups are memoised under the store's change
// epoch like keys (src/workspaces/api-keys.ts), so a revocation made by any process is seen by
// every other within the epoch's bound (about a second).
import type { Kysely } from 'kysely';
import { InvalidApiKeyError, NotFoundError } from '../errors.ts';
import { nowIso } from '../ids.ts';
import { inTransaction, recordAudit, type Actor } from '../audit/audit.ts';
import { parseStoredScope, type KeyScope } from '../access/scope.ts';
import type { Database } from '../store/schema.ts';
import type { Memo } from '../store/store.ts';
import { LAST_USED_RESOLUTION_MS, lastUsedWriteDue, PRINCIPAL_COLUMNS, toPrincipal, type Principal } from '../workspaces/api-keys.ts';
import { artifactKey } from './adapter.ts';
import { asStoreTransaction, oauthDb, type OAuthGrantRow } from './tables.ts';
import type { ResourceKind } from './urls.ts';

export interface OAuthGrant {
  id: string;
  client: { id: string; name: string; redirectHost: string };
  user: { id: string; email: string };
  resource: string;
  scope: KeyScope | null;
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string;
  revokedAt: string | null;
}

function toGrant(row: OAuthGrantRow, email: string): OAuthGrant {
  return {
    id: row.id,
    client: { id: row.client_id, name: row.client_name, redirectHost: row.redirect_host },
    user: { id: row.user_id, email },
    resource: row.resource,
    scope: parseStoredScope(row.scope),
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
  };
}

/** Records the grant the consent page allowed, with `oauth.authorized` in the same transaction. */
export async function recordGrant(db: Kysely<Database>, row: OAuthGrantRow, actor: Actor): Promise<void> {
  await inTransaction(db, async (trx) => {
    await oauthDb(trx).insertInto('oauth_grants').values(row).execute();
    await recordAudit(trx, {
      workspaceId: row.workspace_id,
      actor,
      action: 'oauth.authorized',
      target: { type: 'oauth_grant', id: row.id, name: row.client_name },
      changes: { client: row.client_id, resource: row.resource, scope: parseStoredScope(row.scope), expiresAt: row.expires_at },
    });
  });
}

/** Live grants (not revoked, not expired), newest first: the user's own, or all with `userId` null. */
export async function listGrants(db: Kysely<Database>, workspaceId: string, userId: string | null): Promise<OAuthGrant[]> {
  let q = oauthDb(db)
    .selectFrom('oauth_grants as g')
    .innerJoin('users as u', 'u.id', 'g.user_id')
    .selectAll('g')
    .select('u.email as email')
    .where('g.workspace_id', '=', workspaceId)
    .where('g.revoked_at', 'is', null)
    .where('g.expires_at', '>', nowIso());
  if (userId) q = q.where('g.user_id', '=', userId);
  const rows = await q.orderBy('g.created_at', 'desc').orderBy('g.id', 'desc').execute();
  return rows.map((r) => toGrant(r, r.email));
}

/** GET /oauth/grants's item: the fields API.md fixes. */
export function grantView(g: OAuthGrant) {
  return {
    id: g.id,
    client: g.client,
    user: g.user,
    resource: g.resource,
    scope: g.scope,
    createdAt: g.createdAt,
    lastUsedAt: g.lastUsedAt,
    expiresAt: g.expiresAt,
  };
}

/** Revokes a grant and deletes its tokens. Only its user or an admin (acting with an admin
 * principal) may; anyone else gets the 404 of a grant that does not exist. */
export async function revokeGrant(db: Kysely<Database>, principal: Principal, grantId: string, actor: Actor): Promise<OAuthGrant> {
  const row = await oauthDb(db)
    .selectFrom('oauth_grants as g')
    .innerJoin('users as u', 'u.id', 'g.user_id')
    .selectAll('g')
    .select('u.email as email')
    .where('g.workspace_id', '=', principal.workspace.id)
    .where('g.id', '=', grantId)
    .executeTakeFirst();
  if (!row || (row.user_id !== principal.user.id && principal.user.role !== 'admin')) throw new NotFoundError('OAuth grant not found');
  if (row.revoked_at !== null) return toGrant(row, row.email);
  const revokedAt = await endGrant(db, row, actor, 'oauth.revoked', { reason: 'revoked' });
  return toGrant({ ...row, revoked_at: revokedAt ?? row.revoked_at }, row.email);
}

/** Marks the grant revoked and deletes every artifact of it (tokens, codes, oidc-provider's
 * Grant), with the audit entry, in one transaction. Null when it was already revoked. */
export async function endGrant(
  db: Kysely<Database>,
  row: Pick<OAuthGrantRow, 'id' | 'workspace_id' | 'client_name' | 'client_id'>,
  actor: Actor,
  action: 'oauth.revoked' | 'oauth.refresh_reuse_detected',
  changes: Record<string, unknown>,
): Promise<string | null> {
  const revokedAt = nowIso();
  return inTransaction(db, async (trx) => {
    const o = oauthDb(trx as unknown as Kysely<Database>);
    const updated = await o
      .updateTable('oauth_grants')
      .set({ revoked_at: revokedAt })
      .where('id', '=', row.id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    await o.deleteFrom('oauth_artifacts').where('workspace_id', '=', row.workspace_id).where('grant_id', '=', row.id).execute();
    if (Number(updated.numUpdatedRows ?? 0) === 0) return null;
    await recordAudit(asStoreTransaction(trx as never), {
      workspaceId: row.workspace_id,
      actor,
      action,
      target: { type: 'oauth_grant', id: row.id, name: row.client_name },
      changes: { client: row.client_id, ...changes },
    });
    return revokedAt;
  });
}

/** Ends a grant by id from inside the authorization server (refresh-token reuse, code reuse). */
export async function endGrantById(
  db: Kysely<Database>,
  workspaceId: string,
  grantId: string,
  actor: Actor,
  action: 'oauth.revoked' | 'oauth.refresh_reuse_detected',
  changes: Record<string, unknown>,
): Promise<void> {
  const row = await oauthDb(db)
    .selectFrom('oauth_grants')
    .select(['id', 'workspace_id', 'client_name', 'client_id'])
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', grantId)
    .executeTakeFirst();
  if (row) await endGrant(db, row, actor, action, changes);
}

/** Whether the grant may still mint tokens: live, not expired, its user enabled. */
export async function grantUsable(db: Kysely<Database>, workspaceId: string, grantId: string, userId: string): Promise<boolean> {
  const row = await oauthDb(db)
    .selectFrom('oauth_grants as g')
    .innerJoin('users as u', 'u.id', 'g.user_id')
    .select(['g.revoked_at as revokedAt', 'g.expires_at as expiresAt', 'u.disabled_at as disabledAt'])
    .where('g.workspace_id', '=', workspaceId)
    .where('g.id', '=', grantId)
    .where('g.user_id', '=', userId)
    .executeTakeFirst();
  return !!row && row.revokedAt === null && row.disabledAt === null && Date.parse(row.expiresAt) > Date.now();
}

/** Opaque access tokens of oidc-provider: 43 base64url characters (256 bits). */
const ACCESS_TOKEN = /^[A-Za-z0-9_-]{43}$/;

export function looksLikeAccessToken(presented: string): boolean {
  return ACCESS_TOKEN.test(presented);
}

/** Resolves an access token to its principal for one resource of the dbq door, or throws
 * InvalidApiKeyError (the same 401 for every reason: unknown, expired, revoked, another
 * resource, user disabled). */
export async function authenticateAccessToken(db: Kysely<Database>, token: string, kind: ResourceKind, memo?: Memo): Promise<Principal> {
  if (!looksLikeAccessToken(token)) throw new InvalidApiKeyError();
  const id = artifactKey(token);
  const lookup = () =>
    oauthDb(db)
      .selectFrom('oauth_artifacts as a')
      .innerJoin('oauth_grants as g', (j) => j.onRef('g.id', '=', 'a.grant_id').onRef('g.workspace_id', '=', 'a.workspace_id'))
      .innerJoin('users as u', 'u.id', 'g.user_id')
      .innerJoin('workspaces as w', 'w.id', 'g.workspace_id')
      .select([
        'a.payload as payload',
        'a.expires_at as tokenExpiresAt',
        'g.id as grantId',
        'g.client_name as clientName',
        'g.resource_kind as resourceKind',
        'g.scope as scope',
        'g.expires_at as grantExpiresAt',
        'g.revoked_at as revokedAt',
        'g.last_used_at as lastUsedAt',
        ...PRINCIPAL_COLUMNS,
      ])
      .where('a.kind', '=', 'AccessToken')
      .where('a.id', '=', id)
      .executeTakeFirst();
  const row = memo ? await memo(`oauth:${id}`, lookup) : await lookup();
  if (!row || row.revokedAt !== null || row.disabledAt !== null) throw new InvalidApiKeyError();
  const now = Date.now();
  // Checked on every request, after the memo: a cached row must not outlive its token.
  if (row.tokenExpiresAt !== null && Number(row.tokenExpiresAt) <= now) throw new InvalidApiKeyError();
  if (Date.parse(row.grantExpiresAt) <= now) throw new InvalidApiKeyError();
  if (row.resourceKind !== kind) throw new InvalidApiKeyError();
  // The token names its audience too (RFC 8707); it must be the grant's resource.
  const aud = (JSON.parse(row.payload) as { aud?: string }).aud;
  if (typeof aud !== 'string' || !aud.endsWith(`/${kind}`)) throw new InvalidApiKeyError();
  if ((row.lastUsedAt === null || now - Date.parse(row.lastUsedAt) > LAST_USED_RESOLUTION_MS) && lastUsedWriteDue(row.grantId, now)) {
    oauthDb(db)
      .updateTable('oauth_grants')
      .set({ last_used_at: nowIso() })
      .where('id', '=', row.grantId)
      .execute()
      .catch(() => {});
  }
  return toPrincipal(row, {
    id: row.grantId,
    name: `OAuth: ${row.clientName}`,
    scope: parseStoredScope(row.scope),
    expiresAt: row.grantExpiresAt,
  });
}
