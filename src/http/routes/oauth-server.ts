// Each workspace's OAuth 2.1 authorization server and its two protected resources, at the
// addresses API.md fixes ("OAuth 2.1 for agents"):
//   {workspace_url}/oauth/authorize|token|register|revoke|jwks   oidc-provider (src/oauth/provider.ts)
//   /.well-known/oauth-authorization-server/w/{slug}              RFC 8414, path-inserted (root and
//   /.well-known/oauth-authorization-server                       host form: the origin's own)
//   /.well-known/oauth-protected-resource/w/{slug}/mcp|api        RFC 9728 (same rule)
// The consent page the authorization endpoint sends people to is the web app's
// ({workspace_url}/oauth/consent/{uid}, src/console/routes/oauth-api.ts answers its JSON).
//
// oidc-provider is a Koa application: the request is handed to it raw, its URL rewritten to the
// provider's own path (the workspace prefix moved into `originalUrl`, which the library reads
// as its mount path) and the public scheme and host — from DBQ_PUBLIC_URL, else from the
// request as Fastify read it under DBQ_TRUST_PROXY — written into X-Forwarded-* headers that
// replace whatever the client sent, so the addresses it prints are the ones every process names.
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { WorkspaceNotFoundError } from '../../errors.ts';
import type { Services } from '../../services.ts';
import { addressedWorkspace } from '../../http-kit/auth.ts';
import { limitAuthFailure } from '../../limits/http.ts';
import { protectedResourceMetadata, workspacePlace, type ResourceKind, type WorkspacePlace } from '../../oauth/urls.ts';
import { findWorkspace, type Workspace } from '../../workspaces/workspaces.ts';

/** Bodies of the token, revocation and registration endpoints are small; oidc-provider's own limit is 56 KiB. */
const FORM_BODY_LIMIT = 56 * 1024;

const PROVIDER_ROUTES: { path: string; methods: ('GET' | 'POST')[] }[] = [
  { path: '/oauth/authorize', methods: ['GET', 'POST'] },
  { path: '/oauth/authorize/:uid', methods: ['GET'] },
  { path: '/oauth/token', methods: ['POST'] },
  { path: '/oauth/register', methods: ['POST'] },
  { path: '/oauth/revoke', methods: ['POST'] },
  { path: '/oauth/jwks', methods: ['GET'] },
];

async function placeOf(svc: Services, request: FastifyRequest): Promise<{ workspace: Workspace; place: WorkspacePlace }> {
  const slug = addressedWorkspace(request, svc.config.baseDomain);
  const workspace = await findWorkspace(svc.db, slug);
  if (!workspace) throw new WorkspaceNotFoundError();
  const pathForm = !!(request.params as { workspace?: string }).workspace;
  return {
    workspace,
    place: workspacePlace(svc.config, { protocol: request.protocol, host: request.host, slug: workspace.slug, pathForm }),
  };
}

/** Every authorization asks the user anyway; saying so (`prompt=consent`) is what the library
 * needs to honour `offline_access` (an OpenID Connect rule it applies to plain OAuth too), so a
 * client asking for refresh tokens gets them without knowing that rule. */
function askConsent(search: string): string {
  const params = new URLSearchParams(search);
  if (params.has('prompt') || !(params.get('scope') ?? '').split(' ').includes('offline_access')) return search;
  params.set('prompt', 'consent');
  return `?${params.toString()}`;
}

/** Hands the request to the workspace's provider at `innerPath` (its own route table). */
async function toProvider(svc: Services, request: FastifyRequest, reply: FastifyReply, innerPath: string): Promise<void> {
  const { workspace, place } = await placeOf(svc, request);
  const provider = await svc.oauth.providerFor(workspace, place);
  const raw = request.raw as IncomingMessage & { originalUrl?: string; body?: unknown };
  const q = request.url.indexOf('?');
  let search = q === -1 ? '' : request.url.slice(q);
  if (innerPath === '/oauth/authorize') {
    if (request.method === 'GET') search = askConsent(search);
    else if (typeof request.body === 'string') request.body = askConsent(`?${request.body}`).slice(1);
  }
  raw.url = `${innerPath}${search}`;
  raw.originalUrl = `${place.path}${innerPath}${search}`;
  const origin = new URL(place.origin);
  raw.headers['x-forwarded-proto'] = origin.protocol.slice(0, -1);
  raw.headers['x-forwarded-host'] = origin.host;
  raw.headers['x-forwarded-for'] = request.ip;
  // Fastify has read the body already; the library takes a parsed one from `req.body`.
  if (request.body !== undefined) raw.body = request.body;
  reply.hijack();
  reply.raw.setHeader('x-request-id', request.id);
  await new Promise<void>((resolve) => {
    reply.raw.once('finish', resolve);
    reply.raw.once('close', resolve);
    handlerOf(provider)(raw, reply.raw);
  });
}

// Koa's callback() composes the provider's whole middleware chain each time it is called:
// once per provider, not once per request.
type Provider = Awaited<ReturnType<Services['oauth']['providerFor']>>;
const handlers = new WeakMap<Provider, ReturnType<Provider['callback']>>();
function handlerOf(provider: Provider): ReturnType<Provider['callback']> {
  let handler = handlers.get(provider);
  if (handler === undefined) {
    handler = provider.callback();
    handlers.set(provider, handler);
  }
  return handler;
}

export async function oauthServerRoutes(app: FastifyInstance, svc: Services): Promise<void> {
  // application/x-www-form-urlencoded (token, revocation, a POSTed authorization) reaches the
  // provider as text; it parses it itself.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_req, body, done) =>
    done(null, body),
  );

  for (const prefix of ['', '/w/:workspace']) {
    for (const route of PROVIDER_ROUTES) {
      app.route({
        method: route.methods,
        url: `${prefix}${route.path}`,
        schema: { hide: true },
        bodyLimit: FORM_BODY_LIMIT,
        handler: async (request, reply) => {
          // Registration is open (RFC 7591) and each one is a row in the store: registrations
          // from one address share its failed-authentication budget (src/limits/http.ts), so
          // an address cannot fill the store faster than it could guess keys.
          if (route.path === '/oauth/register') await limitAuthFailure(svc, request);
          const uid = (request.params as { uid?: string }).uid;
          await toProvider(svc, request, reply, uid === undefined ? route.path : `/oauth/authorize/${encodeURIComponent(uid)}`);
        },
      });
    }
    // Where some clients look for the issuer's metadata: under the issuer itself.
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      app.get(`${prefix}${path}`, { schema: { hide: true } }, (request, reply) =>
        toProvider(svc, request, reply, '/.well-known/openid-configuration'),
      );
    }
  }
  // RFC 8414's own address: the well-known segment first, then the issuer's path.
  app.get('/.well-known/oauth-authorization-server/w/:workspace', { schema: { hide: true } }, (request, reply) =>
    toProvider(svc, request, reply, '/.well-known/openid-configuration'),
  );

  const resourceMetadata = (kind: ResourceKind) => async (request: FastifyRequest, reply: FastifyReply) => {
    const { place } = await placeOf(svc, request);
    // Public metadata, read by browser-based clients from their own origin.
    return reply
      .header('access-control-allow-origin', '*')
      .header('cache-control', 'max-age=300')
      .send(protectedResourceMetadata(place, kind));
  };
  for (const kind of ['mcp', 'api'] as const) {
    app.get(`/.well-known/oauth-protected-resource/${kind}`, { schema: { hide: true } }, resourceMetadata(kind));
    app.get(`/.well-known/oauth-protected-resource/w/:workspace/${kind}`, { schema: { hide: true } }, resourceMetadata(kind));
  }
}
