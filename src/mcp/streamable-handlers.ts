// The MCP Streamable HTTP transport's handler (route in streamable-routes.ts). Imported on the
// first request, with the SDK, so a server nobody reaches over MCP never loads either.
import { randomUUID } from 'node:crypto';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { InvalidRequestError, NotAcceptableError } from '../errors.ts';
import { lazy } from '../lazy.ts';
import { authenticateRequest, bearerToken } from '../http-kit/auth.ts';
import type { Services } from '../services.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { hashKey } from '../workspaces/key-format.ts';
import { countMessages } from './limits.ts';
import { createMcpServer } from './server.ts';
import { releaseJsonStreams } from './release-json-streams.ts';
import { SessionCalls } from './session-calls.ts';
import {
  admitSession,
  authInfoOf,
  authorizeSessionMessage,
  isRemote,
  sessionLogTag,
  type RemoteSession,
  type SessionTicket,
} from './sessions.ts';
import type { StreamableRouteOptions } from './streamable-routes.ts';

const SESSION_HEADER = 'mcp-session-id';

// SDK v2 comes with the 2026-07-28 handler, on the first request without a session id.
const modernHandlers = lazy(() => import('./modern-handlers.ts'));

export async function handle(
  svc: Services,
  opts: StreamableRouteOptions,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply | void> {
  const key = bearerToken(request);
  const header = request.headers[SESSION_HEADER];
  const sessionId = typeof header === 'string' && header !== '' ? header : undefined;

  let principal: Principal;
  let transport: StreamableHTTPServerTransport | null = null;
  let remote: RemoteSession | null = null;
  if (sessionId === undefined) {
    principal = await authenticateRequest(svc, request, key);
    // A 2026-07-28 request carries no session id; it is answered here and now by SDK v2.
    // Requests naming a session are 2025-era by construction and skip the classification.
    // Only a POST can be one: a GET or DELETE without a session does not load SDK v2 to learn that.
    const modern = request.method === 'POST' ? await modernHandlers() : null;
    const web = modern ? await modern.modernRequest(request, reply) : null;
    if (modern && web) {
      await countMessages(svc, request, reply, principal, request.body);
      return reply.send(await modern.serveModern(svc, opts, request, web, principal));
    }
    if (request.method !== 'POST') throw new InvalidRequestError('Invalid request: Mcp-Session-Id header is required');
    const messages = Array.isArray(request.body) ? request.body : [request.body];
    if (!messages.every((m) => JSONRPCMessageSchema.safeParse(m).success)) {
      throw new InvalidRequestError('Invalid request: body is not a JSON-RPC message');
    }
    if (!messages.some((m) => isInitializeRequest(m))) {
      throw new InvalidRequestError('Invalid request: Mcp-Session-Id header is required (only initialize opens a session)');
    }
  } else {
    let session;
    ({ session, principal } = await authorizeSessionMessage(svc, opts.sessions, request, 'streamable', sessionId, key));
    if (isRemote(session)) remote = session;
    else transport = session.transport as StreamableHTTPServerTransport;
  }
  assertAccepts(request);
  if (request.method === 'POST') await countMessages(svc, request, reply, principal, request.body);
  if (remote) {
    // The session lives in another process: it answers, this one passes the answer on.
    await opts.sessions.requireRelay().forward(request, reply, remote, principal);
    return;
  }
  let ticket: SessionTicket | null = null;
  if (!transport) {
    const owner = { workspaceSlug: principal.workspace.slug, keyId: principal.apiKey?.id ?? null, keyHash: hashKey(key!) };
    ticket = admitSession(opts.sessions, owner, reply);
  }
  try {
    transport ??= await openSession(svc, opts, request, principal, key!, ticket!);
    reply.hijack();
    reply.raw.setHeader('x-request-id', request.id);
    (request.raw as typeof request.raw & { auth?: unknown }).auth = authInfoOf(principal);
    await transport.handleRequest(request.raw, reply.raw, request.body);
  } finally {
    // An initialize the SDK refused opened no session: its place is given back.
    ticket?.release();
  }
}

/** The transport's own Accept rule, answered before it runs: the SDK's refusal is a JSON-RPC
 * body, which a person with curl reads as a protocol error rather than a missing header. */
function assertAccepts(request: FastifyRequest): void {
  if (request.method === 'DELETE') return;
  const accept = request.headers.accept ?? '';
  const needs = request.method === 'POST' ? ['application/json', 'text/event-stream'] : ['text/event-stream'];
  if (needs.every((type) => accept.includes(type))) return;
  throw new NotAcceptableError(
    request.method === 'POST'
      ? 'Not acceptable: an MCP client sends Accept: application/json, text/event-stream'
      : 'Not acceptable: an MCP client opens its event stream with Accept: text/event-stream',
    { accept },
  );
}

async function openSession(
  svc: Services,
  opts: StreamableRouteOptions,
  request: FastifyRequest,
  principal: Principal,
  key: string,
  ticket: SessionTicket,
): Promise<StreamableHTTPServerTransport> {
  // The id is drawn here rather than by the SDK so every line of the session, tool calls
  // included, carries its tag from the start (the id itself never reaches a log).
  const sessionId = randomUUID();
  const log = request.log.child({ transport: 'streamable', mcpSession: sessionLogTag(sessionId) });
  const calls = new SessionCalls();
  const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => sessionId,
    // A tool call answers with one application/json body rather than a one-event SSE stream:
    // dbq sends no progress notifications or server-to-client requests, and the stream costs
    // ~30% more per call (bench/mcp.ts: 1.47x vs 1.16x REST at p50). Calls stay bounded by
    // the statement timeout (30 s) and the AI provider timeout.
    enableJsonResponse: true,
    keepAliveMs: opts.keepAliveMs,
    // Registered when the SDK assigns the id (while handling the initialize request), so the
    // client's next request, which can only come after it has the id, finds the session.
    // The SDK awaits this before answering, so with a relay the session is in Redis before
    // the client has its id.
    onsessioninitialized: async (id) => {
      const now = Date.now();
      await opts.sessions.add(
        {
          id,
          kind: 'streamable',
          workspaceSlug: principal.workspace.slug,
          keyId: principal.apiKey?.id ?? null,
          keyHash: hashKey(key),
          secret: null,
          transport,
          openedAt: now,
          lastSeenAt: now,
          calls,
        },
        ticket,
      );
      log.info({ workspace: principal.workspace.slug, keyId: principal.apiKey?.id, sessions: opts.sessions.size }, 'mcp session opened');
    },
  });
  let closed = false;
  transport.onclose = () => {
    if (closed || !transport.sessionId) return;
    closed = true;
    opts.sessions.remove(transport.sessionId);
    log.info({ sessions: opts.sessions.size }, 'mcp session closed');
  };
  await createMcpServer(svc, log, principal).connect(transport);
  // The SDK keeps every answered or cancelled JSON-mode request until the session closes.
  releaseJsonStreams(transport);
  // From the initialize on, which is thus in flight when the session is registered: one that
  // registers during shutdown closes right after its answer.
  calls.watch(transport);
  return transport;
}
