// {workspace_url}/ui/api/oauth/…: the server side of the consent page
// ({workspace_url}/oauth/consent/{uid}, where the authorization endpoint sends the browser) and
// of the keys page's "Connected apps". Cookie session and CSRF as every /ui/api route; the
// decision itself is src/oauth/consent.ts. Shapes: .scratch/oauth-interface.md, docs/oauth.md.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { actorOf } from '../../audit/audit.ts';
import { requireAdmin } from '../../http-kit/auth.ts';
import { ok, parseInput } from '../../http-kit/schema.ts';
import { allowInteraction, allowSchema, denyInteraction, describeInteraction } from '../../oauth/consent.ts';
import { grantView, listGrants, revokeGrant } from '../../oauth/grants.ts';
import { workspacePlace } from '../../oauth/urls.ts';
import type { Services } from '../../services.ts';
import { webContextOf, webPrincipal } from '../web-context.ts';

const uidParams = z.object({ uid: z.string().regex(/^[A-Za-z0-9_-]{1,100}$/, 'must be an interaction id') });
const idParams = z.object({ id: z.string().min(1).max(200) });
const listQuery = z.object({ all: z.enum(['true', 'false']).optional() }).strict();

export function oauthApiRoutes(app: FastifyInstance, svc: Services): void {
  const schema = { hide: true };

  /** The workspace's authorization server, at the address this page was reached on. */
  const providerOf = (request: FastifyRequest) => {
    const ctx = webContextOf(request);
    const place = workspacePlace(svc.config, {
      protocol: request.protocol,
      host: request.host,
      slug: ctx.workspace.slug,
      pathForm: ctx.base !== '',
    });
    return svc.oauth.providerFor(ctx.workspace, place);
  };

  app.get('/oauth/interactions/:uid', { schema }, async (request, reply) => {
    const p = webPrincipal(request);
    const { uid } = parseInput(uidParams, request.params);
    void reply.header('cache-control', 'no-store');
    return ok(await describeInteraction(svc, await providerOf(request), p, uid));
  });

  app.post('/oauth/interactions/:uid/allow', { schema }, async (request) => {
    const p = webPrincipal(request);
    const { uid } = parseInput(uidParams, request.params);
    const input = parseInput(allowSchema, request.body);
    const redirectTo = await allowInteraction(svc, await providerOf(request), p, uid, input, actorOf(p, request.ip, 'ui'));
    return ok({ redirectTo });
  });

  app.post('/oauth/interactions/:uid/deny', { schema }, async (request) => {
    webPrincipal(request);
    const { uid } = parseInput(uidParams, request.params);
    return ok({ redirectTo: await denyInteraction(await providerOf(request), uid) });
  });

  app.get('/oauth/grants', { schema }, async (request) => {
    const p = webPrincipal(request);
    const { all } = parseInput(listQuery, request.query);
    if (all === 'true') requireAdmin(p);
    const grants = await listGrants(svc.db, p.workspace.id, all === 'true' ? null : p.user.id);
    return ok({ grants: grants.map(grantView) });
  });

  app.post('/oauth/grants/:id/revoke', { schema }, async (request) => {
    const p = webPrincipal(request);
    const { id } = parseInput(idParams, request.params);
    const grant = await revokeGrant(svc.db, p, id, actorOf(p, request.ip, 'ui'));
    return ok({ grant: { ...grantView(grant), revokedAt: grant.revokedAt } });
  });
}
