// The provider-independent path from a question to checked SQL. Every candidate, whoever
// wrote it, goes through the same read-only guard and a database dry run (EXPLAIN/prepare);
// a failing candidate is sent back to the provider with the error, at most MAX_RETRIES times.
//
// Outcomes after the last attempt:
// - a candidate passed guard and dry run            → returned, validated: true;
// - the guard never passed (rejected, or a write for a caller who may not write)
//                                                    → GenerationFailedError: a read-only
//   caller never receives write SQL, validated or not;
// - some candidate passed the guard but the database refused every one
//                                                    → the last such candidate is returned
//   with validated: false. The SQL is still useful to read and fix by hand, and nothing ran:
//   running it later goes through /query and its own guard.
// Dependencies are passed in (no singletons) so the route, MCP tool and tests share this.
import type { RefusalKind } from '../guard/verdict.ts';
import type { EngineName } from '../engines/engine.ts';
import { DbqError, GenerationFailedError } from '../errors.ts';
import { extractSql } from './extract-sql.ts';
import type { SchemaContext } from './schema-context.ts';

export const MAX_RETRIES = 2;

export interface PreviousAttempt {
  sql: string;
  error: string;
}

export interface ProviderRequest {
  prompt: string;
  schema: SchemaContext;
  dialect: EngineName;
  canWrite: boolean;
  /** Earlier candidates of this request and why each was refused, oldest first. */
  previous?: PreviousAttempt[];
}

export interface ProviderReply {
  sql: string;
  explanation: string;
  tables?: string[];
  /** LLM providers: the tables whose definitions the prompt carried. */
  offered?: string[];
}

export interface SqlProvider {
  name: 'builtin' | 'openai' | 'anthropic';
  model: string | null;
  generate(req: ProviderRequest): Promise<ProviderReply>;
}

export interface GuardVerdict {
  kind: 'read' | 'write' | 'rejected' | 'invalid';
  statementType: string;
  reason?: string;
  /** Why it is not a read, as a kind (`unparseable`: the parser could not read it). */
  refusal?: RefusalKind;
}

export interface GenerateDeps {
  provider: SqlProvider;
  /** Cached by the caller. */
  getSchema(): Promise<SchemaContext>;
  /** The read-only guard for the connection's dialect. */
  classify(sql: string): Promise<GuardVerdict>;
  /** Dry run on the database (EXPLAIN / prepare); throws QueryFailedError when refused. */
  validate(sql: string): Promise<void>;
  /** Admin key on a connection that is not readOnly. */
  canWrite: boolean;
}

export interface GenerateResult {
  sql: string;
  explanation: string;
  dialect: EngineName;
  provider: SqlProvider['name'];
  model: string | null;
  tables: string[];
  /** The tables an LLM was shown (a large schema is cut to what the question needs); null
   * for the builtin, which reads the whole schema. */
  tablesOffered: string[] | null;
  validated: boolean;
  /** How many provider calls it took (1 = first answer accepted). */
  attempts: number;
}

export const READ_ONLY_MESSAGE = 'only read statements (SELECT) are allowed for this caller';

export async function generateSql(deps: GenerateDeps, prompt: string): Promise<GenerateResult> {
  const question = prompt.trim();
  if (question === '') throw new GenerationFailedError('the prompt is empty');
  const schema = await deps.getSchema();
  const dialect = schema.engine;
  const previous: PreviousAttempt[] = [];
  let unvalidated: { sql: string; explanation: string; tables?: string[]; offered?: string[] } | null = null;
  let lastGuardError: string | null = null;
  let attempts = 0;

  for (let attempt = 0; attempt <= MAX_RETRIES; attempt++) {
    attempts++;
    const reply = await deps.provider.generate({
      prompt: question,
      schema,
      dialect,
      canWrite: deps.canWrite,
      previous: previous.length > 0 ? [...previous] : undefined,
    });
    const sql = extractSql(reply.sql);
    // The builtin is deterministic and ignores `previous`: asking again gets the same SQL.
    if (deps.provider.name === 'builtin' && previous.some((p) => p.sql === sql)) break;
    if (sql === '') {
      lastGuardError = 'the reply contained no SQL';
      previous.push({
        sql: reply.sql.slice(0, 2000),
        error: 'No SQL statement found in the reply; answer with one statement in a ```sql fence.',
      });
      continue;
    }
    const verdict = await deps.classify(sql);
    if (verdict.kind === 'rejected' || verdict.kind === 'invalid' || (verdict.kind === 'write' && !deps.canWrite)) {
      const error =
        verdict.kind === 'rejected'
          ? `statement rejected: ${verdict.reason ?? 'not a single valid statement'}`
          : verdict.kind === 'invalid'
            ? `the database cannot compile it: ${verdict.reason ?? 'syntax error'}`
            : verdict.refusal === 'unparseable'
              ? `${READ_ONLY_MESSAGE}, and this SQL could not be parsed as one${verdict.reason ? ` (${verdict.reason})` : ''}`
              : `${READ_ONLY_MESSAGE} (got ${verdict.statementType}${verdict.reason ? `: ${verdict.reason}` : ''})`;
      lastGuardError = error;
      previous.push({ sql, error });
      continue;
    }
    try {
      await deps.validate(sql);
    } catch (err) {
      // Only the database refusing the SQL is something a provider can fix; a lost
      // connection or timeout is not, and surfaces as it is.
      if (!(err instanceof DbqError) || err.code !== 'query_failed') throw err;
      unvalidated = { sql, explanation: reply.explanation, tables: reply.tables, offered: reply.offered };
      previous.push({ sql, error: err.message });
      continue;
    }
    return {
      sql,
      explanation: reply.explanation,
      dialect,
      provider: deps.provider.name,
      model: deps.provider.model,
      tables: reply.tables ?? tablesInSql(sql, schema),
      tablesOffered: reply.offered ?? null,
      validated: true,
      attempts,
    };
  }

  if (unvalidated) {
    return {
      sql: unvalidated.sql,
      explanation: unvalidated.explanation,
      dialect,
      provider: deps.provider.name,
      model: deps.provider.model,
      tables: unvalidated.tables ?? tablesInSql(unvalidated.sql, schema),
      tablesOffered: unvalidated.offered ?? null,
      validated: false,
      attempts,
    };
  }
  throw new GenerationFailedError(lastGuardError ?? 'no acceptable SQL was produced', {
    provider: deps.provider.name,
    attempts,
  });
}

/** Names of schema tables the SQL text mentions as identifiers (best effort, for display). */
export function tablesInSql(sql: string, schema: SchemaContext): string[] {
  const text = sql.replace(/'(?:[^']|'')*'/g, "''");
  const words = new Set([...text.matchAll(/[`"]([^`"]+)[`"]|([A-Za-z_][A-Za-z0-9_$]*)/g)].map((m) => (m[1] ?? m[2]).toLowerCase()));
  return schema.tables.filter((t) => words.has(t.name.toLowerCase())).map((t) => t.name);
}
