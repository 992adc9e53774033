// Reading the audit log (admins only) and its retention. Entry ids are time-ordered
// (src/ids.ts), so, as with query history, "newest first" is `ORDER BY id DESC` and the
// cursor is the last id seen: entries appended while an admin pages land above the cursor and
// neither shift a page nor come back. Nothing here updates or deletes an entry, except
// retention, which only ever removes entries older than DBQ_AUDIT_DAYS.
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { InvalidRequestError } from '../errors.ts';
import { queryInteger } from '../history/history.ts';
import { firstIdAt } from '../ids.ts';
import type { AuditRow, Database } from '../store/schema.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { AUDIT_ACTIONS, type AuditAction, type AuditSource } from './audit.ts';
import { assertAdmin } from '../access/scope.ts';

export interface AuditEntry {
  id: string;
  action: string;
  actor: { userId: string | null; email: string | null; keyId: string | null };
  target: { type: string; id: string | null; name: string | null };
  changes: Record<string, unknown> | null;
  ip: string | null;
  source: AuditSource;
  createdAt: string;
}

const isoDate = z.string().refine((v) => !Number.isNaN(Date.parse(v)), 'must be an ISO 8601 date or time');

export const auditQuerySchema = z
  .object({
    limit: queryInteger(1, 200).default(50),
    cursor: z.string().max(200).optional(),
    action: z.enum(AUDIT_ACTIONS as unknown as [AuditAction, ...AuditAction[]]).optional(),
    actorId: z.string().min(1).max(320).optional().describe('The acting user id, key id or email'),
    targetId: z.string().min(1).max(320).optional().describe("The target's id or name (a key, user email, connection or tool name)"),
    since: isoDate.optional(),
    until: isoDate.optional(),
  })
  .strict();
export type AuditQuery = z.infer<typeof auditQuerySchema>;

export function toAuditEntry(row: AuditRow): AuditEntry {
  return {
    id: row.id,
    action: row.action,
    actor: { userId: row.actor_user_id, email: row.actor_email, keyId: row.actor_key_id },
    target: { type: row.target_type, id: row.target_id, name: row.target_name },
    changes: row.changes === null ? null : (JSON.parse(row.changes) as Record<string, unknown>),
    ip: row.ip,
    source: row.source,
    createdAt: row.created_at,
  };
}

function encodeCursor(id: string): string {
  return Buffer.from(JSON.stringify({ id })).toString('base64url');
}

function decodeCursor(cursor: string): string {
  try {
    const { id } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { id?: unknown };
    if (typeof id === 'string' && /^aud_[0-9a-z]{26}$/.test(id)) return id;
  } catch {
    // fall through to the error below
  }
  throw new InvalidRequestError('cursor is not valid', { field: 'cursor' });
}

// Ids hold 48 bits of milliseconds since 1970: a date outside that range is clamped to it.
function idAt(iso: string): string {
  return firstIdAt('aud', Math.min(Math.max(Date.parse(iso), 0), 2 ** 48 - 1));
}

export async function listAudit(
  db: Kysely<Database>,
  principal: Principal,
  query: AuditQuery,
): Promise<{ entries: AuditEntry[]; nextCursor: string | null }> {
  assertAdmin(principal, 'the audit log is for admins');
  let q = db.selectFrom('audit_log').selectAll().where('workspace_id', '=', principal.workspace.id);
  if (query.cursor) q = q.where('id', '<', decodeCursor(query.cursor));
  if (query.action) q = q.where('action', '=', query.action);
  if (query.actorId) {
    const a = query.actorId;
    // Emails are stored lower-cased (users.ts); ids are matched as given.
    q = q.where((eb) => eb.or([eb('actor_user_id', '=', a), eb('actor_key_id', '=', a), eb('actor_email', '=', a.toLowerCase())]));
  }
  if (query.targetId) {
    const t = query.targetId;
    q = q.where((eb) => eb.or([eb('target_id', '=', t), eb('target_name', '=', t)]));
  }
  // The id starts with its creation time, so the time filters walk the primary key too.
  if (query.since) q = q.where('id', '>=', idAt(query.since));
  if (query.until) q = q.where('id', '<', idAt(query.until));
  const rows = await q
    .orderBy('id', 'desc')
    .limit(query.limit + 1)
    .execute();
  const page = rows.slice(0, query.limit).map(toAuditEntry);
  const nextCursor = rows.length > query.limit ? encodeCursor(page[page.length - 1].id) : null;
  return { entries: page, nextCursor };
}

/** Deletes entries older than `days`, in batches so a first run over a large backlog never
 * holds the store in one long statement; returns how many went. */
export async function pruneAudit(db: Kysely<Database>, days: number, batch = 1000): Promise<number> {
  const cutoff = firstIdAt('aud', Date.now() - days * 86_400_000);
  let total = 0;
  for (;;) {
    const ids = (await db.selectFrom('audit_log').select('id').where('id', '<', cutoff).orderBy('id').limit(batch).execute()).map(
      (r) => r.id,
    );
    if (ids.length === 0) return total;
    const result = await db.deleteFrom('audit_log').where('id', 'in', ids).executeTakeFirst();
    total += Number(result.numDeletedRows ?? 0);
    if (ids.length < batch) return total;
  }
}
