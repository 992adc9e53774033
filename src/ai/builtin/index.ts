// The builtin SQL provider: rule-based schema linking, no network and no model weights.
// question → tokens (text.ts) → schema links (link.ts) → plan (parse.ts) → SQL (build-sql.ts).
// What it understands and what it refuses is documented in docs/ai.md.
import type { EngineName } from '../../engines/engine.ts';
import { DbqError, GenerationFailedError } from '../../errors.ts';
import type { ProviderReply, ProviderRequest, SqlProvider } from '../generate.ts';
import type { SchemaContext } from '../schema-context.ts';
import { buildSql, type BuiltSql } from './build-sql.ts';
import { linkQuestion } from './link.ts';
import { parseQuestion } from './parse.ts';
import type { Plan } from './plan.ts';
import { SchemaIndex } from './schema-index.ts';
import { tokenize } from './text.ts';

export { SchemaIndex } from './schema-index.ts';
export type { Plan } from './plan.ts';

/** Words in the longest question the builtin reads. The passes look around each word and
 * some resolve a mention against the whole question, so their cost grows faster than the
 * question; a cap keeps a pasted essay (10,000 words) a quick refusal on the event loop. No
 * question a person asks comes near it. */
export const MAX_QUESTION_WORDS = 100;

/** Parse a question into a plan (throws GenerationFailedError when it has no grounds). */
export function planQuestion(question: string, index: SchemaIndex): Plan {
  const tokens = tokenize(question);
  if (tokens.length > MAX_QUESTION_WORDS)
    throw new GenerationFailedError(
      `the question is too long for the builtin generator (${tokens.length} words, at most ${MAX_QUESTION_WORDS})`,
    );
  const mentions = linkQuestion(tokens, index);
  return parseQuestion(tokens, mentions, index);
}

/** One question → SQL for the dialect, with a one-sentence explanation and the tables used. */
export function generateBuiltinSql(question: string, schema: SchemaContext | SchemaIndex, dialect?: EngineName): BuiltSql {
  const index = schema instanceof SchemaIndex ? schema : new SchemaIndex(schema);
  try {
    const plan = planQuestion(question, index);
    return buildSql(plan, index, dialect ?? index.ctx.engine);
  } catch (err) {
    // A phrase the rules mishandle is still "could not generate" for the caller (422), not
    // an internal error; the refusal names the builtin so the report can be traced.
    if (err instanceof DbqError) throw err;
    throw new GenerationFailedError(`the builtin generator could not handle this question (${(err as Error).message})`);
  }
}

export function createBuiltinProvider(): SqlProvider {
  // The index is derived from the schema object the caller caches; keep one per object.
  const indexes = new WeakMap<SchemaContext, SchemaIndex>();
  return {
    name: 'builtin',
    model: null,
    async generate(req: ProviderRequest): Promise<ProviderReply> {
      let index = indexes.get(req.schema);
      if (!index) {
        index = new SchemaIndex(req.schema);
        indexes.set(req.schema, index);
      }
      const out = generateBuiltinSql(req.prompt, index, req.dialect);
      return { sql: out.sql, explanation: out.explanation, tables: out.tables };
    },
  };
}
