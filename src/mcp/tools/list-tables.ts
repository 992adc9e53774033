import { z } from 'zod';
import type { DbqTool } from './tool.ts';
import { getConnectionFor } from '../../access/grants.ts';
import { assertRawAccess } from '../../access/scope.ts';

const inputSchema = z
  .object({
    connectionId: z.string().min(1).max(200).describe('Connection id (conn_…) or name, from list_connections'),
    schema: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('Only this schema (PostgreSQL schema, MySQL database). Omit for every non-system schema.'),
  })
  .strict();

const outputSchema = z.looseObject({
  connectionId: z.string(),
  connectionName: z.string(),
  tables: z.array(
    z.looseObject({ schema: z.string().nullable(), name: z.string(), kind: z.enum(['table', 'view']), columnCount: z.number() }),
  ),
});

export const listTablesTool: DbqTool<typeof inputSchema, typeof outputSchema> = {
  name: 'list_tables',
  title: 'List tables and views',
  description: [
    'Lists the tables and views of one connection.',
    'Returns {connectionId, connectionName, tables: [{schema, name, kind: "table"|"view", columnCount}]}.',
    '`schema` is null on SQLite. Use describe_table for the columns, types, primary key and foreign keys of a table.',
    'Reading the catalog is allowed for every key and is not recorded in the query history.',
  ].join(' '),
  inputSchema,
  outputSchema,
  handler:
    (svc) =>
    async (args, { principal }) => {
      assertRawAccess(principal);
      const row = await getConnectionFor(svc, principal, args.connectionId);
      const tables = await svc.pools.forRead(row).listTables(args.schema);
      return {
        connectionId: row.id,
        connectionName: row.name,
        tables: tables.map((t) => ({ schema: t.schema, name: t.name, kind: t.kind, columnCount: t.columns.length })),
      };
    },
};
