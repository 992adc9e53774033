// OAuth grants over the API (API.md, "OAuth 2.1 for agents"): the apps a user allowed, and
// revoking one. Everyone sees their own; an admin adds `?all=true` for the workspace's. A
// revoked grant's tokens stop at their next use on every process (src/oauth/grants.ts).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { actorOf } from '../../audit/audit.ts';
import type { Services } from '../../services.ts';
import { grantView, listGrants, revokeGrant } from '../../oauth/grants.ts';
import { principalOf, requireAdmin } from '../../http-kit/auth.ts';
import { ok, parseInput, responses } from '../../http-kit/schema.ts';
import type { RouteOptions } from './index.ts';
import { scopeSchema } from './keys.ts';

export const oauthGrantSchema = z.object({
  id: z.string(),
  client: z.object({
    id: z.string().describe('client_id: a URL (metadata document) or a registered id'),
    name: z.string(),
    redirectHost: z.string(),
  }),
  user: z.object({ id: z.string(), email: z.string() }),
  resource: z.string().describe('{workspace_url}/mcp or {workspace_url}/api: the one resource its tokens serve'),
  scope: scopeSchema.nullable().describe('As a scoped key; null: all of its user'),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  expiresAt: z.string(),
});

const listQuery = z.object({ all: z.enum(['true', 'false']).optional() }).strict();
const idParams = z.object({ id: z.string().min(1).max(200) });

export function oauthGrantRoutes(app: FastifyInstance, svc: Services, { hide }: RouteOptions): void {
  const tags = ['oauth'];

  app.get(
    '/oauth/grants',
    {
      schema: {
        hide,
        tags,
        summary: 'OAuth apps you allowed (admins: `?all=true` for every user of the workspace)',
        querystring: { type: 'object', properties: { all: { type: 'string', enum: ['true', 'false'] } } },
        response: responses(z.object({ grants: z.array(oauthGrantSchema) })),
      },
    },
    async (request) => {
      const p = principalOf(request);
      const { all } = parseInput(listQuery, request.query);
      if (all === 'true') requireAdmin(p);
      const grants = await listGrants(svc.db, p.workspace.id, all === 'true' ? null : p.user.id);
      return ok({ grants: grants.map(grantView) });
    },
  );

  app.post(
    '/oauth/grants/:id/revoke',
    {
      schema: {
        hide,
        tags,
        summary: 'Revoke an OAuth grant (your own; admins: any): its access and refresh tokens stop working',
        response: responses(z.object({ grant: oauthGrantSchema.extend({ revokedAt: z.string().nullable() }) })),
      },
    },
    async (request) => {
      const p = principalOf(request);
      const { id } = parseInput(idParams, request.params);
      const grant = await revokeGrant(svc.db, p, id, actorOf(p, request.ip, 'api'));
      return ok({ grant: { ...grantView(grant), revokedAt: grant.revokedAt } });
    },
  );
}
