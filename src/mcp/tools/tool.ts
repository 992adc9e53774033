// The shape every dbq MCP tool file exports: a zod input schema (what the model may send), a
// zod output schema (the API's `data` object it gets back as structuredContent) and a handler
// factory taking the core services. The handler calls the same core function the REST route
// calls, with the principal authenticated for this very message, so permissions, the guard,
// value encoding and history cannot drift between the two front doors.
import type { z } from 'zod';
import type { Services } from '../../services.ts';
import type { Principal } from '../../workspaces/api-keys.ts';

export interface ToolContext {
  principal: Principal;
  /** Aborted when the client cancels the call or its session closes; cancels the statement. */
  signal: AbortSignal;
}

/** Resolves to the API's `data` object. Its shape is checked against `outputSchema` on every
 * call by the SDK (and by clients), not here: the output schemas are loose on purpose. */
export type ToolHandler<I extends z.ZodObject> = (args: z.output<I>, ctx: ToolContext) => Promise<object>;

export interface DbqTool<I extends z.ZodObject, O extends z.ZodObject> {
  name: string;
  title: string;
  /** Written for a model: what the tool returns, its limits, what is refused. */
  description: string;
  inputSchema: I;
  outputSchema: O;
  handler(svc: Services): ToolHandler<I>;
}
