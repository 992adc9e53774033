// The MCP tool list on one screen: each tool file's schemas and handler, registered on a
// session's McpServer with its behaviour hints. Hints are advice for the client's UI (confirm
// before a destructive call); enforcement is the key's permissions inside each handler.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import type { z } from 'zod';
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
import type { DbqTool } from './tool.ts';

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

export function registerTools(server: McpServer, svc: Services, session: ToolSession): void {
  register(server, svc, session, listConnectionsTool, READS);
  register(server, svc, session, listTablesTool, READS);
  register(server, svc, session, describeTableTool, READS);
  register(server, svc, session, searchObjectsTool, READS);
  register(server, svc, session, executeQueryTool, MAY_WRITE);
  register(server, svc, session, getQueryHistoryTool, READS);
  register(server, svc, session, generateSqlTool, MAY_WRITE);
}

function register<I extends z.ZodObject, O extends z.ZodObject>(
  server: McpServer,
  svc: Services,
  session: ToolSession,
  tool: DbqTool<I, O>,
  annotations: ToolAnnotations,
): void {
  const handler = tool.handler(svc);
  // Widened to the plain ZodObject so the SDK's conditional callback type resolves; the SDK
  // has parsed `args` with this very schema before the callback runs.
  const inputSchema: z.ZodObject = tool.inputSchema;
  const config = { title: tool.title, description: tool.description, inputSchema, outputSchema: tool.outputSchema, annotations };
  server.registerTool(tool.name, config, async (args, extra) => {
    const started = performance.now();
    try {
      const principal = await session.principalOf(extra);
      return toToolResult(await handler(args as z.output<I>, { principal, signal: extra.signal }));
    } catch (err) {
      // session.log names the session by its tag; the id itself stays out of logs.
      return toToolError(err, session.log, { tool: tool.name, ms: Math.round(performance.now() - started) });
    }
  });
}
