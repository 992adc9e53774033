// The MCP HTTP+SSE transport (protocol 2024-11-05), for the clients that still speak it:
// `GET {workspace}/sse` opens the stream (key as Bearer header, or `?api_key=` for clients
// that can only be given a URL), its first event names `{workspace}/messages?sessionId=…`,
// and the client POSTs JSON-RPC there; answers travel back on the stream.
import type { FastifyInstance } from 'fastify';
import { lazy } from '../lazy.ts';
import type { Services } from '../services.ts';
import type { McpSessions } from './sessions.ts';

export interface SseRouteOptions {
  sessions: McpSessions;
  keepAliveMs: number;
}

// The SDK comes with the handlers, on the first MCP request (src/lazy.ts).
const handlers = lazy(() => import('./sse-handlers.ts'));

export function sseRoutes(app: FastifyInstance, svc: Services, opts: SseRouteOptions): void {
  for (const base of ['', '/w/:workspace']) {
    app.get(`${base}/sse`, { schema: { hide: true } }, async (request, reply) => (await handlers()).openStream(svc, opts, request, reply));
    app.post(`${base}/messages`, { schema: { hide: true } }, async (request, reply) =>
      (await handlers()).postMessage(svc, opts, request, reply),
    );
  }
}
