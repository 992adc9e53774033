import { z } from 'zod';
import { HISTORY_STATUSES, historyQuerySchema, listHistory, type HistoryStatus } from '../../history/history.ts';
import { historyEntrySchema } from '../../http-kit/schema.ts';
import type { DbqTool } from './tool.ts';

const inputSchema = z
  .object({
    limit: z.number().int().min(1).max(200).optional().describe('Entries per page, 1-200 (default 50)'),
    connectionId: z.string().min(1).max(200).optional().describe('Only queries of this connection (id or name)'),
    status: z
      .enum(HISTORY_STATUSES as [HistoryStatus, ...HistoryStatus[]])
      .optional()
      .describe('Only entries with this outcome'),
    cursor: z.string().max(200).optional().describe('nextCursor of the previous page, to read older entries'),
  })
  .strict();

const outputSchema = z.looseObject({ entries: z.array(historyEntrySchema.loose()), nextCursor: z.string().nullable() });

export const getQueryHistoryTool: DbqTool<typeof inputSchema, typeof outputSchema> = {
  name: 'get_query_history',
  title: 'Read the query history',
  description: [
    'Returns the query history, newest first: {entries: [{id, queryId, connectionId, connectionName, sql, statementType,',
    'status: "succeeded"|"failed"|"rejected"|"timed_out"|"canceled"|"running", rowCount, affectedRows, durationMs, error, source: "api"|"mcp"|"ai"|"ui", apiKey, user, createdAt}], nextCursor}.',
    "Parameter values are not stored. A read-only key sees its own user's entries only; an admin key sees the whole workspace.",
    'Pages hold up to `limit` entries (default 50, max 200); a page whose search ran out of time may hold fewer, even none, with a `nextCursor`: pass `nextCursor` back as `cursor` for older entries until it is null.',
  ].join(' '),
  inputSchema,
  outputSchema,
  handler:
    (svc) =>
    async (args, { principal }) =>
      listHistory(svc.db, principal, historyQuerySchema.parse(args), { reader: svc.historyReader }),
};
