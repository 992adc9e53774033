import { z } from 'zod';
import { connectionRecordSchema } from '../../http-kit/schema.ts';
import type { DbqTool } from './tool.ts';
import { listConnectionsFor } from '../../access/grants.ts';

const inputSchema = z.object({}).strict();
// Output schemas are loose so a field added to the record later does not fail a client's
// validation of structuredContent.
const outputSchema = z.looseObject({ connections: z.array(connectionRecordSchema.loose()) });

export const listConnectionsTool: DbqTool<typeof inputSchema, typeof outputSchema> = {
  name: 'list_connections',
  title: 'List database connections',
  description: [
    'Lists the database connections of this workspace, sorted by name.',
    'Returns {connections: [{id, name, engine, host, port, database, user, ssl, readOnly, ...}]}; passwords are never returned.',
    '`engine` is the SQL dialect to write for: "postgres" (PostgreSQL, placeholders $1, $2), "mysql" (MySQL/MariaDB, placeholders ?) or "sqlite" (placeholders ?).',
    '`readOnly: true` means only read statements can run on that connection, whatever the key.',
    'Pass a connection `id` or `name` as `connectionId` to the other tools. Start here.',
  ].join(' '),
  inputSchema,
  outputSchema,
  handler:
    (svc) =>
    async (_args, { principal }) => ({ connections: await listConnectionsFor(svc, principal) }),
};
