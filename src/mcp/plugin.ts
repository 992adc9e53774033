// The MCP front door: both transports at the root (workspace `default`, or the host-form
// workspace) and under `/w/:workspace`, one session registry, and a clean shutdown. Open SSE
// streams are responses that never end by themselves, so they are closed in `preClose` —
// before Fastify's server.close() waits for in-flight responses — or app.close() would hang.
// With DBQ_REDIS_URL, sessions are registered in Redis and a message for another process's
// session is relayed to it (relay.ts), so a load balancer needs no session affinity.
import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.ts';
import type { McpRelay } from './relay.ts';
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
  /** Relay messages between processes through Redis; default: when DBQ_REDIS_URL is set. */
  relay?: boolean;
  /** Longest wait for the owning process's answer to a relayed message. Default: longer than
   * any tool call may take (statement timeout 30 s + pool wait, or the AI provider timeout). */
  relayTimeoutMs?: number;
}

export const MCP_DEFAULTS = { keepAliveMs: 15_000, idleTimeoutMs: 30 * 60_000 };

export function mcpPlugin(options: McpOptions = {}) {
  return async (app: FastifyInstance, svc: Services): Promise<void> => {
    const sessions = options.sessions ?? new McpSessions();
    const keepAliveMs = options.keepAliveMs ?? MCP_DEFAULTS.keepAliveMs;
    const idleTimeoutMs = options.idleTimeoutMs ?? MCP_DEFAULTS.idleTimeoutMs;
    const { config } = svc;
    let relay: McpRelay | null = null;
    if ((options.relay ?? true) && config.redisUrl) {
      // Only a multi-process deployment (DBQ_REDIS_URL) loads the relay and its Redis client.
      const { McpRelay } = await import('./relay.ts');
      relay = new McpRelay({
        redisUrl: config.redisUrl,
        keyPrefix: config.redisKeyPrefix,
        secretBox: svc.secretBox,
        logger: svc.logger,
        sessions,
        timeoutMs: options.relayTimeoutMs ?? Math.max(30_000 + config.poolAcquireTimeoutMs, config.ai.timeoutMs) + 15_000,
      });
      sessions.relay = relay;
      relay.start();
    }
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
      // Relayed streams written here are open responses too.
      relay?.endStreams();
      await sessions.closeAll();
    });
    // After the server has drained, so replies to relayed messages still in flight arrive.
    if (relay) {
      const r = relay;
      app.addHook('onClose', async () => {
        if (sessions.relay === r) sessions.relay = null;
        await r.close();
      });
    }
  };
}
