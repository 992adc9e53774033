import { z } from 'zod';
import { columnSchema } from '../../http-kit/schema.ts';
import { queryInputSchema, runQuery } from '../../query/run.ts';
import type { DbqTool } from './tool.ts';

const inputSchema = z
  .object({
    connectionId: z.string().min(1).max(200).describe('Connection id (conn_…) or name, from list_connections'),
    sql: z.string().min(1).describe("Exactly one SQL statement in the connection's dialect; a trailing ; is fine"),
    params: z
      .array(z.unknown())
      .max(10_000)
      .optional()
      .describe('Values for the placeholders ($1, $2 … on PostgreSQL; ? on MySQL and SQLite), bound by the driver'),
    maxRows: z.number().int().min(1).max(10_000).optional().describe('Most rows to return, 1-10000 (default 1000)'),
  })
  .strict();

const outputSchema = z.looseObject({
  queryId: z.string(),
  connectionId: z.string(),
  statementType: z.string(),
  columns: z.array(columnSchema.loose()),
  rows: z.array(z.array(z.unknown())),
  rowCount: z.number(),
  truncated: z.boolean(),
  affectedRows: z.number().nullable(),
  durationMs: z.number(),
});

export const executeQueryTool: DbqTool<typeof inputSchema, typeof outputSchema> = {
  name: 'execute_query',
  title: 'Run one SQL statement',
  description: [
    'Runs exactly one SQL statement on a connection and returns',
    '{queryId, connectionId, statementType, columns: [{name, type}], rows, rowCount, truncated, affectedRows, durationMs}.',
    '`rows` is a list of arrays in `columns` order. int8/numeric/decimal values are strings (exact), dates and timestamps ISO 8601 strings, json values JSON, binary base64, NULL null.',
    'Limits: at most maxRows rows (default 1000, max 10000) and a size cap per result; past either, the rows stop and `truncated` is true —',
    'prefer LIMIT, WHERE or aggregates over large reads. A statement runs at most 30 s, then it is cancelled and the call fails.',
    "Write SQL in the connection's dialect (`engine` in list_connections) and pass values in `params` rather than quoting them into the SQL.",
    'Permissions are enforced by the server: a read-only key, or a connection marked readOnly, may run only read statements',
    "(SELECT incl. WITH/UNION/VALUES, EXPLAIN of a read, SHOW, DESCRIBE); reads also run inside the database's read-only mode.",
    'Anything else — INSERT/UPDATE/DELETE, DDL, data-modifying CTEs, SELECT … FOR UPDATE, side-effecting functions, more than one statement — is refused with "Insufficient permissions" or an invalid-request error; do not try to work around it.',
    'Database errors come back with the database\'s own message. Every call is recorded in the query history (source "mcp").',
  ].join(' '),
  inputSchema,
  outputSchema,
  handler:
    (svc) =>
    async (args, { principal, signal }) => {
      // The REST body schema fills the defaults (maxRows 1000, timeoutMs 30000, rowFormat arrays).
      const input = queryInputSchema.parse({ connectionId: args.connectionId, sql: args.sql, params: args.params, maxRows: args.maxRows });
      const result = await runQuery(svc, principal, input, { source: 'mcp', signal });
      return { ...result, rows: result.rows as unknown[][] };
    },
};
