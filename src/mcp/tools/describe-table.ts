import { z } from 'zod';
import type { SchemaTable } from '../../engines/engine.ts';
import { InvalidRequestError, NotFoundError } from '../../errors.ts';
import type { DbqTool } from './tool.ts';
import { getConnectionFor } from '../../access/grants.ts';
import { assertRawAccess } from '../../access/scope.ts';
import { annotationsOf } from '../../annotations/annotations.ts';
import { applyAnnotations } from '../../annotations/merge.ts';

const inputSchema = z
  .object({
    connectionId: z.string().min(1).max(200).describe('Connection id (conn_…) or name, from list_connections'),
    table: z.string().min(1).max(400).describe('Table or view name, as list_tables returned it; "schema.table" also works'),
    schema: z.string().min(1).max(200).optional().describe('Schema of the table; needed only when the name exists in several schemas'),
  })
  .strict();

const tableSchema = z.looseObject({
  schema: z.string().nullable(),
  name: z.string(),
  kind: z.enum(['table', 'view']),
  columns: z.array(z.looseObject({ name: z.string(), type: z.string(), nullable: z.boolean(), primaryKey: z.boolean() })),
  foreignKeys: z.array(
    z.looseObject({
      columns: z.array(z.string()),
      refTable: z.string(),
      refSchema: z.string().nullable(),
      refColumns: z.array(z.string()),
    }),
  ),
});
const outputSchema = z.looseObject({ connectionId: z.string(), connectionName: z.string(), table: tableSchema });

/** Exact name first, then case-insensitive (models often lower-case identifiers); several
 * candidates in different schemas are an error that names them rather than a guess. */
function pickTable(tables: SchemaTable[], name: string): SchemaTable | null {
  for (const matches of [tables.filter((t) => t.name === name), tables.filter((t) => t.name.toLowerCase() === name.toLowerCase())]) {
    if (matches.length === 1) return matches[0];
    if (matches.length > 1) {
      const schemas = matches.map((t) => t.schema ?? '(none)').join(', ');
      throw new InvalidRequestError(`Table ${name} exists in several schemas (${schemas}); pass schema`, { field: 'schema' });
    }
  }
  return null;
}

export const describeTableTool: DbqTool<typeof inputSchema, typeof outputSchema> = {
  name: 'describe_table',
  title: 'Describe a table',
  description: [
    'Describes one table or view of a connection.',
    'Returns {connectionId, connectionName, table: {schema, name, kind, description?, synonyms?, columns: [{name, type, nullable, primaryKey, description?, synonyms?}], foreignKeys: [{columns, refTable, refSchema, refColumns}]}}.',
    "description says what a table or column means in the business (the workspace's annotation, else the database's comment); synonyms are other words people use for it.",
    'Column types are the engine\'s own spelling (e.g. "character varying(40)", "numeric(10,2)", "INTEGER").',
    'Use it before writing SQL against a table you have not seen. Allowed for every key; not recorded in the query history.',
  ].join(' '),
  inputSchema,
  outputSchema,
  handler:
    (svc) =>
    async (args, { principal }) => {
      assertRawAccess(principal);
      const row = await getConnectionFor(svc, principal, args.connectionId);
      const engine = svc.pools.forRead(row);
      let table = pickTable(await engine.listTables(args.schema), args.table);
      const dot = args.table.indexOf('.');
      if (!table && args.schema === undefined && dot > 0) {
        table = pickTable(await engine.listTables(args.table.slice(0, dot)), args.table.slice(dot + 1));
      }
      if (!table) throw new NotFoundError('Table not found');
      // What the table and its columns mean: the admin's annotation, else the database's comment.
      const [described] = applyAnnotations([table], (await annotationsOf(svc, row.id)).annotations);
      return { connectionId: row.id, connectionName: row.name, table: described };
    },
};
