// The MCP Streamable HTTP transport (current protocol): `POST/GET/DELETE {workspace}/mcp`
// with the key in `Authorization: Bearer` on every request. An initialize POST without
// `Mcp-Session-Id` opens a session (stateful, random UUID ids); every later request names it
// and is authorised against it (sessions.ts) before the SDK transport sees it.
import type { FastifyInstance } from 'fastify';
import { lazy } from '../lazy.ts';
import type { Services } from '../services.ts';
import type { McpSessions } from './sessions.ts';

export interface StreamableRouteOptions {
  sessions: McpSessions;
  keepAliveMs: number;
}

// The SDK comes with the handler, on the first MCP request (src/lazy.ts).
const handlers = lazy(() => import('./streamable-handlers.ts'));

export function streamableRoutes(app: FastifyInstance, svc: Services, opts: StreamableRouteOptions): void {
  for (const base of ['', '/w/:workspace']) {
    app.route({
      method: ['GET', 'POST', 'DELETE'],
      url: `${base}/mcp`,
      schema: { hide: true },
      handler: async (request, reply) => (await handlers()).handle(svc, opts, request, reply),
    });
  }
}
