// The MCP server of one 2026-07-28 request (SDK v2). The revision has no session: the SDK's
// createMcpHandler builds a server per HTTP request from this factory, for the principal that
// request authenticated as, so any process answers any request. The tools are the sessions'
// own (tools/index.ts: the same list per caller, the same calls); what differs is only the
// protocol layer around them.
import { McpServer, type McpRequestContext, type McpServerFactory } from '@modelcontextprotocol/server';
import type { FastifyBaseLogger } from 'fastify';
import type { Services } from '../services.ts';
import { INSTRUCTIONS, SERVER_INFO } from './server-info.ts';
import { principalFromExtra } from './sessions.ts';
import { toolCaller, toolsFor } from './tools/index.ts';

/** How long a client may serve its cached tools/list. Private: each list is computed for its
 * caller's key (grants, scope, tools-only), so no shared cache may hand it to anyone else;
 * short, so a client without a subscriptions/listen stream sees a changed list soon. A client
 * with one is told at once and drops its cached list (notifications/tools/list_changed). */
export const TOOLS_LIST_TTL_MS = 30_000;

/** `logOf` names the logger of the request being served (its request id on every line). */
export function modernServerFactory(svc: Services, logOf: (request: Request | undefined) => FastifyBaseLogger): McpServerFactory {
  const call = toolCaller(svc);
  return (ctx: McpRequestContext) => {
    const mcp = new McpServer(SERVER_INFO, {
      capabilities: { tools: { listChanged: true } },
      instructions: INSTRUCTIONS,
      cacheHints: { 'tools/list': { ttlMs: TOOLS_LIST_TTL_MS, cacheScope: 'private' } },
    });
    // The route authenticated the request before the SDK saw it (streamable-handlers.ts);
    // a request without a principal would be a wiring bug, and it fails closed.
    const principal = principalFromExtra({ authInfo: ctx.authInfo });
    const log = logOf(ctx.requestInfo);
    // Dropped below McpServer's registry: the list is per caller and read per request.
    mcp.server.setRequestHandler('tools/list', async () => ({ tools: (await toolsFor(svc, principal)) as never }));
    mcp.server.setRequestHandler(
      'tools/call',
      async (request, extra) => call(principal, request.params.name, request.params.arguments ?? {}, extra.mcpReq.signal, log) as never,
    );
    return mcp;
  };
}
