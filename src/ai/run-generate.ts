// POST /ai/generate and the MCP generate_sql tool: wires the provider-independent pipeline
// (generate.ts) to a connection — its cached schema context, the read-only guard, a dry run
// on its database — and, with execute:true, runs the SQL through the one query path
// (history source `ai`), so the guard holds whatever the model said.
import { z } from 'zod';
import { DEFAULT_STATEMENT_TIMEOUT_MS, type Engine } from '../engines/engine.ts';
import type { Services } from '../services.ts';
import { decideStatement } from '../guard/decide.ts';
import type { ConnectionRow } from '../store/schema.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { runQuery, type QueryResult } from '../query/run.ts';
import { generateSql, type GenerateResult, type SqlProvider } from './generate.ts';
import type { StopSignal } from '../engines/stop.ts';
import { createProvider } from './providers/index.ts';
import { buildSchemaContext, type SchemaContext } from './schema-context.ts';
import { getConnectionFor } from '../access/grants.ts';
import { assertRawAccess } from '../access/scope.ts';

export const MAX_PROMPT_LENGTH = 4000;

export const generateInputSchema = z
  .object({
    connectionId: z.string().min(1).max(200),
    prompt: z.string().trim().min(1, 'must not be empty').max(MAX_PROMPT_LENGTH, `must be at most ${MAX_PROMPT_LENGTH} characters`),
    execute: z.boolean().default(false),
  })
  .strict();
export type GenerateInput = z.output<typeof generateInputSchema>;

export type GenerateResponse = Omit<GenerateResult, 'attempts'> & { attempts: number; result: QueryResult | null };

// Schema contexts are cached per connection for SCHEMA_TTL_MS, keyed by the record's
// updated_at (an edited connection is re-read), and dropped when a write runs through dbq on
// that connection (DDL changes what the generator may reference).
const SCHEMA_TTL_MS = 10 * 60_000;

interface AiState {
  provider: SqlProvider;
  schemas: Map<string, { fingerprint: string; at: number; ctx: Promise<SchemaContext> }>;
}

const states = new WeakMap<Services, AiState>();

function stateOf(svc: Services): AiState {
  let state = states.get(svc);
  if (!state) {
    const ai = svc.config.ai;
    state = {
      provider: createProvider({
        provider: ai.provider,
        baseUrl: ai.baseUrl ?? undefined,
        apiKey: ai.apiKey ?? undefined,
        model: ai.model ?? undefined,
        timeoutMs: ai.timeoutMs,
      }),
      schemas: new Map(),
    };
    const schemas = state.schemas;
    svc.onWrite.add((connectionId) => schemas.delete(connectionId));
    states.set(svc, state);
  }
  return state;
}

/** The schema context of a connection, introspected once and cached. */
export function schemaContextFor(svc: Services, row: ConnectionRow, engine: Engine, refresh = false): Promise<SchemaContext> {
  const { schemas } = stateOf(svc);
  const cached = schemas.get(row.id);
  if (!refresh && cached && cached.fingerprint === row.updated_at && Date.now() - cached.at < SCHEMA_TTL_MS) return cached.ctx;
  const ctx = (async () => {
    const tables = await engine.listTables();
    // Sample reads are introspection, not user queries: read-only mode, short timeout, no history.
    const runRead = async (sql: string) =>
      (await engine.execute({ sql, params: [], readOnly: true, timeoutMs: 5000, maxRows: 100, maxBytes: 1 << 20 })).rows;
    return buildSchemaContext(row.engine, tables, runRead);
  })();
  schemas.set(row.id, { fingerprint: row.updated_at, at: Date.now(), ctx });
  ctx.catch(() => schemas.delete(row.id));
  return ctx;
}

export async function runGenerate(
  svc: Services,
  principal: Principal,
  input: GenerateInput,
  opts: { source: 'api' | 'mcp' | 'ui'; signal?: StopSignal },
): Promise<GenerateResponse> {
  assertRawAccess(principal);
  const row = await getConnectionFor(svc, principal, input.connectionId);
  const engine = svc.pools.get(row);
  // Reads (introspection, samples, validating SQL only reads may run) log in as the reader
  // credentials when the connection has them; a caller who may write validates as the owner.
  const reader = svc.pools.forRead(row);
  const canWrite = principal.user.role === 'admin' && row.read_only === 0;
  const generated = await generateSql(
    {
      provider: stateOf(svc).provider,
      getSchema: () => schemaContextFor(svc, row, reader),
      classify: (sql) => decideStatement(reader, sql),
      validate: (sql) => (canWrite ? engine : reader).validate(sql),
      canWrite,
    },
    input.prompt,
  );
  let result: QueryResult | null = null;
  // Only SQL the database accepted is run; an unvalidated candidate is returned for a human
  // to fix, not executed.
  if (input.execute && generated.validated) {
    result = await runQuery(
      svc,
      principal,
      { connectionId: row.id, sql: generated.sql, params: [], maxRows: 1000, timeoutMs: DEFAULT_STATEMENT_TIMEOUT_MS, rowFormat: 'arrays' },
      // AI-executed SQL is recorded as source `ai` whichever front door asked for it.
      { source: 'ai', signal: opts.signal, readOnly: !canWrite },
    );
  }
  return { ...generated, result };
}
