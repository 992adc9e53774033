// GET|PUT|DELETE /workspace/sso: the workspace's single sign-on (admin). The client secret is
// write-only; `redirectUri` is what to register at the identity provider.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { actorOf } from '../../audit/audit.ts';
import type { Services } from '../../services.ts';
import { redirectUriOf } from '../../sso/redirect-uri.ts';
import { deleteSsoSettings, getSsoSettings, setSsoSettings, ssoInputSchema, type SsoSettings } from '../../sso/sso-settings.ts';
import { principalOf, requireAdmin } from '../../http-kit/auth.ts';
import { jsonSchema, ok, responses } from '../../http-kit/schema.ts';
import type { RouteOptions } from './index.ts';

const ssoSchema = z.object({
  configured: z.boolean().describe('false: no single sign-on; the other fields are their defaults'),
  issuer: z.string().nullable(),
  clientId: z.string().nullable(),
  clientSecretSet: z.boolean().describe('The secret itself is never returned'),
  allowedDomains: z.array(z.string()),
  defaultRole: z.enum(['admin', 'read_only']),
  passwordSignIn: z.boolean(),
  redirectUri: z.string().describe('Register this at the identity provider: {workspace_url}/sso/callback'),
  updatedAt: z.string().nullable(),
});

export function ssoRoutes(app: FastifyInstance, svc: Services, { hide }: RouteOptions): void {
  const tags = ['workspace'];
  const view = (request: FastifyRequest, settings: SsoSettings) => {
    const slug = principalOf(request).workspace.slug;
    const pathForm = Boolean((request.params as { workspace?: string } | undefined)?.workspace);
    return {
      ...settings,
      redirectUri: redirectUriOf(svc.config, slug, { protocol: request.protocol, host: request.host, pathForm }),
    };
  };

  app.get(
    '/workspace/sso',
    {
      schema: {
        hide,
        tags,
        summary: 'Single sign-on settings (admin); the secret is never shown',
        response: responses(ssoSchema),
      },
    },
    async (request) => {
      const p = principalOf(request);
      requireAdmin(p);
      return ok(view(request, await getSsoSettings(svc.db, p.workspace.slug)));
    },
  );

  app.put(
    '/workspace/sso',
    {
      schema: {
        hide,
        tags,
        summary: 'Set single sign-on (admin): OIDC issuer, client, allowed email domains, default role, password sign-in',
        body: jsonSchema(ssoInputSchema),
        response: responses(ssoSchema),
      },
    },
    async (request) => {
      const p = principalOf(request);
      requireAdmin(p);
      const settings = await setSsoSettings(svc.db, svc.secretBox, p.workspace.slug, request.body, actorOf(p, request.ip, 'api'), {
        allowHttp: svc.sso.allowHttp,
      });
      svc.sso.forget(p.workspace.id);
      return ok(view(request, settings));
    },
  );

  app.delete(
    '/workspace/sso',
    {
      schema: {
        hide,
        tags,
        summary: 'Turn single sign-on off (admin); password sign-in works again',
        response: responses(ssoSchema),
      },
    },
    async (request) => {
      const p = principalOf(request);
      requireAdmin(p);
      const settings = await deleteSsoSettings(svc.db, p.workspace.slug, actorOf(p, request.ip, 'api'));
      svc.sso.forget(p.workspace.id);
      return ok(view(request, settings));
    },
  );
}
