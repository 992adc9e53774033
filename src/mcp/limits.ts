// Each JSON-RPC message an MCP client POSTs counts one request against the workspace's plan,
// like one /api request (a batch counts each of its messages). Past the limit the POST is a
// 429 envelope with Retry-After; the RateLimit-* headers go on the raw response themselves,
// because the reply is hijacked for the SDK transport and Fastify's onSend never runs for it.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { enforceRequestLimit, limitHeaders } from '../limits/http.ts';
import type { Services } from '../services.ts';
import type { Principal } from '../workspaces/api-keys.ts';

export async function countMessages(
  svc: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  principal: Principal,
  body: unknown,
): Promise<void> {
  const n = Array.isArray(body) ? Math.max(body.length, 1) : 1;
  // One count of n: the batch fits whole or is refused whole (refused requests are not
  // counted), and it costs one Redis round trip.
  const state = await enforceRequestLimit(svc, request, principal, n);
  for (const [name, value] of Object.entries(limitHeaders(state))) reply.raw.setHeader(name, value);
}
