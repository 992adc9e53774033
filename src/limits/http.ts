// Rate limits at the HTTP front door: the /api hooks that count each request against the
// workspace plan, the failed-authentication limiter authenticateRequest() calls, and the one
// onSend hook that writes RateLimit-* / Retry-After on whatever response the request ends
// with (a 200, a later 4xx/5xx, or the 429 itself). Headers go through onSend rather than
// straight onto the reply because authenticateRequest (shared with MCP) has only the request.
//
// An /api request's count starts as soon as authentication knows the workspace and is awaited
// in preHandler, so the Redis round trip overlaps the body being read and parsed instead of
// adding to it. The handler never runs before the answer, so a refused request does nothing.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RateLimitedError } from '../errors.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { consumeRequest, type LimitState, type Limits } from './limits.ts';

/** Per request: the headers to send, or the count still in flight whose answer gives them.
 * Module-level but not shared state: the key is the request itself, so an entry belongs to
 * one request and goes with it (nothing of a process or a Services object is kept here), and
 * the request's own type stays undecorated for the doors that never count. */
const pending = new WeakMap<FastifyRequest, Record<string, string> | Promise<LimitState>>();

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
export async function enforceRequestLimit(
  svc: { limits: Limits },
  request: FastifyRequest,
  principal: Pick<Principal, 'workspace'>,
  count = 1,
): Promise<LimitState> {
  const state = await consumeRequest(svc, principal, count);
  pending.set(request, limitHeaders(state));
  if (!state.allowed) throw new RateLimitedError();
  return state;
}

/**
 * Starts counting one /api request of `principal` without waiting for the answer;
 * `requestLimitHook` waits for it. Called by the auth hook the moment the principal is known.
 */
export function startRequestLimit(svc: { limits: Limits }, request: FastifyRequest, principal: Pick<Principal, 'workspace'>): void {
  // Enterprise answers without a count: nothing to wait for and no headers to write.
  if (!svc.limits.limited(principal)) return;
  const state = consumeRequest(svc, principal);
  // A rejection (a bug: Redis failures answer from memory) surfaces in requestLimitHook; this
  // only keeps it from also being reported as unhandled when the request ends before that hook.
  state.catch(() => {});
  pending.set(request, state);
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The handler awaits `requestAdmitted(request)` itself, before anything with an effect (a
     * statement, a history entry, an async start), so harmless reads it does first (loading the
     * connection from the store) overlap the count's round trip; requestLimitHook skips it.
     */
    awaitsRequestLimit?: boolean;
  }
}

/** preHandler hook for /api: the last moment the count started by the auth hook can answer. */
export function requestLimitHook() {
  // Callback style: Fastify runs it without an async function's extra promise per request.
  return (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void => {
    const noted = pending.get(request);
    if (!(noted instanceof Promise) || request.routeOptions.config.awaitsRequestLimit === true) return done();
    noted.then((state) => done(state.allowed ? undefined : new RateLimitedError()), done);
  };
}

/**
 * Resolves when the request's count admitted it; rejects with RateLimitedError (429) when it
 * did not. For handlers of routes marked `awaitsRequestLimit`; resolves at once when nothing
 * was counted (an enterprise workspace).
 */
export function requestAdmitted(request: FastifyRequest): Promise<void> {
  const noted = pending.get(request);
  if (!(noted instanceof Promise)) return Promise.resolve();
  const admitted = noted.then((state) => {
    if (!state.allowed) throw new RateLimitedError();
  });
  // Observed here: a handler may fail (a body that does not validate) before it awaits this,
  // and the refusal must not then be reported as unhandled.
  admitted.catch(() => {});
  return admitted;
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
  // Callback style for the same reason as requestLimitHook: it runs on every response.
  app.addHook('onSend', (request, reply, payload, done) => {
    const noted = pending.get(request);
    if (noted === undefined) return done(null, payload);
    if (!(noted instanceof Promise)) {
      reply.headers(noted);
      return done(null, payload);
    }
    // A response can come before preHandler waited for the count (a body that does not parse,
    // 400/413/415): it still carries the headers of the count it made.
    noted.then(
      (state) => {
        reply.headers(limitHeaders(state));
        done(null, payload);
      },
      () => done(null, payload),
    );
  });
}
