// The 2026-07-28 revision at `{workspace}/mcp` (SDK v2), beside the 2025-era sessions on the
// same URL (streamable-handlers.ts). Which era a request speaks is the SDK's decision
// (`isLegacyRequest`, the very classification its `createMcpHandler` runs), and everything
// the revision defines — `server/discover`, the per-request `_meta` envelope, the
// `Mcp-Method`/`Mcp-Name` headers checked against the body, `ttlMs`/`cacheScope` on list
// results, `subscriptions/listen` — is the SDK's `createMcpHandler`, in its strict mode
// (`legacy: 'reject'`: 2025 traffic never reaches it). Nothing is kept between requests but
// open listen streams, so any process answers any request and no relay is involved.
// dbq's part: the Bearer key → principal before the SDK sees the request, the plan's count,
// and the Fastify request ↔ web Request/Response bridge (the SDK's Node adapter is not a
// dependency; Fastify sends a web Response itself).
import {
  createMcpHandler,
  isLegacyRequest,
  type McpHttpHandler,
  type ServerEvent,
  type ServerEventBus,
} from '@modelcontextprotocol/server';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { modernServerFactory } from './modern-server.ts';
import { authInfoOf } from './sessions.ts';
import type { StreamableRouteOptions } from './streamable-routes.ts';

/** The Fastify request as the web Request the SDK reads: method, URL and headers. The body
 * is not copied: Fastify has parsed it (json-body.ts, with its limits) and it is handed over
 * as `parsedBody`. `signal` aborts the exchange (and a listen stream) when the client goes. */
export function toWebRequest(request: FastifyRequest, signal?: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else headers.set(name, value);
  }
  let url: string;
  try {
    url = new URL(request.url, `${request.protocol}://${request.host}`).href;
  } catch {
    // A Host header no URL accepts: the SDK does not read the URL's host.
    url = new URL(request.url, 'http://localhost').href;
  }
  return new Request(url, { method: request.method, headers, signal });
}

/** The request as the SDK's web Request when the SDK routes it to the 2026-07-28 path (see the
 * module comment), else null. `gone` aborts the exchange (a listen stream too) when the client
 * goes; the same Request is then served, so it is built once. */
export async function modernRequest(request: FastifyRequest, reply: FastifyReply): Promise<Request | null> {
  // No body (GET, DELETE): the 2025 session operations; the SDK says so too, without a Request.
  if (request.method !== 'POST') return null;
  const gone = new AbortController();
  const web = toWebRequest(request, gone.signal);
  if (await isLegacyRequest(web, request.body ?? null)) return null;
  // 'close' comes once more after a normal finish, which writableFinished tells apart.
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) gone.abort();
  });
  return web;
}

/** The workspace's curated tool set, as change events for its open `subscriptions/listen`
 * streams: watched (svc.toolChanges, which sees other processes' changes too) only while at
 * least one stream is open. A stream of the workspace hears of any change of the workspace's
 * tools and re-lists its own; who may see which tool stays decided per tools/list. */
class WorkspaceToolEvents implements ServerEventBus {
  private readonly listeners = new Set<(event: ServerEvent) => void>();
  private unwatch: (() => void) | null = null;

  constructor(
    private readonly svc: Services,
    private readonly workspaceId: string,
  ) {}

  publish(event: ServerEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch {
        // One broken stream does not keep the event from the others.
      }
    }
  }

  subscribe(listener: (event: ServerEvent) => void): () => void {
    this.listeners.add(listener);
    this.unwatch ??= this.svc.toolChanges.subscribe(this.workspaceId, () => this.publish({ kind: 'tools_list_changed' }));
    return () => {
      if (this.listeners.delete(listener) && this.listeners.size === 0) {
        this.unwatch?.();
        this.unwatch = null;
      }
    };
  }
}

/** This process's 2026-07-28 handlers, one per workspace (its listen streams hear only of
 * their own workspace's tools). A handler holds nothing between requests but open streams. */
export class ModernDoor {
  private readonly handlers = new Map<string, McpHttpHandler>();
  /** Each exchange's request logger (with its request id), for the tool calls it makes. */
  readonly logs = new WeakMap<Request, FastifyBaseLogger>();

  constructor(
    private readonly svc: Services,
    private readonly keepAliveMs: number,
  ) {}

  handlerFor(workspaceId: string): McpHttpHandler {
    let handler = this.handlers.get(workspaceId);
    if (!handler) {
      const log = this.svc.logger.child({ transport: 'mcp-2026-07-28' });
      const logOf = (req: Request | undefined) => (req && this.logs.get(req)) || log;
      handler = createMcpHandler(modernServerFactory(this.svc, logOf), {
        legacy: 'reject',
        bus: new WorkspaceToolEvents(this.svc, workspaceId),
        keepAliveMs: this.keepAliveMs,
        // A tool call answers with one JSON body (dbq sends no progress), as on the sessions.
        responseMode: 'auto',
        // What the SDK refused (a header disagreeing with the body, an unknown revision) was
        // answered to the client; the log keeps a line for whoever debugs that client. Anything
        // else reaching here failed inside the SDK and was answered 500.
        onerror: (err) =>
          /^(Rejected|Unsupported)/.test(err.message)
            ? log.info({ reason: err.message }, 'mcp request refused')
            : log.warn({ err }, 'mcp request failed'),
      });
      this.handlers.set(workspaceId, handler);
    }
    return handler;
  }

  /** Shutdown: open listen streams end, in-flight exchanges are aborted. */
  async close(): Promise<void> {
    const all = [...this.handlers.values()];
    this.handlers.clear();
    await Promise.allSettled(all.map((h) => h.close()));
  }
}

export async function serveModern(
  svc: Services,
  opts: StreamableRouteOptions,
  request: FastifyRequest,
  web: Request,
  principal: Principal,
): Promise<Response> {
  const door = (opts.modern.door ??= new ModernDoor(svc, opts.keepAliveMs));
  // The request's own logger (its request id); a child logger per request costs more than
  // the line it would tag.
  door.logs.set(web, request.log);
  return door.handlerFor(principal.workspace.id).fetch(web, { authInfo: authInfoOf(principal), parsedBody: request.body ?? null });
}
