// Key scopes: a key may be narrower than its user, never wider. The scope is folded into the
// principal once, at authentication: `principal.user.role` is the user's *current* role
// narrowed by the key (a readOnly key of an admin is a read_only principal), so every check
// that already reads the role — on every front door — applies the scope without knowing it.
// What a role cannot say (which connections, which curated tools, raw SQL at all) is asked
// here by the core functions the front doors share.
import { z } from 'zod';
import { InsufficientPermissionsError } from '../errors.ts';
import type { Role } from '../workspaces/users.ts';

/** Stored as JSON on the key. Absent fields mean "no narrowing". Connections are ids. */
export interface KeyScope {
  readOnly?: boolean;
  connections?: string[];
  toolsOnly?: boolean;
  tools?: string[];
}

export const TOOL_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/** The scope fields of a key-creation request (REST, CLI, web); connections by id or name. */
export const keyScopeInputShape = {
  readOnly: z.boolean().optional(),
  connections: z.array(z.string().min(1).max(200)).max(100).optional(),
  toolsOnly: z.boolean().optional(),
  tools: z.array(z.string().regex(TOOL_NAME, 'must be a tool name: lower-case letters, digits and _')).max(100).optional(),
};

export function parseStoredScope(text: string | null): KeyScope | null {
  if (text === null) return null;
  const scope = JSON.parse(text) as KeyScope;
  return Object.keys(scope).length ? scope : null;
}

/** The role a key acts with: its user's current role, read_only if the key says so. */
export function effectiveRole(userRole: Role, scope: KeyScope | null): Role {
  return scope?.readOnly ? 'read_only' : userRole;
}

/** The part of the principal this module reads (avoids an import cycle with api-keys.ts). */
export interface Scoped {
  apiKey: { scope: KeyScope | null } | null;
}

function scopeOf(p: Scoped): KeyScope | null {
  return p.apiKey?.scope ?? null;
}

/** Raw SQL, schema browsing and SQL generation: refused to a toolsOnly key. */
export function assertRawAccess(p: Scoped): void {
  if (scopeOf(p)?.toolsOnly) throw new InsufficientPermissionsError({ reason: 'this key may run curated tools only' });
}

/** Workspace administration: an admin, acting with a key not narrowed to curated tools (a
 * tools-only key administers nothing). The one check every admin-only operation makes. */
export function assertAdmin(p: Scoped & { user: { role: Role } }, reason = 'this operation needs an admin key'): void {
  if (p.user.role !== 'admin') throw new InsufficientPermissionsError({ reason });
  assertRawAccess(p);
}

/** Whether the key's scope lists the connection (by id); true when it lists none. */
export function keyAllowsConnection(p: Scoped, connectionId: string): boolean {
  const list = scopeOf(p)?.connections;
  return !list || list.includes(connectionId);
}

export function assertKeyAllowsConnection(p: Scoped, connection: { id: string; name: string }): void {
  if (!keyAllowsConnection(p, connection.id)) {
    throw new InsufficientPermissionsError({ reason: `this key may not use connection "${connection.name}"`, connectionId: connection.id });
  }
}

export function keyAllowsTool(p: Scoped, name: string): boolean {
  const list = scopeOf(p)?.tools;
  return !list || list.includes(name);
}

export function assertKeyAllowsTool(p: Scoped, name: string): void {
  if (!keyAllowsTool(p, name)) throw new InsufficientPermissionsError({ reason: `this key may not run tool "${name}"`, tool: name });
}
