// Workspace settings an admin changes live: today the longest lifetime of a new API key
// (maxKeyDays). A key made without an expiry gets that lifetime; a longer one is refused.
// Keys made before a change keep their expiry: the setting governs creation, not existing keys.
import type { Kysely } from 'kysely';
import { InvalidRequestError } from '../errors.ts';
import type { Database } from '../store/schema.ts';
import { inTransaction, recordAudit, type Actor } from '../audit/audit.ts';
import { getWorkspace, type Plan } from './workspaces.ts';

export const MAX_KEY_DAYS_LIMIT = 3650;

export interface WorkspaceSettings {
  slug: string;
  name: string;
  plan: Plan;
  maxKeyDays: number | null;
}

export async function getWorkspaceSettings(db: Kysely<Database>, slug: string): Promise<WorkspaceSettings> {
  const ws = await getWorkspace(db, slug);
  const row = await db.selectFrom('workspaces').select('max_key_days').where('id', '=', ws.id).executeTakeFirstOrThrow();
  return { slug: ws.slug, name: ws.name, plan: ws.plan, maxKeyDays: row.max_key_days === null ? null : Number(row.max_key_days) };
}

export async function setMaxKeyDays(db: Kysely<Database>, slug: string, days: number | null, actor: Actor): Promise<WorkspaceSettings> {
  if (days !== null && (!Number.isInteger(days) || days < 1 || days > MAX_KEY_DAYS_LIMIT)) {
    throw new InvalidRequestError(`maxKeyDays must be an integer from 1 to ${MAX_KEY_DAYS_LIMIT}, or null for no limit`, {
      field: 'maxKeyDays',
    });
  }
  const before = await getWorkspaceSettings(db, slug);
  const ws = await getWorkspace(db, slug);
  await inTransaction(db, async (trx) => {
    await trx.updateTable('workspaces').set({ max_key_days: days }).where('id', '=', ws.id).execute();
    if (before.maxKeyDays === days) return;
    await recordAudit(trx, {
      workspaceId: ws.id,
      actor,
      action: 'workspace.settings_changed',
      target: { type: 'workspace', id: ws.id, name: ws.slug },
      changes: { maxKeyDays: { from: before.maxKeyDays, to: days } },
    });
  });
  return { ...before, maxKeyDays: days };
}
