// The URL map on one screen. The API is mounted four times — `/api`, its `/api/v1` alias, and
// both again under `/w/:workspace` — with one auth hook per mount; only `/api` is shown in
// OpenAPI, the others are aliases.
import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.ts';
import { requestLimitHook } from '../../limits/http.ts';
import { apiAuthHook } from '../../http-kit/auth.ts';
import { aiRoutes } from './ai.ts';
import { auditRoutes } from './audit.ts';
import { asyncQueryRoutes } from './async-query.ts';
import { connectionRoutes } from './connections.ts';
import { exportRoutes } from './export.ts';
import { historyRoutes } from './history.ts';
import { objectRoutes } from './objects.ts';
import { queryRoutes } from './query.ts';
import { toolRoutes } from './tools.ts';
import { openapiRoute } from './openapi.ts';
import { keyRoutes } from './keys.ts';
import { workspaceRoutes } from './workspace.ts';
import { grantRoutes } from './grants.ts';
import { oauthGrantRoutes } from './oauth-grants.ts';
import { oauthServerRoutes } from './oauth-server.ts';
import { ssoRoutes } from './sso.ts';
import { annotationRoutes } from './annotations.ts';

export interface RouteOptions {
  hide: boolean;
}

export type ApiRoute = (app: FastifyInstance, svc: Services, opts: RouteOptions) => void;

/** Every /api resource; a new route file is appended here. */
const API_ROUTES: ApiRoute[] = [
  connectionRoutes,
  queryRoutes,
  historyRoutes,
  aiRoutes,
  exportRoutes,
  asyncQueryRoutes,
  objectRoutes,
  keyRoutes,
  workspaceRoutes,
  grantRoutes,
  auditRoutes,
  toolRoutes,
  oauthGrantRoutes,
  ssoRoutes,
  annotationRoutes,
];

const API_PREFIXES = ['/api', '/api/v1', '/w/:workspace/api', '/w/:workspace/api/v1'];

export async function registerApiRoutes(app: FastifyInstance, svc: Services): Promise<void> {
  for (const prefix of API_PREFIXES) {
    const hide = prefix !== '/api';
    await app.register(
      async (scope) => {
        // openapi.json is public (like any API's published description); the rest needs a key.
        openapiRoute(scope, svc, { hide: true });
        await scope.register(async (authed) => {
          authed.addHook('onRequest', apiAuthHook(svc));
          // Auth starts each /api request's count (the plan comes with the principal); this
          // waits for it after the body is parsed, before any handler runs.
          authed.addHook('preHandler', requestLimitHook());
          for (const route of API_ROUTES) route(authed, svc, { hide });
        });
      },
      { prefix },
    );
  }
  // The workspaces' OAuth authorization servers and resource metadata (outside /api: the
  // addresses are fixed by RFC 8414 and RFC 9728).
  await app.register(async (scope) => oauthServerRoutes(scope, svc));
}
