// Rate limits at the HTTP front door: the /api hook that counts each request against the
// workspace plan, the failed-authentication limiter authenticateRequest() calls, and the one
// onSend hook that writes RateLimit-* / Retry-After on whatever response the request ends
// with (a 200, a later 4xx/5xx, or the 429 itself). Headers go through onSend rather than
// straight onto the reply because authenticateRequest (shared with MCP) has only the request.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { RateLimitedError } from '../errors.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { consumeRequest, type LimitState, type Limits } from './limits.ts';

const pending = new WeakMap<FastifyRequest, Record<string, string>>();

/** The response headers of a limit answer; none for an unlimited (enterprise) workspace. */
export function limitHeaders(state: LimitState): Record<string, string> {
  if (state.unlimited) return {};
  const headers: Record<string, string> = {
    'RateLimit-Limit': String(state.limit),
    'RateLimit-Remaining': String(state.remaining),
    'RateLimit-Reset': String(state.resetSeconds),
  };
  if (!state.allowed) headers['Retry-After'] = String(state.resetSeconds);
  return headers;
}

/**
 * Counts `count` requests of `principal` (1 per /api request; an MCP POST counts its JSON-RPC
 * messages, all or none) and throws RateLimitedError (429) past the plan's limit; the headers
 * are written on the response either way (by onSend; a hijacked reply sets limitHeaders itself).
 */
export async function enforceRequestLimit(svc: { limits: Limits }, request: FastifyRequest, principal: Pick<Principal, 'workspace'>, count = 1): Promise<LimitState> {
  const state = await consumeRequest(svc, principal, count);
  pending.set(request, limitHeaders(state));
  if (!state.allowed) throw new RateLimitedError();
  return state;
}

/** onRequest hook for /api, registered after the auth hook (it needs request.principal). */
export function requestLimitHook(svc: { limits: Limits }) {
  return async (request: FastifyRequest) => {
    // The auth hook ran first and either set the principal or ended the request.
    if (request.principal) await enforceRequestLimit(svc, request, request.principal);
  };
}

/**
 * Called when a request failed authentication. Past the per-address budget the failure
 * becomes a 429 instead of a 401. Only failures are counted and only failures are refused:
 * a valid key from the same address (an office behind one NAT with one misconfigured client)
 * keeps working. What this buys is a ceiling on how fast one address can try keys.
 */
export async function limitAuthFailure(svc: { limits: Limits }, request: FastifyRequest): Promise<void> {
  // request.ip is the socket's address, or with DBQ_TRUST_PROXY the client's per X-Forwarded-For.
  const state = await svc.limits.recordAuthFailure(request.ip ?? 'unknown');
  if (state.unlimited || state.allowed) return;
  pending.set(request, { 'Retry-After': String(state.resetSeconds) });
  throw new RateLimitedError();
}

/** Registers the onSend hook that writes the noted headers; once, at the root of the app. */
export function sendLimitHeaders(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const headers = pending.get(request);
    if (headers) void reply.headers(headers);
    return payload;
  });
}
