// GET /audit: the workspace's audit log, for admins (src/audit/audit-list.ts).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { auditQuerySchema, listAudit } from '../../audit/audit-list.ts';
import type { Services } from '../../services.ts';
import { principalOf } from '../../http-kit/auth.ts';
import { jsonSchema, ok, parseInput, responses } from '../../http-kit/schema.ts';
import type { RouteOptions } from './index.ts';

const auditEntrySchema = z.object({
  id: z.string(),
  action: z.string(),
  actor: z.object({ userId: z.string().nullable(), email: z.string().nullable(), keyId: z.string().nullable() }),
  target: z.object({ type: z.string(), id: z.string().nullable(), name: z.string().nullable() }),
  changes: z.record(z.string(), z.unknown()).nullable(),
  ip: z.string().nullable(),
  source: z.enum(['api', 'cli', 'ui', 'sso']),
  createdAt: z.string(),
});

export function auditRoutes(app: FastifyInstance, svc: Services, { hide }: RouteOptions): void {
  app.get(
    '/audit',
    {
      schema: {
        hide,
        tags: ['audit'],
        summary: 'The audit log (admin): who changed who may do what, newest first, keyset-paged; never a secret',
        querystring: jsonSchema(auditQuerySchema),
        response: responses(z.object({ entries: z.array(auditEntrySchema), nextCursor: z.string().nullable() })),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      return ok(await listAudit(svc.db, principal, parseInput(auditQuerySchema, request.query)));
    },
  );
}
