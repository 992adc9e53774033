// Authentication hook for /api: Bearer key or OAuth access token → principal, checked against
// the workspace the URL addresses. Every failure is the same 401, so a caller cannot tell a
// revoked key from an unknown one, nor learn which workspaces exist.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { InsufficientPermissionsError, InvalidApiKeyError } from '../errors.ts';
import { limitAuthFailure, startRequestLimit } from '../limits/http.ts';
import type { Services } from '../services.ts';
import { authenticateKey, type Principal } from '../workspaces/api-keys.ts';
import { DEFAULT_WORKSPACE } from '../workspaces/workspaces.ts';
import { getConnectionFor } from '../access/grants.ts';
import { assertAdmin } from '../access/scope.ts';
import { authenticateAccessToken, looksLikeAccessToken } from '../oauth/grants.ts';
import { resourceMetadataUrl, workspacePlace, type ResourceKind } from '../oauth/urls.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
    /** Set when authentication failed: the 401's `WWW-Authenticate` (src/http-kit/error-handler.ts). */
    authChallenge?: string;
  }
}

export function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (!header) return null;
  const match = /^bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : null;
}

/** The workspace a request addresses: `/w/{slug}/…`, else `{slug}.{DBQ_BASE_DOMAIN}`, else `default`. */
export function addressedWorkspace(request: FastifyRequest, baseDomain: string | null): string {
  const params = request.params as { workspace?: string } | undefined;
  if (params?.workspace) return params.workspace.toLowerCase();
  if (baseDomain) {
    const host = (request.hostname ?? '').toLowerCase().replace(/:\d+$/, '');
    if (host.endsWith(`.${baseDomain}`)) {
      const slug = host.slice(0, -(baseDomain.length + 1));
      if (slug && !slug.includes('.')) return slug;
    }
  }
  return DEFAULT_WORKSPACE;
}

/** Which of the workspace's OAuth resources a request is for: the REST API, else MCP (`/mcp`,
 * and the 2024-era `/sse` and `/messages`, which serve the same tools). */
function resourceKindOf(request: FastifyRequest): ResourceKind {
  return /^(?:\/w\/[^/?]+)?\/api(?:[/?]|$)/.test(request.url) ? 'api' : 'mcp';
}

/** RFC 9728 §5.1: a 401 names the resource's metadata, where an OAuth client starts. */
function challengeFor(svc: Services, request: FastifyRequest, presented: boolean): string {
  const place = workspacePlace(svc.config, {
    protocol: request.protocol,
    host: request.host,
    slug: addressedWorkspace(request, svc.config.baseDomain),
    pathForm: !!(request.params as { workspace?: string } | undefined)?.workspace,
  });
  const error = presented ? ', error="invalid_token"' : '';
  return `Bearer realm="dbq"${error}, resource_metadata="${resourceMetadataUrl(place, resourceKindOf(request))}"`;
}

export async function authenticateRequest(svc: Services, request: FastifyRequest, key: string | null): Promise<Principal> {
  try {
    // An API key (`dbq_…`), else an OAuth access token for this resource (src/oauth/grants.ts).
    const principal =
      key !== null && looksLikeAccessToken(key)
        ? await authenticateAccessToken(svc.db, key, resourceKindOf(request), svc.store.memo)
        : await authenticateKey(svc.db, key, svc.store.memo);
    if (principal.workspace.slug !== addressedWorkspace(request, svc.config.baseDomain)) throw new InvalidApiKeyError();
    request.principal = principal;
    return principal;
  } catch (err) {
    // Failed attempts are counted per client address; past the budget they become 429.
    if (err instanceof InvalidApiKeyError) {
      request.authChallenge = challengeFor(svc, request, key !== null);
      await limitAuthFailure(svc, request);
    }
    throw err;
  }
}

export function apiAuthHook(svc: Services) {
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    const principal = await authenticateRequest(svc, request, bearerToken(request));
    // The plan's count starts now; the preHandler requestLimitHook waits for its answer.
    startRequestLimit(svc, request, principal);
  };
}

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new InvalidApiKeyError();
  return request.principal;
}

/** Workspace administration (src/access/scope.ts assertAdmin). */
export function requireAdmin(principal: Principal): void {
  assertAdmin(principal);
}

/** Administration of one connection: also within the key's connection scope. */
export async function requireConnectionAdmin(svc: Services, principal: Principal, idOrName: string): Promise<void> {
  requireAdmin(principal);
  await getConnectionFor(svc, principal, idOrName);
}

/** Creating a connection widens what exists: not for a key narrowed to some connections. */
export function requireUnscopedAdmin(principal: Principal): void {
  requireAdmin(principal);
  if (principal.apiKey?.scope?.connections) throw new InsufficientPermissionsError({ reason: 'this key is limited to its connections' });
}
