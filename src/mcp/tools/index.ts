// The MCP tool list of a session: the built-in tools (one file each, schemas and handler) and
// the workspace's curated tools (src/tools/tools.ts), each a tool of its own with a JSON
// Schema input built from its parameters. dbq answers tools/list and tools/call itself rather
// than through McpServer.registerTool, because the list is per caller and changes while the
// session is open: it is computed at every tools/list for the principal of that very message
// (its grants, its key's `tools` and `toolsOnly`), so a tools-only key sees only its curated
// tools. Hints are advice for the client's UI; enforcement is in the core functions: a
// curated tool is marked read-only when the guard reads its statement as a read
// (src/tools/tool-hints.ts), destructive otherwise.
// The list and the call are SDK-neutral (`toolsFor`, `callTool`), so the 2025-era sessions
// (SDK v1, `registerTools`) and the stateless 2026-07-28 door (SDK v2, modern-server.ts) serve
// the very same tools.
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type Tool,
  type ToolAnnotations,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import { assertRawAccess } from '../../access/scope.ts';
import { toolsThatRead } from '../../tools/tool-hints.ts';
import { listTools, runTool, type ToolRecord } from '../../tools/tools.ts';
import { zodToInvalidRequest } from '../../zod-error.ts';
import type { Services } from '../../services.ts';
import type { Principal } from '../../workspaces/api-keys.ts';
import { toToolError, toToolResult } from '../tool-result.ts';
import { describeTableTool } from './describe-table.ts';
import { executeQueryTool } from './execute-query.ts';
import { generateSqlTool } from './generate-sql.ts';
import { getQueryHistoryTool } from './get-query-history.ts';
import { listConnectionsTool } from './list-connections.ts';
import { listTablesTool } from './list-tables.ts';
import { searchObjectsTool } from './search-objects.ts';
import type { DbqTool, ToolHandler } from './tool.ts';

const READS: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
// An admin key may run writes and DDL through these two (generate_sql with execute: true).
const MAY_WRITE: ToolAnnotations = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false };

/** What a tool call needs from its session: who sent this message (authenticated for this very
 * message), and where to log. */
export interface ToolSession {
  principalOf(extra: ToolCallExtra): Promise<Principal>;
  log: FastifyBaseLogger;
}

export interface ToolCallExtra {
  signal: AbortSignal;
  sessionId?: string;
  authInfo?: { extra?: Record<string, unknown> };
}

type AnyTool = DbqTool<z.ZodObject, z.ZodObject>;

const BUILTINS: [AnyTool, ToolAnnotations][] = [
  [listConnectionsTool as unknown as AnyTool, READS],
  [listTablesTool as unknown as AnyTool, READS],
  [describeTableTool as unknown as AnyTool, READS],
  [searchObjectsTool as unknown as AnyTool, READS],
  [executeQueryTool as unknown as AnyTool, MAY_WRITE],
  [getQueryHistoryTool as unknown as AnyTool, READS],
  [generateSqlTool as unknown as AnyTool, MAY_WRITE],
];

/** The JSON Schema draft MCP clients read (what the SDK's McpServer emits for zod 4). */
function toJson(schema: z.ZodObject, io: 'input' | 'output'): Tool['inputSchema'] {
  return z.toJSONSchema(schema, { target: 'draft-7', io }) as Tool['inputSchema'];
}

let builtinDefinitions: Tool[] | null = null;

/** Built once per process: the schemas are module constants. */
function builtinTools(): Tool[] {
  builtinDefinitions ??= BUILTINS.map(([tool, annotations]) => ({
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: toJson(tool.inputSchema, 'input'),
    outputSchema: toJson(tool.outputSchema, 'output'),
    annotations,
  }));
  return builtinDefinitions;
}

/** A curated tool as MCP shows it. Its result is the /query shape plus `tool`. */
function curatedToolDefinition(tool: ToolRecord, reads: boolean): Tool {
  return {
    name: tool.name,
    title: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema as Tool['inputSchema'],
    annotations: reads ? READS : MAY_WRITE,
    _meta: { 'dbq/tool': { version: tool.version, connectionId: tool.connectionId, maxRows: tool.maxRows } },
  };
}

/** What tools/list answers this principal. */
export async function toolsFor(svc: Services, principal: Principal): Promise<Tool[]> {
  const records = await listTools(svc, principal);
  const reads = await toolsThatRead(svc, principal.workspace.id, records);
  const curated = records.map((t) => curatedToolDefinition(t, reads.get(t.name) ?? false));
  return principal.apiKey?.scope?.toolsOnly ? curated : [...builtinTools(), ...curated];
}

/** One tools/call, whichever SDK carried it: the built-in tools' own handlers, a curated tool
 * otherwise. A failure is a tool result with isError (tool-result.ts), never a protocol error. */
export type ToolCaller = (
  principal: Principal,
  name: string,
  args: Record<string, unknown>,
  signal: AbortSignal,
  log: FastifyBaseLogger,
) => Promise<CallToolResult>;

export function toolCaller(svc: Services): ToolCaller {
  const handlers = new Map<string, ToolHandler<z.ZodObject>>(BUILTINS.map(([tool]) => [tool.name, tool.handler(svc)]));
  const schemas = new Map<string, z.ZodObject>(BUILTINS.map(([tool]) => [tool.name, tool.inputSchema]));
  return async (principal, name, args, signal, log) => {
    const started = performance.now();
    try {
      const handler = handlers.get(name);
      if (!handler) return toToolResult(await runTool(svc, principal, name, args, { source: 'mcp', signal }));
      // Not listed for a tools-only key, and refused the same way when called anyway.
      assertRawAccess(principal);
      const input = schemas.get(name)!.safeParse(args);
      if (!input.success) throw zodToInvalidRequest(input.error);
      return toToolResult(await handler(input.data, { principal, signal }));
    } catch (err) {
      // The log names the session by its tag (or the request); a session id stays out of logs.
      return toToolError(err, log, { tool: name, ms: Math.round(performance.now() - started) });
    }
  };
}

export function registerTools(server: Server, svc: Services, session: ToolSession): void {
  const call = toolCaller(svc);
  server.registerCapabilities({ tools: { listChanged: true } });

  server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => ({
    tools: await toolsFor(svc, await session.principalOf(extra)),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name } = request.params;
    let principal: Principal;
    try {
      principal = await session.principalOf(extra);
    } catch (err) {
      return toToolError(err, session.log, { tool: name, ms: 0 });
    }
    return call(principal, name, request.params.arguments ?? {}, extra.signal, session.log);
  });
}
