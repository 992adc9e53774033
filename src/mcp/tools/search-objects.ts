import { z } from 'zod';
import { SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_MAX, searchObjects, searchObjectsFields } from '../../schema/search-objects.ts';
import type { DbqTool } from './tool.ts';

const inputSchema = z
  .object({
    connectionId: z.string().min(1).max(200).describe('Connection id (conn_…) or name, from list_connections'),
    ...searchObjectsFields,
    limit: z
      .number()
      .int()
      .min(1)
      .max(SEARCH_LIMIT_MAX)
      .default(SEARCH_LIMIT_DEFAULT)
      .describe(`At most this many objects (default ${SEARCH_LIMIT_DEFAULT}, max ${SEARCH_LIMIT_MAX})`),
  })
  .strict();

const outputSchema = z.looseObject({
  connectionId: z.string(),
  connectionName: z.string(),
  total: z.number(),
  truncated: z.boolean(),
  objects: z.array(z.union([z.string(), z.looseObject({})])),
});

export const searchObjectsTool: DbqTool<typeof inputSchema, typeof outputSchema> = {
  name: 'search_objects',
  title: 'Search schema objects by name',
  description: [
    'Finds tables, views, columns, indexes or functions whose name contains `pattern` (case-insensitive), without reading the whole schema; tables, views and columns are also found by their description or synonyms ("revenue" finds the column described as revenue).',
    'Returns {connectionId, connectionName, total, truncated, objects}, exact matches first, then prefix, then substring, then by name, then matches of a description or synonym.',
    'detail "names" (default) gives qualified names ("schema.table", "schema.table.column"); "summary" adds kind, column count or table and type, and the description; "full" gives describe_table\'s shape.',
    'Use it before list_tables on a large database. Allowed for every key; not recorded in the query history.',
  ].join(' '),
  inputSchema,
  outputSchema,
  handler:
    (svc) =>
    async ({ connectionId, ...input }, { principal }) => ({ ...(await searchObjects(svc, principal, connectionId, input)) }),
};
