import { z } from 'zod';
import { columnSchema } from '../../http-kit/schema.ts';
import { generateInputSchema, MAX_PROMPT_LENGTH, runGenerate } from '../../ai/run-generate.ts';
import type { DbqTool } from './tool.ts';

const inputSchema = z
  .object({
    connectionId: z.string().min(1).max(200).describe('Connection id (conn_…) or name, from list_connections'),
    prompt: z.string().min(1).max(MAX_PROMPT_LENGTH).describe('The question in plain language, e.g. "top 5 customers by revenue in 2025"'),
    execute: z.boolean().optional().describe("Also run the SQL (under this key's permissions) and return its result (default false)"),
  })
  .strict();

const resultSchema = z.looseObject({
  queryId: z.string(),
  connectionId: z.string(),
  statementType: z.string(),
  columns: z.array(columnSchema.loose()),
  rows: z.array(z.unknown()),
  rowCount: z.number(),
  truncated: z.boolean(),
  affectedRows: z.number().nullable(),
  durationMs: z.number(),
});

const outputSchema = z.looseObject({
  sql: z.string(),
  explanation: z.string(),
  dialect: z.string(),
  provider: z.string(),
  model: z.string().nullable(),
  tables: z.array(z.string()),
  validated: z.boolean(),
  result: resultSchema.nullable(),
});

export const generateSqlTool: DbqTool<typeof inputSchema, typeof outputSchema> = {
  name: 'generate_sql',
  title: 'Write SQL from a question',
  description: [
    "Writes one SQL statement for a question in plain language, from the connection's introspected schema, using dbq's configured SQL generator.",
    'Returns {sql, explanation, dialect, provider, model, tables, validated, result}. `validated: true` means the SQL parsed and the database accepted it (EXPLAIN/prepare);',
    'false means it was refused and is returned for you to fix. A read-only key only ever gets read SQL.',
    "With execute: true, validated SQL is also run under this key's permissions (at most 1000 rows) and `result` holds the execute_query-shaped result; otherwise `result` is null.",
    'If you can write the SQL yourself, describe_table plus execute_query is usually more precise.',
  ].join(' '),
  inputSchema,
  outputSchema,
  handler:
    (svc) =>
    async (args, { principal, signal }) => {
      const input = generateInputSchema.parse(args);
      return runGenerate(svc, principal, input, { source: 'mcp', signal });
    },
};
