// What a new key may do, decided once at creation: the request's narrowing, resolved against
// the workspace (connection names → ids, the user's grants, the workspace's longest lifetime)
// and, when a key creates a key, intersected with the creating key — a key can hand out no
// more than it holds. Only narrowing fields are stored; no narrowing at all is stored as null.
import type { Kysely } from 'kysely';
import { ConnectionNotFoundError, InsufficientPermissionsError, InvalidRequestError } from '../errors.ts';
import { getConnectionRow } from '../connections/connections.ts';
import type { Database, UserRow } from '../store/schema.ts';
import { userMayUse } from './grants.ts';
import type { KeyScope } from './scope.ts';

const DAY_MS = 86_400_000;
// An `expiresAt` computed by a client from the same maximum must not fail by the time it took
// to arrive.
const CLOCK_SLACK_MS = 60_000;

/** The narrowing a caller asks for; connections by id or name. */
export interface KeyScopeRequest {
  readOnly?: boolean;
  connections?: string[];
  toolsOnly?: boolean;
  tools?: string[];
}

export interface KeyLifetimeRequest {
  expiresAt?: string | null;
  expiresInDays?: number | null;
}

/** The key that is creating this key (REST POST /keys with a key), if any. */
export interface KeyCeiling {
  scope: KeyScope | null;
  expiresAt: string | null;
}

function tooWide(reason: string, details: Record<string, unknown> = {}): InsufficientPermissionsError {
  return new InsufficientPermissionsError({ reason, ...details });
}

/** Connection names or ids → ids of connections the key's user may use. A connection the user
 * may not use is reported exactly like one that does not exist. */
async function resolveConnections(db: Kysely<Database>, user: UserRow, entries: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const entry of entries) {
    const unknown = new InvalidRequestError(`connections: unknown connection "${entry}"`, { field: 'connections', connection: entry });
    let row;
    try {
      row = await getConnectionRow(db, user.workspace_id, entry);
    } catch (err) {
      if (err instanceof ConnectionNotFoundError) throw unknown;
      throw err;
    }
    if (!(await userMayUse({ db }, { user: { id: user.id, accountRole: user.role } }, row))) throw unknown;
    if (!ids.includes(row.id)) ids.push(row.id);
  }
  return ids;
}

async function connectionUsable(db: Kysely<Database>, user: UserRow, connectionId: string): Promise<boolean> {
  let row;
  try {
    row = await getConnectionRow(db, user.workspace_id, connectionId);
  } catch (err) {
    if (err instanceof ConnectionNotFoundError) return false;
    throw err;
  }
  return userMayUse({ db }, { user: { id: user.id, accountRole: user.role } }, row);
}

/** Curated tool names, each of a live tool on a connection the key's user may use; the others
 * are refused together, the way an unknown connection is (a misspelt name used to be
 * stored and the key could then run nothing, with no word why). A tool the user may not use is
 * reported exactly like one that does not exist, as /tools/{name} does. */
async function resolveTools(db: Kysely<Database>, user: UserRow, names: string[]): Promise<string[]> {
  const unique = [...new Set(names)];
  const rows = await db
    .selectFrom('curated_tools')
    .select(['name', 'connection_id', 'deleted_at'])
    .where('workspace_id', '=', user.workspace_id)
    .where('name', 'in', unique)
    .orderBy('version', 'desc')
    .execute();
  const newest = new Map<string, (typeof rows)[number]>();
  for (const row of rows) if (!newest.has(row.name)) newest.set(row.name, row);
  const unknown: string[] = [];
  for (const name of unique) {
    const row = newest.get(name);
    if (!row || row.deleted_at !== null || !(await connectionUsable(db, user, row.connection_id))) unknown.push(name);
  }
  if (unknown.length > 0) {
    const listed = unknown.map((n) => `"${n}"`).join(', ');
    throw new InvalidRequestError(`tools: unknown tool${unknown.length > 1 ? 's' : ''} ${listed}`, {
      field: 'tools',
      tool: unknown[0],
      tools: unknown,
    });
  }
  return unique;
}

export async function resolveKeyScope(
  db: Kysely<Database>,
  user: UserRow,
  asked: KeyScopeRequest,
  ceiling: KeyCeiling | null,
): Promise<KeyScope | null> {
  const limit = ceiling?.scope ?? null;
  if (limit?.toolsOnly) throw tooWide('a key limited to curated tools may not create keys');
  const scope: KeyScope = {};
  if (asked.readOnly || limit?.readOnly) scope.readOnly = true;
  // An empty list would read as "none" to whoever wrote it, but absent means "all": refused,
  // so no key ends up wider than its creator meant.
  if (asked.connections?.length === 0) {
    throw new InvalidRequestError(
      'connections: list at least one connection, or leave connections out for every connection the user may use',
      { field: 'connections' },
    );
  }
  if (asked.tools?.length === 0) {
    throw new InvalidRequestError('tools: list at least one tool, or leave tools out for every tool', { field: 'tools' });
  }

  const connections = asked.connections?.length ? await resolveConnections(db, user, asked.connections) : null;
  if (limit?.connections) {
    const outside = connections?.find((id) => !limit.connections!.includes(id));
    if (outside) throw tooWide('a key may not grant a connection its creating key may not use', { connectionId: outside });
  }
  const effectiveConnections = connections ?? limit?.connections ?? null;
  if (effectiveConnections) scope.connections = effectiveConnections;

  if (asked.toolsOnly) scope.toolsOnly = true;
  const tools = asked.tools?.length ? await resolveTools(db, user, asked.tools) : null;
  if (limit?.tools) {
    const outside = tools?.find((t) => !limit.tools!.includes(t));
    if (outside) throw tooWide(`a key may not grant tool "${outside}": its creating key may not run it`, { tool: outside });
  }
  const effectiveTools = tools ?? limit?.tools ?? null;
  if (effectiveTools) scope.tools = effectiveTools;

  return Object.keys(scope).length ? scope : null;
}

/** The new key's expiry (ISO) or null, within the workspace's maxKeyDays and the creating key's own. */
export function resolveExpiry(
  asked: KeyLifetimeRequest,
  maxKeyDays: number | null,
  ceiling: KeyCeiling | null,
  now = Date.now(),
): string | null {
  if (asked.expiresAt != null && asked.expiresInDays != null) {
    throw new InvalidRequestError('give expiresAt or expiresInDays, not both', { field: 'expiresAt' });
  }
  let expires: number | null = null;
  if (asked.expiresInDays != null) {
    if (!Number.isInteger(asked.expiresInDays) || asked.expiresInDays < 1 || asked.expiresInDays > 3650) {
      throw new InvalidRequestError('expiresInDays must be an integer from 1 to 3650', { field: 'expiresInDays' });
    }
    expires = now + asked.expiresInDays * DAY_MS;
  } else if (asked.expiresAt != null) {
    expires = Date.parse(asked.expiresAt);
    if (Number.isNaN(expires)) throw new InvalidRequestError('expiresAt must be an ISO 8601 date or time', { field: 'expiresAt' });
    if (expires <= now) throw new InvalidRequestError('expiresAt must be in the future', { field: 'expiresAt' });
  }
  const ceilingExpires = ceiling?.expiresAt ? Date.parse(ceiling.expiresAt) : null;
  if (ceilingExpires !== null) {
    if (expires !== null && expires > ceilingExpires) {
      throw tooWide('a key may not outlive the key that creates it', { expiresAt: ceiling!.expiresAt });
    }
    expires ??= ceilingExpires;
  }
  if (maxKeyDays !== null) {
    const longest = now + maxKeyDays * DAY_MS;
    if (expires === null) expires = longest;
    else if (expires > longest + CLOCK_SLACK_MS) {
      throw new InvalidRequestError(`expiresAt must be within ${maxKeyDays} days (the workspace's maxKeyDays)`, {
        field: 'expiresAt',
        maxKeyDays,
      });
    }
  }
  return expires === null ? null : new Date(expires).toISOString();
}
