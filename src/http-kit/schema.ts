// Route schemas are zod, the same objects core uses to validate. They are emitted as JSON
// Schema for OpenAPI only; validation runs through zod (parseInput) so every front door gets
// identical rules and messages, and responses are serialised with JSON.stringify (rows are
// arbitrary JSON that a response schema must not strip).
import { z, type ZodType } from 'zod';
import { zodToInvalidRequest } from '../zod-error.ts';

export function parseInput<T extends ZodType>(schema: T, value: unknown): z.output<T> {
  const result = schema.safeParse(value ?? {});
  if (!result.success) throw zodToInvalidRequest(result.error);
  return result.data;
}

export function jsonSchema(schema: ZodType, io: 'input' | 'output' = 'input'): Record<string, unknown> {
  const out = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Record<string, unknown>;
  delete out.$schema;
  return out;
}

export function ok<T>(data: T): { success: true; data: T } {
  return { success: true, data };
}

const errorEnvelope = {
  type: 'object',
  required: ['success', 'error', 'code'],
  properties: {
    success: { const: false },
    error: { type: 'string' },
    code: { type: 'string' },
    details: { type: 'object' },
  },
};

/** Response map for OpenAPI: the success envelope around `data`, and the error envelope. */
export function responses(data: ZodType, status = 200, errors: number[] = [400, 401, 403, 404, 429, 500]): Record<number, unknown> {
  const map: Record<number, unknown> = {
    [status]: {
      type: 'object',
      required: ['success', 'data'],
      properties: { success: { const: true }, data: jsonSchema(data, 'output') },
    },
  };
  for (const code of errors) map[code] = errorEnvelope;
  return map;
}

export const readAccessSchema = z.object({
  level: z.enum(['read_only', 'can_write', 'superuser']),
  findings: z.array(z.string()).describe('What the credential can do beyond reading, one short sentence each'),
});

export const connectionRecordSchema = z.object({
  id: z.string(),
  name: z.string(),
  engine: z.enum(['postgres', 'mysql', 'sqlite']),
  host: z.string().nullable(),
  port: z.number().nullable(),
  database: z.string(),
  user: z.string().nullable(),
  ssl: z.boolean(),
  readOnly: z.boolean(),
  maxConnections: z.number(),
  readUser: z.string().nullable().describe('The user every read logs in as (reader credentials); null when reads use the connection user'),
  readAccess: readAccessSchema.nullable().describe('Privilege audit of the credential reads use; null until known'),
  ssh: z
    .object({
      host: z.string(),
      port: z.number(),
      user: z.string(),
      hostKey: z.string().describe('The pinned host key as its SHA256: fingerprint'),
    })
    .nullable()
    .describe('The SSH bastion the database is reached through, without its key or password; null when dialled directly'),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const columnSchema = z.object({ name: z.string(), type: z.string() });

export const queryResultSchema = z.object({
  queryId: z.string(),
  connectionId: z.string(),
  statementType: z.string(),
  columns: z.array(columnSchema),
  rows: z.array(z.union([z.array(z.unknown()), z.record(z.string(), z.unknown())])),
  rowCount: z.number(),
  truncated: z.boolean(),
  affectedRows: z.number().nullable(),
  durationMs: z.number(),
});

export const historyEntrySchema = z.object({
  id: z.string(),
  queryId: z.string(),
  connectionId: z.string(),
  connectionName: z.string(),
  sql: z.string(),
  statementType: z.string(),
  status: z
    .enum(['succeeded', 'failed', 'rejected', 'timed_out', 'canceled', 'running'])
    .describe(
      'running: a write sent to the database whose outcome is not recorded yet; one that stays running was cut off by a stop of dbq or of its store, and may have run',
    ),
  rowCount: z.number().nullable(),
  affectedRows: z.number().nullable(),
  durationMs: z.number(),
  error: z.string().nullable(),
  source: z.enum(['api', 'mcp', 'ai', 'ui']),
  apiKey: z.object({ id: z.string(), name: z.string() }).nullable(),
  user: z.object({ id: z.string(), email: z.string() }),
  tool: z
    .object({ name: z.string(), version: z.number() })
    .nullable()
    .describe('The curated tool this entry ran, with its version; null for raw SQL'),
  createdAt: z.string(),
});
