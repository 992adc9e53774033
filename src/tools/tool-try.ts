// Trying a tool before it is saved: the tool editor's "Try it". The draft is checked exactly as
// a create would check it (parameters, placeholders, the connection's guard) and run once with
// the given values through runQuery, like a saved tool's run; nothing is stored but the query's
// history entry (the SQL as it ran, no tool name: there is no version to name).
//
// Admins only — they may run any SQL on their connections anyway, so a draft opens nothing new.
// A draft whose statement writes is run only with `allowWrite: true`: an editor's "try" must not
// change data by surprise, so the first attempt answers 400 `write_needs_confirmation` and the
// editor asks before sending it again.
import { z } from 'zod';
import { InvalidRequestError } from '../errors.ts';
import type { QueryResult, RunOptions } from '../query/run.ts';
import type { Services } from '../services.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import type { ToolParameter } from './tool-params.ts';
import { createToolSchema, guard, parseOr400, resolveConnection, runDefinition, validateDefinition } from './tools.ts';

/** The name a nameless draft is checked under (a name is not needed to try it). */
const DRAFT_NAME = 'draft';

export const tryToolSchema = z
  .object({
    tool: z.record(z.string(), z.unknown()),
    params: z.record(z.string(), z.unknown()).default({}),
    allowWrite: z.boolean().default(false),
  })
  .strict();

export type ToolTryResult = QueryResult & { statementKind: 'read' | 'write' };

export async function tryToolDraft(
  svc: Services,
  principal: Principal,
  input: unknown,
  opts: Pick<RunOptions, 'source' | 'signal' | 'controller' | 'admitted'>,
): Promise<ToolTryResult> {
  guard(principal);
  const { tool, params, allowWrite } = parseOr400(tryToolSchema, input);
  const draft = parseOr400(createToolSchema, { name: DRAFT_NAME, ...tool });
  const connection = await resolveConnection(svc, principal, draft.connectionId);
  const parameters = draft.parameters as ToolParameter[];
  const kind = await validateDefinition(svc, connection, draft.sql, parameters);
  if (kind === 'write' && !allowWrite) {
    throw new InvalidRequestError('This statement changes data: trying it runs it for real. Confirm to run it anyway.', {
      reason: 'write_needs_confirmation',
    });
  }
  const result = await runDefinition(svc, principal, { connection, sql: draft.sql, parameters, maxRows: draft.maxRows }, params, opts);
  return { ...result, statementKind: kind };
}
