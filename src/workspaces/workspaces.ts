import type { Kysely } from 'kysely';
import { inTransaction, recordAudit, type Actor } from '../audit/audit.ts';
import { ConflictError, InvalidRequestError, WorkspaceNotFoundError } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import type { Database, WorkspaceRow } from '../store/schema.ts';

export type Plan = WorkspaceRow['plan'];
export const PLANS: readonly Plan[] = ['free', 'professional', 'enterprise'];
export const DEFAULT_WORKSPACE = 'default';

// DNS-label rules, because a slug is also a host name in the host form of workspace URLs.
const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export interface Workspace {
  id: string;
  slug: string;
  name: string;
  plan: Plan;
  createdAt: string;
}

function toWorkspace(row: WorkspaceRow): Workspace {
  return { id: row.id, slug: row.slug, name: row.name, plan: row.plan, createdAt: row.created_at };
}

function assertPlan(plan: string): Plan {
  if (!(PLANS as readonly string[]).includes(plan)) {
    throw new InvalidRequestError(`plan must be one of ${PLANS.join(', ')}`, { field: 'plan' });
  }
  return plan as Plan;
}

export async function createWorkspace(db: Kysely<Database>, input: { slug: string; name?: string; plan?: string }): Promise<Workspace> {
  const slug = input.slug.toLowerCase();
  if (!SLUG.test(slug)) throw new InvalidRequestError('slug must be 1-63 lower-case letters, digits or hyphens', { field: 'slug' });
  const row: WorkspaceRow = {
    id: newId('ws'),
    slug,
    name: input.name ?? slug,
    plan: assertPlan(input.plan ?? 'free'),
    max_key_days: null,
    created_at: nowIso(),
  };
  const existing = await db.selectFrom('workspaces').select('id').where('slug', '=', slug).executeTakeFirst();
  if (existing) throw new ConflictError(`Workspace ${slug} already exists`);
  await db.insertInto('workspaces').values(row).execute();
  return toWorkspace(row);
}

export async function findWorkspace(db: Kysely<Database>, slug: string): Promise<Workspace | null> {
  const row = await db.selectFrom('workspaces').selectAll().where('slug', '=', slug.toLowerCase()).executeTakeFirst();
  return row ? toWorkspace(row) : null;
}

export async function getWorkspace(db: Kysely<Database>, slug: string): Promise<Workspace> {
  const ws = await findWorkspace(db, slug);
  if (!ws) throw new WorkspaceNotFoundError();
  return ws;
}

export async function listWorkspaces(db: Kysely<Database>): Promise<Workspace[]> {
  const rows = await db.selectFrom('workspaces').selectAll().orderBy('slug').execute();
  return rows.map(toWorkspace);
}

/** Audited as `workspace.plan_changed` when the plan is a different one. */
export async function setWorkspacePlan(db: Kysely<Database>, slug: string, plan: string, actor: Actor): Promise<Workspace> {
  const ws = await getWorkspace(db, slug);
  const to = assertPlan(plan);
  await inTransaction(db, async (trx) => {
    await trx.updateTable('workspaces').set({ plan: to }).where('id', '=', ws.id).execute();
    if (to === ws.plan) return;
    await recordAudit(trx, {
      workspaceId: ws.id,
      actor,
      action: 'workspace.plan_changed',
      target: { type: 'workspace', id: ws.id, name: ws.slug },
      changes: { plan: { from: ws.plan, to } },
    });
  });
  return { ...ws, plan: to };
}

/** The `default` workspace always exists: it is served at the root URL. Made on `plan`
 * (DBQ_DEFAULT_PLAN) the first time; an existing one keeps its plan. */
export async function ensureDefaultWorkspace(db: Kysely<Database>, plan?: string): Promise<Workspace> {
  const ws = await findWorkspace(db, DEFAULT_WORKSPACE);
  if (ws) return ws;
  try {
    return await createWorkspace(db, { slug: DEFAULT_WORKSPACE, name: 'Default', ...(plan !== undefined ? { plan } : {}) });
  } catch (err) {
    // Another process created it between our read and insert.
    if (err instanceof ConflictError) return getWorkspace(db, DEFAULT_WORKSPACE);
    const again = await findWorkspace(db, DEFAULT_WORKSPACE);
    if (again) return again;
    throw err;
  }
}
