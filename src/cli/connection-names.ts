// Ids mean nothing to the person reading a CLI listing: `conn_01m8…` is printed with the
// connection's name beside it (`shop (conn_01m8…)`). Text output only; --json keeps the ids.
import { listConnections } from '../connections/connections.ts';
import type { Services } from '../services.ts';
import { getWorkspace } from '../workspaces/workspaces.ts';

export type ConnectionNames = ReadonlyMap<string, string>;

export async function connectionNames(svc: Services, slug: string): Promise<ConnectionNames> {
  const ws = await getWorkspace(svc.db, slug);
  return new Map((await listConnections(svc.db, ws.id)).map((c) => [c.id, c.name]));
}

/** `shop (conn_…)`; an id no longer in the workspace (a deleted connection) stays bare. */
export function named(id: string, names: ConnectionNames): string {
  const name = names.get(id);
  return name === undefined ? id : `${name} (${id})`;
}

/** Every connection id in a line of text, named. */
export function nameIdsIn(text: string, names: ConnectionNames): string {
  return text.replace(/\bconn_[0-9a-z]+\b/g, (id) => named(id, names));
}
