// Whether a curated tool only reads, for the hints MCP shows beside it (readOnlyHint or
// destructiveHint): the guard's parser verdict on the tool's statement with its placeholders
// bound, as at creation. It is advice for a client's UI, like the built-in tools' hints; every
// run is still decided by the guard on the caller's connection (runTool → runQuery), so a
// verdict here never lets anything run. A tool version's statement and connection never
// change, so the answer is kept per version in a bounded process-wide cache and a tools/list
// reads the store only for versions it has not seen.
import { classifyStatement } from '../guard/guard.ts';
import type { Services } from '../services.ts';
import { bindPlaceholders, findPlaceholders } from './tool-sql.ts';

const CACHE_ENTRIES = 10_000;
const reads = new Map<string, boolean>();

const keyOf = (workspaceId: string, name: string, version: number) => `${workspaceId}\u0000${name}\u0000${version}`;

/** For each tool (name and version of one workspace): true when its statement is a read. */
export async function toolsThatRead(
  svc: Services,
  workspaceId: string,
  tools: { name: string; version: number }[],
): Promise<Map<string, boolean>> {
  const out = new Map<string, boolean>();
  const missing: { name: string; version: number }[] = [];
  for (const t of tools) {
    const known = reads.get(keyOf(workspaceId, t.name, t.version));
    if (known === undefined) missing.push(t);
    else out.set(t.name, known);
  }
  if (missing.length === 0) return out;
  const rows = await svc.db
    .selectFrom('curated_tools')
    .innerJoin('connections', 'connections.id', 'curated_tools.connection_id')
    .select(['curated_tools.name', 'curated_tools.version', 'curated_tools.sql', 'connections.engine'])
    .where('curated_tools.workspace_id', '=', workspaceId)
    .where(
      'curated_tools.name',
      'in',
      missing.map((t) => t.name),
    )
    .execute();
  const wanted = new Map(missing.map((t) => [t.name, t.version]));
  for (const row of rows) {
    if (wanted.get(row.name) !== Number(row.version)) continue;
    const bound = bindPlaceholders(row.sql, row.engine, findPlaceholders(row.sql, row.engine), new Map(), null);
    const verdict = await classifyStatement(row.engine, bound.sql);
    const isRead = verdict.kind === 'read';
    if (reads.size >= CACHE_ENTRIES) reads.delete(reads.keys().next().value as string);
    reads.set(keyOf(workspaceId, row.name, Number(row.version)), isRead);
    out.set(row.name, isRead);
  }
  return out;
}
