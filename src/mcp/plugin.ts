// The MCP front door: both transports at the root (workspace `default`, or the host-form
// workspace) and under `/w/:workspace`, one session registry, and a clean shutdown. Open SSE
// streams are responses that never end by themselves, so they are closed in `preClose` —
// before Fastify's server.close() waits for in-flight responses — or app.close() would hang.
import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.ts';
import { McpSessions } from './sessions.ts';
import { sseRoutes } from './sse-routes.ts';
import { streamableRoutes } from './streamable-routes.ts';

export interface McpOptions {
  /** Interval of the `: ping` comment lines on SSE streams, so proxies keep idle streams open. */
  keepAliveMs?: number;
  /** A Streamable HTTP session nobody used for this long is closed (clients may never DELETE). */
  idleTimeoutMs?: number;
  /** Passed in by tests that watch sessions come and go. */
  sessions?: McpSessions;
}

export const MCP_DEFAULTS = { keepAliveMs: 15_000, idleTimeoutMs: 30 * 60_000 };

export function mcpPlugin(options: McpOptions = {}) {
  return (app: FastifyInstance, svc: Services): void => {
    const sessions = options.sessions ?? new McpSessions();
    const keepAliveMs = options.keepAliveMs ?? MCP_DEFAULTS.keepAliveMs;
    const idleTimeoutMs = options.idleTimeoutMs ?? MCP_DEFAULTS.idleTimeoutMs;
    sseRoutes(app, svc, { sessions, keepAliveMs });
    streamableRoutes(app, svc, { sessions, keepAliveMs });

    const sweep = setInterval(() => {
      sessions.closeIdle(idleTimeoutMs).then(
        (n) => n > 0 && svc.logger.info({ closed: n, sessions: sessions.size }, 'mcp idle sessions closed'),
        (err) => svc.logger.warn({ err }, 'mcp idle sweep failed'),
      );
    }, Math.min(idleTimeoutMs, 60_000));
    sweep.unref();

    app.addHook('preClose', async () => {
      clearInterval(sweep);
      await sessions.closeAll();
    });
  };
}
