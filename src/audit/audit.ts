// The audit log: every change of who may do what, appended by the core function that made
// the change, whichever front door called it. Append-only: nothing updates or deletes an
// entry except retention (DBQ_AUDIT_DAYS). `changes` never holds a secret: callers pass
// field names and non-secret values only.
import os from 'node:os';
import type { Kysely, Transaction } from 'kysely';
import { newId, nowIso } from '../ids.ts';
import type { AuditRow, Database } from '../store/schema.ts';

export const AUDIT_ACTIONS = [
  'key.created',
  'key.revoked',
  'key.expired',
  'user.created',
  'user.role_changed',
  'user.disabled',
  'user.enabled',
  'connection.created',
  'connection.updated',
  'connection.deleted',
  'connection.grants_changed',
  'connection.annotations_changed',
  'tool.created',
  'tool.updated',
  'tool.deleted',
  'workspace.plan_changed',
  'workspace.settings_changed',
  'session.signed_in',
  'session.sign_in_failed',
  'sso.configured',
  'setup.used',
  'oauth.client_registered',
  'oauth.authorized',
  'oauth.revoked',
  'oauth.refresh_reuse_detected',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export type AuditSource = AuditRow['source'];

/** Who made a change, and through which door. */
export interface Actor {
  userId: string | null;
  email: string | null;
  keyId: string | null;
  ip: string | null;
  source: AuditSource;
}

/** The caller of an API or web request. */
export function actorOf(
  principal: { user: { id: string; email: string }; apiKey: { id: string } | null },
  ip: string | null,
  source: AuditSource,
): Actor {
  return { userId: principal.user.id, email: principal.user.email, keyId: principal.apiKey?.id ?? null, ip, source };
}

/** The CLI runs as whoever can read the data dir: recorded as the local OS account. */
export function cliActor(): Actor {
  let name = 'operator';
  try {
    name = os.userInfo().username || name;
  } catch {
    // no passwd entry (some containers): the generic name
  }
  return { userId: null, email: `local:${name}`, keyId: null, ip: null, source: 'cli' };
}

/** An entry written by dbq itself (a key found expired at authentication). */
export const SYSTEM_ACTOR: Actor = { userId: null, email: 'dbq', keyId: null, ip: null, source: 'api' };

export interface AuditEvent {
  workspaceId: string;
  actor: Actor;
  action: AuditAction;
  target: { type: string; id?: string | null; name?: string | null };
  changes?: Record<string, unknown> | null;
}

/** Runs `fn` in a transaction, or inside the caller's when `db` already is one (Kysely has no
 * nested transactions): a change and its audit entry are committed together or not at all. */
export function inTransaction<T>(db: Kysely<Database>, fn: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  // isTransaction is true only on the Transaction Kysely hands to a transaction's callback.
  return db.isTransaction ? fn(db as Transaction<Database>) : db.transaction().execute(fn);
}

/** Appends an entry in the transaction of the change it records (inTransaction, or the
 * caller's own `db.transaction()`): a `Transaction`, never a plain `Kysely`, so an entry
 * written beside its change instead of with it does not compile. An event that changes
 * nothing else (a failed sign-in) is its own transaction. */
export async function recordAudit(trx: Transaction<Database>, e: AuditEvent): Promise<void> {
  const row: AuditRow = {
    id: newId('aud'),
    workspace_id: e.workspaceId,
    action: e.action,
    actor_user_id: e.actor.userId,
    actor_email: e.actor.email,
    actor_key_id: e.actor.keyId,
    target_type: e.target.type,
    target_id: e.target.id ?? null,
    target_name: e.target.name ?? null,
    changes: e.changes ? JSON.stringify(e.changes) : null,
    ip: e.actor.ip,
    source: e.actor.source,
    created_at: nowIso(),
  };
  await trx.insertInto('audit_log').values(row).execute();
}
