// The MCP HTTP+SSE transport's handlers (routes in sse-routes.ts). Imported on the first
// request, with the SDK, so a server nobody reaches over MCP never loads either.
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { InvalidRequestError, ShuttingDownError } from '../errors.ts';
import { authenticateRequest, bearerToken } from '../http-kit/auth.ts';
import type { Services } from '../services.ts';
import { hashKey } from '../workspaces/key-format.ts';
import { countMessages } from './limits.ts';
import { createMcpServer } from './server.ts';
import { SessionCalls } from './session-calls.ts';
import { admitSession, authInfoOf, authorizeSessionMessage, isRemote, sessionLogTag } from './sessions.ts';
import type { SseRouteOptions } from './sse-routes.ts';

const sseQuery = z.object({ api_key: z.string().max(200).optional() }).loose();
const messagesQuery = z.object({ sessionId: z.string().max(200).optional() }).loose();

export async function openStream(svc: Services, opts: SseRouteOptions, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  // The header form is preferred (a URL can end up in proxy and browser logs); the query
  // parameter is for clients that can only be given a URL. Both are redacted from dbq's logs.
  // A malformed parameter (repeated, overlong) is just a bad key: the same 401.
  const key = bearerToken(request) ?? sseQuery.safeParse(request.query ?? {}).data?.api_key ?? null;
  const principal = await authenticateRequest(svc, request, key);
  // Relative to the origin: `/messages` at the root (and on a host-form workspace address),
  // `/w/{slug}/messages` on the path form.
  const base = (request.params as { workspace?: string }).workspace ? `/w/${principal.workspace.slug}` : '';
  const owner = { workspaceSlug: principal.workspace.slug, keyId: principal.apiKey?.id ?? null, keyHash: hashKey(key!) };
  // Before the stream opens, so a refusal is an envelope; nothing awaits between here and add().
  const ticket = admitSession(opts.sessions, owner, reply);

  reply.hijack();
  const res = reply.raw;
  res.setHeader('x-request-id', request.id);
  // nginx and similar buffer responses unless told not to, which would hold events back.
  res.setHeader('x-accel-buffering', 'no');
  const transport = new SSEServerTransport(`${base}/messages`, res);
  const sessionId = transport.sessionId;
  const log = request.log.child({ mcpSession: sessionLogTag(sessionId), transport: 'sse' });
  const keepAlive = setInterval(() => {
    if (!res.writableEnded) res.write(': ping\n\n');
  }, opts.keepAliveMs);
  keepAlive.unref();
  let closed = false;
  // The SDK calls onclose from close() and again when the response then emits 'close'.
  transport.onclose = () => {
    if (closed) return;
    closed = true;
    clearInterval(keepAlive);
    opts.sessions.remove(sessionId);
    log.info({ sessions: opts.sessions.size }, 'mcp session closed');
  };
  const now = Date.now();
  const calls = new SessionCalls();
  // Registered (in Redis too, with a relay) before the endpoint event goes out, so the
  // client's first POST finds the session whichever process it reaches.
  await opts.sessions.add({ ...owner, id: sessionId, kind: 'sse', secret: key, transport, openedAt: now, lastSeenAt: now, calls }, ticket);
  if (res.destroyed) {
    // The client left while the session was being registered: the transport never saw the
    // response's 'close', so it would never call onclose.
    transport.onclose?.();
    return;
  }
  if (closed) {
    // Shutdown began while the session was being registered (with a relay, a Redis round trip)
    // and closed it before its stream started: nothing else would end this response.
    const refusal = new ShuttingDownError();
    res.writeHead(503, {
      'content-type': 'application/json; charset=utf-8',
      'retry-after': String(ShuttingDownError.RETRY_AFTER_SECONDS),
      connection: 'close',
    });
    res.end(JSON.stringify({ success: false, error: refusal.message, code: refusal.code }));
    return;
  }
  const server = createMcpServer(svc, log, principal);
  try {
    await server.connect(transport);
    calls.watch(transport);
  } catch (err) {
    opts.sessions.remove(sessionId);
    clearInterval(keepAlive);
    log.error({ err }, 'mcp sse stream failed to start');
    res.destroy();
    return;
  }
  log.info({ workspace: principal.workspace.slug, keyId: principal.apiKey?.id, sessions: opts.sessions.size }, 'mcp session opened');
}

export async function postMessage(svc: Services, opts: SseRouteOptions, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const { sessionId } = messagesQuery.parse(request.query ?? {});
  if (!sessionId) throw new InvalidRequestError('Invalid request: sessionId is required', { field: 'sessionId' });
  const { session, principal } = await authorizeSessionMessage(svc, opts.sessions, request, 'sse', sessionId, bearerToken(request));
  // Checked here so a malformed message gets the dbq envelope rather than the SDK's plain text.
  if (!JSONRPCMessageSchema.safeParse(request.body).success)
    throw new InvalidRequestError('Invalid request: body is not a JSON-RPC message');
  await countMessages(svc, request, reply, principal, request.body);
  if (isRemote(session)) {
    // Another process holds the stream: it takes the message, the answer goes out on its stream.
    await opts.sessions.requireRelay().forward(request, reply, session, principal);
    return;
  }
  const transport = session.transport as SSEServerTransport;
  reply.hijack();
  reply.raw.setHeader('x-request-id', request.id);
  (request.raw as typeof request.raw & { auth?: unknown }).auth = authInfoOf(principal);
  try {
    await transport.handlePostMessage(request.raw, reply.raw, request.body);
  } catch (err) {
    // The stream closed between the session check and now; the SDK has answered already.
    request.log.info({ err, mcpSession: sessionLogTag(session.id) }, 'mcp message to a closing session');
  }
}
