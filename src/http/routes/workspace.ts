// GET|PATCH /workspace: the addressed workspace and the settings its admins change live.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { actorOf } from '../../audit/audit.ts';
import type { Services } from '../../services.ts';
import { getWorkspaceSettings, MAX_KEY_DAYS_LIMIT, setMaxKeyDays } from '../../workspaces/workspace-settings.ts';
import { principalOf, requireAdmin } from '../../http-kit/auth.ts';
import { jsonSchema, ok, parseInput, responses } from '../../http-kit/schema.ts';
import type { RouteOptions } from './index.ts';

const workspaceSchema = z.object({
  slug: z.string(),
  name: z.string(),
  plan: z.enum(['free', 'professional', 'enterprise']),
  maxKeyDays: z.number().nullable().describe('Longest lifetime of a new API key in days; null: no limit'),
});

const patchSchema = z
  .object({ maxKeyDays: z.number().int().min(1).max(MAX_KEY_DAYS_LIMIT).nullable().describe('null removes the limit') })
  .strict();

export function workspaceRoutes(app: FastifyInstance, svc: Services, { hide }: RouteOptions): void {
  const tags = ['workspace'];

  app.get(
    '/workspace',
    {
      schema: {
        hide,
        tags,
        summary: 'The workspace this key belongs to, with its settings',
        response: responses(z.object({ workspace: workspaceSchema })),
      },
    },
    async (request) => ok({ workspace: await getWorkspaceSettings(svc.db, principalOf(request).workspace.slug) }),
  );

  app.patch(
    '/workspace',
    {
      schema: {
        hide,
        tags,
        summary: 'Change workspace settings (admin): maxKeyDays',
        body: jsonSchema(patchSchema),
        response: responses(z.object({ workspace: workspaceSchema })),
      },
    },
    async (request) => {
      const p = principalOf(request);
      requireAdmin(p);
      const { maxKeyDays } = parseInput(patchSchema, request.body);
      return ok({ workspace: await setMaxKeyDays(svc.db, p.workspace.slug, maxKeyDays, actorOf(p, request.ip, 'api')) });
    },
  );
}
