// The MCP tool list of a session: the built-in tools (one file each, schemas and handler) and
// the workspace's curated tools (src/tools/tools.ts), each a tool of its own with a JSON
// Schema input built from its parameters. dbq answers tools/list and tools/call itself rather
// than through McpServer.registerTool, because the list is per caller and changes while the
// session is open: it is computed at every tools/list for the principal of that very message
// (its grants, its key's `tools` and `toolsOnly`), so a tools-only key sees only its curated
// tools. Hints are advice for the client's UI; enforcement is in the core functions.
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type Tool, type ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import { assertRawAccess } from '../../access/scope.ts';
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
function curatedToolDefinition(tool: ToolRecord): Tool {
  return {
    name: tool.name,
    title: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema as Tool['inputSchema'],
    _meta: { 'dbq/tool': { version: tool.version, connectionId: tool.connectionId, maxRows: tool.maxRows } },
  };
}

/** What tools/list answers this principal. */
async function toolsFor(svc: Services, principal: Principal): Promise<Tool[]> {
  const curated = (await listTools(svc, principal)).map(curatedToolDefinition);
  return principal.apiKey?.scope?.toolsOnly ? curated : [...builtinTools(), ...curated];
}

export function registerTools(server: Server, svc: Services, session: ToolSession): void {
  const handlers = new Map<string, ToolHandler<z.ZodObject>>(BUILTINS.map(([tool]) => [tool.name, tool.handler(svc)]));
  const schemas = new Map<string, z.ZodObject>(BUILTINS.map(([tool]) => [tool.name, tool.inputSchema]));
  server.registerCapabilities({ tools: { listChanged: true } });

  server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => ({
    tools: await toolsFor(svc, await session.principalOf(extra)),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name } = request.params;
    const args = request.params.arguments ?? {};
    const started = performance.now();
    try {
      const principal = await session.principalOf(extra);
      const handler = handlers.get(name);
      if (!handler) return toToolResult(await runTool(svc, principal, name, args, { source: 'mcp', signal: extra.signal }));
      // Not listed for a tools-only key, and refused the same way when called anyway.
      assertRawAccess(principal);
      const input = schemas.get(name)!.safeParse(args);
      if (!input.success) throw zodToInvalidRequest(input.error);
      return toToolResult(await handler(input.data, { principal, signal: extra.signal }));
    } catch (err) {
      // session.log names the session by its tag; the id itself stays out of logs.
      return toToolError(err, session.log, { tool: name, ms: Math.round(performance.now() - started) });
    }
  });
}
