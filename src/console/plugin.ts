// The web app as one plugin for src/server/front-doors.ts: pages and their JSON
// endpoints at the root (workspace `default`, or the host-form workspace) and under
// /w/:workspace, plus the bundled assets at /ui/assets/ (workspace-independent, so one copy
// serves every workspace and the browser caches it once).
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.ts';
import { auditApiRoutes } from './routes/audit-api.ts';
import { connectionsApiRoutes } from './routes/connections-api.ts';
import { consoleApiRoutes } from './routes/console-api.ts';
import { keysApiRoutes } from './routes/keys-api.ts';
import { oauthApiRoutes } from './routes/oauth-api.ts';
import { pageRoutes } from './routes/pages.ts';
import { passwordApiRoutes } from './routes/password-api.ts';
import { sessionApiRoutes } from './routes/session-api.ts';
import { ssoApiRoutes, ssoPageRoutes } from './routes/sso.ts';
import { toolsApiRoutes } from './routes/tools-api.ts';
import { usersApiRoutes } from './routes/users-api.ts';
import { ASSETS_PREFIX, PAGE_SECURITY_HEADERS, WebShell } from './shell.ts';
import { SignInLimiter } from './sign-in-limiter.ts';
import { webApiHook } from './web-context.ts';

const WEB_PREFIXES = ['', '/w/:workspace'];
const WEB_API_PREFIX = '/ui/api';

export interface WebOptions {
  shell?: WebShell;
  limiter?: SignInLimiter;
}

export function webApp(opts: WebOptions = {}) {
  return async function webPlugin(app: FastifyInstance, svc: Services): Promise<void> {
    const shell = opts.shell ?? new WebShell();
    // One limiter per app (not per module): two apps in one test process keep separate counts.
    const limiter = opts.limiter ?? new SignInLimiter();

    // A browser asking for a page that does not exist gets this page, not the JSON envelope
    // (the root not-found handler in src/http-kit/error-handler.ts calls it).
    app.decorate('notFoundPage', (request: FastifyRequest, reply: FastifyReply) => {
      const slug = /^\/w\/([A-Za-z0-9][A-Za-z0-9-]{0,62})(?:[/?]|$)/.exec(request.url)?.[1]?.toLowerCase() ?? '';
      const html = shell.render({ page: 'not-found', base: slug ? `/w/${slug}` : '', workspace: slug, status: 404 });
      return reply
        .status(404)
        .headers(PAGE_SECURITY_HEADERS)
        .type('text/html; charset=utf-8')
        .send(html ?? shell.notBuilt());
    });

    // File names carry content hashes (Vite), so they can be cached for good. Registered even
    // before a build exists (the plugin only warns), so a later `npm run build:web` is served.
    await app.register(fastifyStatic, {
      root: shell.assetsDir,
      prefix: ASSETS_PREFIX,
      decorateReply: false,
      index: false,
      maxAge: '365d',
      immutable: true,
    });

    for (const prefix of WEB_PREFIXES) {
      await app.register(
        async (scope) => {
          scope.decorateRequest('dbqWeb', null);
          pageRoutes(scope, svc, shell);
          ssoPageRoutes(scope, svc, limiter);
          await scope.register(
            async (api) => {
              api.addHook('onRequest', webApiHook(svc));
              sessionApiRoutes(api, svc, limiter);
              keysApiRoutes(api, svc);
              oauthApiRoutes(api, svc);
              usersApiRoutes(api, svc);
              passwordApiRoutes(api, svc, limiter);
              connectionsApiRoutes(api, svc);
              consoleApiRoutes(api, svc);
              toolsApiRoutes(api, svc);
              auditApiRoutes(api, svc);
              ssoApiRoutes(api, svc);
            },
            { prefix: WEB_API_PREFIX },
          );
        },
        { prefix },
      );
    }
  };
}
