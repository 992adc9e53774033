// POST /ai/generate and the MCP generate_sql tool: wires the provider-independent pipeline
// (generate.ts) to a connection — its cached schema context (svc.ai, ai-state.ts), the
// read-only guard, a dry run on its database — and, with execute:true, runs the SQL through
// the one query path (history source `ai`), so the guard holds whatever the model said.
import { z } from 'zod';
import { DEFAULT_STATEMENT_TIMEOUT_MS } from '../engines/engine.ts';
import type { Services } from '../services.ts';
import { decideStatement } from '../guard/decide.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { runQuery, type QueryResult } from '../query/run.ts';
import { generateSql, type GenerateResult } from './generate.ts';
import type { StopSignal } from '../engines/stop.ts';
import { getConnectionFor } from '../access/grants.ts';
import { assertRawAccess } from '../access/scope.ts';
import { annotationsOf } from '../annotations/annotations.ts';

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
      provider: svc.ai.provider,
      getSchema: async () => svc.ai.annotatedContext(row, reader, await annotationsOf(svc, row.id)),
      classify: (sql) => decideStatement(svc.readGuards.of(reader), sql),
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
