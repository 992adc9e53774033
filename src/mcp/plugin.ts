// The MCP front door: 2026-07-28 requests (stateless, SDK v2) and both 2025-era transports at the root
// workspace) and under `/w/:workspace`, one session registry with its caps (session-caps.ts),
// and a bounded shutdown. Open SSE streams are responses that never end by themselves: on
// SIGTERM each session closes once its calls are answered, and at the end of the grace period
// (or in `preClose`, before Fastify's server.close() waits for in-flight responses) whatever
// is left is closed, or the server would never finish closing.
// With DBQ_REDIS_URL, sessions are registered in Redis and a message for another process's
// session is relayed to it (relay.ts), so a load balancer needs no session affinity. A
// 2026-07-28 request has no session: whichever process gets it answers it, no relay.
import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.ts';
import type { McpRelay } from './relay.ts';
import { DEFAULT_SESSION_CAPS } from './session-caps.ts';
import { McpSessions, sessionLogTag } from './sessions.ts';
import { sseRoutes } from './sse-routes.ts';
import { streamableRoutes, type StreamableRouteOptions } from './streamable-routes.ts';

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

const MCP_DEFAULTS = { keepAliveMs: 15_000, idleTimeoutMs: 30 * 60_000 };

export function mcpPlugin(options: McpOptions = {}) {
  return async (app: FastifyInstance, svc: Services): Promise<void> => {
    const { config } = svc;
    const sessions =
      options.sessions ??
      new McpSessions({ ...DEFAULT_SESSION_CAPS, perKey: config.mcpSessionsPerKey, perWorkspace: config.mcpSessionsPerWorkspace });
    const keepAliveMs = options.keepAliveMs ?? MCP_DEFAULTS.keepAliveMs;
    const idleTimeoutMs = options.idleTimeoutMs ?? MCP_DEFAULTS.idleTimeoutMs;
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
    const modern: StreamableRouteOptions['modern'] = { door: null };
    streamableRoutes(app, svc, { sessions, keepAliveMs, modern });

    sessions.onEvict = (session, reason) =>
      svc.logger.info(
        {
          mcpSession: sessionLogTag(session.id),
          transport: session.kind,
          workspace: session.workspaceSlug,
          keyId: session.keyId,
          reason,
          sessions: sessions.size,
        },
        reason === 'make_room' ? 'mcp session closed to make room for a new one' : 'mcp session closed: idle under pressure',
      );
    // Often enough that sessions idle under pressure (session-caps.ts) go within a quarter of
    // their idle time.
    const sweepEveryMs = Math.min(idleTimeoutMs, sessions.caps.idleUnderPressureMs / 4);
    const sweep = setInterval(() => {
      sessions.closeIdle(idleTimeoutMs).then(
        (n) => n > 0 && svc.logger.info({ closed: n, sessions: sessions.size }, 'mcp idle sessions closed'),
        (err) => svc.logger.warn({ err }, 'mcp idle sweep failed'),
      );
    }, sweepEveryMs);
    sweep.unref();

    // SIGTERM (src/server/server.ts): no new sessions, and each open one closes once its calls
    // are answered, so a tool call in flight gets its answer within the grace period.
    app.shutdownGate.whenStopping(() => {
      clearInterval(sweep);
      sessions.stopAccepting();
    });
    // The grace period is over: whatever is left closes now.
    const closeEverything = async () => {
      clearInterval(sweep);
      // Relayed streams written here are open responses too.
      relay?.endStreams();
      // 2026-07-28 subscriptions/listen streams are open responses as well.
      await Promise.all([sessions.closeAll(), modern.door?.close()]);
    };
    app.shutdownGate.whenCut(() => void closeEverything());
    app.addHook('preClose', closeEverything);
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
