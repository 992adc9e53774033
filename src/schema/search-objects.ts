// Token-lean schema discovery: an agent looking for the three tables it needs
// in a 500-table database asks for names matching a word instead of reading every table. The
// engine filters in its catalog with the pattern bound as a LIKE parameter (never spliced);
// ranking, the limit and the detail level are applied here, the same for every engine.
import { z } from 'zod';
import type { SchemaObject, SchemaObjectKind, SchemaTable } from '../engines/engine.ts';
import type { Services } from '../services.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { getConnectionFor } from '../access/grants.ts';
import { assertRawAccess } from '../access/scope.ts';
import { annotationsOf } from '../annotations/annotations.ts';
import { applyAnnotations } from '../annotations/merge.ts';

const OBJECT_KINDS = ['table', 'view', 'column', 'index', 'function'] as const satisfies readonly SchemaObjectKind[];
export const OBJECT_DETAILS = ['names', 'summary', 'full'] as const;
export const SEARCH_LIMIT_DEFAULT = 50;
export const SEARCH_LIMIT_MAX = 500;

/** Shared by the MCP tool (numbers) and the REST query string (coerced there). */
export const searchObjectsFields = {
  pattern: z
    .string()
    .max(200)
    .default('')
    .describe(
      'Case-insensitive substring of the object name, or of a table or column description or synonym (%, _ and * are plain characters); empty matches every object of the kind',
    ),
  kind: z.enum(OBJECT_KINDS).optional().describe('table, view, column, index or function; omitted: tables and views'),
  detail: z
    .enum(OBJECT_DETAILS)
    .default('names')
    .describe(
      'names: qualified names only; summary: name, kind and column count (tables) or table and type (columns); full: what describe_table gives',
    ),
};

export type SearchObjectsInput = {
  pattern: string;
  kind?: SchemaObjectKind;
  detail: (typeof OBJECT_DETAILS)[number];
  limit: number;
};

export interface SearchObjectsResult {
  connectionId: string;
  connectionName: string;
  /** Every match, before the limit. */
  total: number;
  truncated: boolean;
  objects: unknown[];
}

/** "schema.table.column"; the schema is left out on SQLite. */
function qualifiedName(o: SchemaObject): string {
  return [o.schema, o.table, o.name].filter((part) => part !== null && part !== undefined).join('.');
}

/** Lower-case LIKE pattern matching `pattern` anywhere, its own wildcards escaped with `!`. */
function substringLike(pattern: string): string {
  return `%${pattern.toLowerCase().replace(/[!%_]/g, (c) => `!${c}`)}%`;
}

/** 0 exact, 1 prefix, 2 substring (the catalog already kept only matches); 3 is a match of
 * what the object means, not of its name (matchMeanings). */
export function relevance(name: string, pattern: string): number {
  const lower = name.toLowerCase();
  return lower === pattern ? 0 : lower.startsWith(pattern) ? 1 : 2;
}

function summarize(o: SchemaObject): Record<string, unknown> {
  const name = qualifiedName(o);
  switch (o.kind) {
    case 'table':
    case 'view':
      return { name, kind: o.kind, columnCount: o.columnCount };
    case 'column':
      return { name, kind: o.kind, table: o.table, type: o.type };
    case 'index':
      return { name, kind: o.kind, table: o.table };
    case 'function':
      return { name, kind: o.kind, type: o.type };
  }
}

export async function searchObjects(
  svc: Services,
  principal: Principal,
  connectionId: string,
  input: SearchObjectsInput,
): Promise<SearchObjectsResult> {
  assertRawAccess(principal);
  const row = await getConnectionFor(svc, principal, connectionId);
  const engine = svc.pools.forRead(row);
  const like = substringLike(input.pattern);
  const kinds: SchemaObjectKind[] = input.kind ? [input.kind] : ['table', 'view'];
  const found: SchemaObject[] = [];
  for (const kind of kinds) found.push(...(await engine.searchObjects({ kind, like })));

  const pattern = input.pattern.toLowerCase();
  // What tables and columns mean (the database's comments, an admin's annotations) is read
  // once, only when it is shown or searched: a bare name listing stays one catalog query.
  const describes = kinds.some((k) => k === 'table' || k === 'view' || k === 'column');
  let described: SchemaTable[] | null = null;
  if (describes && (pattern !== '' || input.detail !== 'names')) {
    described = applyAnnotations(await engine.listTables(), (await annotationsOf(svc, row.id)).annotations);
  }
  const ranked = found.map((o) => ({ o, rank: relevance(o.name, pattern), key: qualifiedName(o) }));
  if (described && pattern !== '') ranked.push(...matchMeanings(described, kinds, pattern, new Set(ranked.map((r) => r.key))));
  ranked.sort((a, b) => a.rank - b.rank || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const kept = ranked.slice(0, input.limit).map((r) => r.o);
  const base = { connectionId: row.id, connectionName: row.name, total: ranked.length, truncated: ranked.length > kept.length };

  if (input.detail === 'names') return { ...base, objects: kept.map(qualifiedName) };
  const tableOf = (schema: string | null, name: string | undefined): SchemaTable | undefined =>
    described?.find((t) => t.schema === schema && t.name === name);
  if (input.detail === 'summary') {
    return {
      ...base,
      objects: kept.map((o) => {
        const summary = summarize(o);
        const owner = tableOf(o.schema, o.kind === 'column' ? o.table : o.name);
        const meaning = o.kind === 'column' ? owner?.columns.find((c) => c.name === o.name) : o.kind === 'index' ? undefined : owner;
        return meaning?.description ? { ...summary, description: meaning.description } : summary;
      }),
    };
  }
  // Full tables and views are describe_table's shape, descriptions and synonyms included.
  const objects = kept.map((o) => {
    if (o.kind !== 'table' && o.kind !== 'view') return o;
    return tableOf(o.schema, o.name) ?? o;
  });
  return { ...base, objects };
}

/** Tables, views and columns whose description or synonyms contain the pattern but whose
 * name does not (those the catalog found already): ranked after every name match. */
function matchMeanings(
  tables: SchemaTable[],
  kinds: SchemaObjectKind[],
  pattern: string,
  seen: Set<string>,
): { o: SchemaObject; rank: number; key: string }[] {
  const says = (item: { description?: string; synonyms?: string[] }): boolean =>
    (item.description?.toLowerCase().includes(pattern) ?? false) || (item.synonyms ?? []).some((s) => s.toLowerCase().includes(pattern));
  const out: { o: SchemaObject; rank: number; key: string }[] = [];
  const push = (o: SchemaObject): void => {
    const key = qualifiedName(o);
    if (!seen.has(key)) out.push({ o, rank: 3, key });
  };
  for (const t of tables) {
    if (kinds.includes(t.kind) && says(t)) push({ kind: t.kind, schema: t.schema, name: t.name, columnCount: t.columns.length });
    if (!kinds.includes('column')) continue;
    for (const c of t.columns) {
      if (says(c))
        push({
          kind: 'column',
          schema: t.schema,
          table: t.name,
          name: c.name,
          type: c.type,
          nullable: c.nullable,
          primaryKey: c.primaryKey,
        });
    }
  }
  return out;
}
