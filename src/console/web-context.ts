// Per-request context of the web app: which workspace the URL addresses, its base path, and
// the signed-in user (from the session cookie). Pages and /ui/api share it; the hooks below
// are the only place sessions and CSRF are checked, so handlers never repeat that logic.
//
// CSRF defence, in layers:
//  1. SameSite=Lax cookie: cross-site POST/fetch never carries the session.
//  2. Origin / Sec-Fetch-Site: an unsafe request that says it comes from another origin is
//     refused before anything else (this also covers sign-in and setup, which have no session).
//  3. X-CSRF-Token: every unsafe request of a signed-in user must echo the per-session token
//     (an HMAC of the session token), which only a same-origin page can read.
//  4. Unsafe requests with a body must be application/json: a cross-site HTML form can only
//     send urlencoded, multipart or text/plain, and a cross-site fetch with JSON needs a CORS
//     preflight that this server never grants.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CsrfError, InvalidRequestError, SignInRequiredError, WorkspaceNotFoundError } from '../errors.ts';
import type { Services } from '../services.ts';
import { addressedWorkspace } from '../http-kit/auth.ts';
import { enforceRequestLimit } from '../limits/http.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { findWorkspace, type Workspace } from '../workspaces/workspaces.ts';
import { setSessionCookie, sessionCookieValues, type CookieScope } from './cookies.ts';
import { csrfTokenMatches, resolveSession, type WebSession } from './sessions.ts';

export interface WebContext {
  workspace: Workspace;
  /** URL prefix of the workspace: "" at the root (or host form), "/w/{slug}" in the path form. */
  base: string;
  cookie: CookieScope;
  session: WebSession | null;
  principal: Principal | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    dbqWeb: WebContext | null;
  }
  interface FastifyContextConfig {
    /** A /ui/api route usable without a session (sign-in, setup, session probe). */
    webPublic?: boolean;
    /** A /ui/api route that runs work on a database (query, Ask, connection test, schema):
     * it counts one request against the workspace's plan, like an /api request. */
    countsAgainstPlan?: boolean;
  }
}

const CSRF_HEADER = 'x-csrf-token';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

function isUnsafe(request: FastifyRequest): boolean {
  return !SAFE_METHODS.has(request.method);
}

/** Builds the context; throws WorkspaceNotFoundError for an unknown workspace. */
export async function loadWebContext(svc: Services, request: FastifyRequest, reply: FastifyReply): Promise<WebContext> {
  if (request.dbqWeb) return request.dbqWeb;
  const slug = addressedWorkspace(request, svc.config.baseDomain);
  const workspace = await findWorkspace(svc.db, slug);
  if (!workspace) throw new WorkspaceNotFoundError();
  const params = request.params as { workspace?: string } | undefined;
  const base = params?.workspace ? `/w/${workspace.slug}` : '';
  const cookie: CookieScope = { path: base || '/', secure: request.protocol === 'https' };
  const ctx: WebContext = { workspace, base, cookie, session: null, principal: null };
  for (const token of sessionCookieValues(request)) {
    const found = await resolveSession(svc.db, workspace.slug, token);
    if (!found) continue;
    ctx.session = found.session;
    ctx.principal = found.principal;
    // Sliding expiry: the browser's copy of the cookie lives as long as the server's session.
    if (found.session.refreshed) setSessionCookie(reply, found.session.token, found.session.expiresAt, cookie);
    break;
  }
  request.dbqWeb = ctx;
  request.principal = ctx.principal;
  return ctx;
}

export function webContextOf(request: FastifyRequest): WebContext {
  if (!request.dbqWeb) throw new SignInRequiredError();
  return request.dbqWeb;
}

export function webPrincipal(request: FastifyRequest): Principal {
  const principal = request.dbqWeb?.principal;
  if (!principal) throw new SignInRequiredError();
  return principal;
}

function ownOrigin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`.toLowerCase();
}

/** Layers 2 and 4 above; for every unsafe /ui/api request, signed in or not. */
function checkRequestOrigin(request: FastifyRequest): void {
  const site = request.headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') throw new CsrfError(`request from a ${site} page`);
  const origin = request.headers.origin;
  if (origin !== undefined && origin.toLowerCase() !== ownOrigin(request)) throw new CsrfError('origin does not match');
  const hasBody = Number(request.headers['content-length'] ?? 0) > 0 || request.headers['transfer-encoding'] !== undefined;
  const type = (request.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (hasBody && type !== 'application/json') throw new InvalidRequestError('Content-Type must be application/json');
}

/** Layer 3: the session's CSRF token in X-CSRF-Token. */
function checkCsrfToken(request: FastifyRequest): void {
  const session = request.dbqWeb?.session;
  if (!session) throw new SignInRequiredError();
  const presented = request.headers[CSRF_HEADER];
  if (!csrfTokenMatches(session.token, typeof presented === 'string' ? presented : undefined))
    throw new CsrfError('token missing or wrong');
}

/** onRequest hook of the /ui/api scope. */
export function webApiHook(svc: Services) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    reply.header('cache-control', 'no-store');
    await loadWebContext(svc, request, reply);
    const unsafe = isUnsafe(request);
    if (unsafe) checkRequestOrigin(request);
    if (request.routeOptions.config?.webPublic) return;
    const principal = webPrincipal(request);
    if (unsafe) checkCsrfToken(request);
    // The console is a front door like REST and MCP: its work takes from the same per-workspace
    // budget and is refused past it with the same 429 and RateLimit-*/Retry-After headers.
    // Settings (keys, users, session) do not count, so an admin can still revoke a key.
    if (request.routeOptions.config?.countsAgainstPlan) await enforceRequestLimit(svc, request, principal);
  };
}
