// Server-side web sessions. The cookie carries 256 random bits; the store keeps only their
// SHA-256, so a leaked store dump (or backup) cannot be replayed as a cookie. Every request
// re-reads the session with its user and workspace (no cache), the same rule as API keys: a
// disabled user loses the session at the next request, a demoted one is read-only at once.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import { newId, nowIso } from '../ids.ts';
import type { Database } from '../store/schema.ts';
import { PRINCIPAL_COLUMNS, toPrincipal, type Principal } from '../workspaces/api-keys.ts';

/** Idle expiry: each request (at most once a minute) pushes expiry this far ahead. */
const SESSION_IDLE_MS = 12 * 3_600_000;
/** Absolute cap: a stolen cookie kept alive by polling still dies after this. */
const SESSION_MAX_MS = 7 * 86_400_000;
// Sliding the expiry writes to the store; once a minute per session is precise enough.
const TOUCH_RESOLUTION_MS = 60_000;

const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export interface WebSession {
  id: string;
  /** The raw cookie token (kept in memory only for CSRF derivation and cookie refresh). */
  token: string;
  expiresAt: string;
  /** True when this request slid the expiry (the cookie's Max-Age should be refreshed). */
  refreshed: boolean;
}

function hashSessionToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** The CSRF token of a session: an HMAC keyed by the session token. The page reads it from
 * /ui/api/session (same-origin only) and sends it back in X-CSRF-Token; a cross-site page can
 * make the browser send the cookie but can never read this value. It is not derivable from
 * the stored hash. */
export function csrfTokenFor(sessionToken: string): string {
  return createHmac('sha256', sessionToken).update('dbq-csrf-v1').digest('base64url');
}

export function csrfTokenMatches(sessionToken: string, presented: string | undefined): boolean {
  if (!presented) return false;
  const expected = Buffer.from(csrfTokenFor(sessionToken));
  const given = Buffer.from(presented);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export async function createSession(db: Kysely<Database>, input: { workspaceId: string; userId: string }): Promise<WebSession> {
  const token = randomBytes(32).toString('base64url');
  const now = Date.now();
  const expiresAt = new Date(now + SESSION_IDLE_MS).toISOString();
  const id = newId('ses');
  await db
    .insertInto('web_sessions')
    .values({
      id,
      workspace_id: input.workspaceId,
      user_id: input.userId,
      token_hash: hashSessionToken(token),
      created_at: new Date(now).toISOString(),
      last_seen_at: new Date(now).toISOString(),
      expires_at: expiresAt,
    })
    .execute();
  // Expired rows are swept here rather than by a timer: sign-ins are rare and cheap to piggyback.
  await db.deleteFrom('web_sessions').where('expires_at', '<', nowIso()).execute();
  return { id, token, expiresAt, refreshed: false };
}

/**
 * Resolves a cookie token to a principal (apiKey: null) for the workspace `slug`, or null when
 * the token is malformed, unknown, expired, belongs to another workspace, or its user is
 * disabled. A disabled user's session is deleted, so re-enabling the user does not revive it.
 */
export async function resolveSession(
  db: Kysely<Database>,
  slug: string,
  token: string,
): Promise<{ principal: Principal; session: WebSession } | null> {
  if (!TOKEN.test(token)) return null;
  const hash = hashSessionToken(token);
  const row = await db
    .selectFrom('web_sessions as s')
    .innerJoin('users as u', 'u.id', 's.user_id')
    .innerJoin('workspaces as w', 'w.id', 's.workspace_id')
    .select([
      's.id as id',
      's.token_hash as hash',
      's.created_at as createdAt',
      's.last_seen_at as lastSeenAt',
      's.expires_at as expiresAt',
      ...PRINCIPAL_COLUMNS,
    ])
    .where('s.token_hash', '=', hash)
    .executeTakeFirst();
  if (!row || !timingSafeEqual(Buffer.from(row.hash), Buffer.from(hash))) return null;
  if (row.slug !== slug) return null;
  const now = Date.now();
  if (row.disabledAt !== null || Date.parse(row.expiresAt) <= now) {
    await db.deleteFrom('web_sessions').where('id', '=', row.id).execute();
    return null;
  }
  let expiresAt = row.expiresAt;
  let refreshed = false;
  if (now - Date.parse(row.lastSeenAt) > TOUCH_RESOLUTION_MS) {
    const cap = Date.parse(row.createdAt) + SESSION_MAX_MS;
    expiresAt = new Date(Math.min(now + SESSION_IDLE_MS, cap)).toISOString();
    refreshed = true;
    await db
      .updateTable('web_sessions')
      .set({ last_seen_at: new Date(now).toISOString(), expires_at: expiresAt })
      .where('id', '=', row.id)
      .execute();
  }
  return {
    principal: toPrincipal(row, null),
    session: { id: row.id, token, expiresAt, refreshed },
  };
}

export async function deleteSession(db: Kysely<Database>, sessionId: string): Promise<void> {
  await db.deleteFrom('web_sessions').where('id', '=', sessionId).execute();
}

/** Signs a user out everywhere (used when an admin disables the user from the web app; a
 * disable made elsewhere, e.g. the CLI, is caught by resolveSession's per-request check). */
export async function deleteUserSessions(db: Kysely<Database>, userId: string): Promise<number> {
  const result = await db.deleteFrom('web_sessions').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows ?? 0);
}
