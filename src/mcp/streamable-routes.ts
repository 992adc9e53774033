// The MCP Streamable HTTP endpoint `POST/GET/DELETE {workspace}/mcp`, with the key in
// `Authorization: Bearer` on every request. Two eras share it: a 2026-07-28 request (the
// per-request `_meta` envelope, no session) is answered statelessly by SDK v2
// (modern-handlers.ts); 2025-era clients open a session with an initialize POST without
// `Mcp-Session-Id` (stateful, random UUID ids) and every later request names it and is
// authorised against it (sessions.ts) before the SDK v1 transport sees it.
import type { FastifyInstance } from 'fastify';
import { lazy } from '../lazy.ts';
import type { Services } from '../services.ts';
import type { ModernDoor } from './modern-handlers.ts';
import type { McpSessions } from './sessions.ts';

export interface StreamableRouteOptions {
  sessions: McpSessions;
  keepAliveMs: number;
  /** The 2026-07-28 handlers, made on the first such request (with SDK v2); closed at shutdown. */
  modern: { door: ModernDoor | null };
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
