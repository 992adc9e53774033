// {workspace_url}/ui/api/audit: the audit log page, admins only (listAudit refuses others).
import type { FastifyInstance } from 'fastify';
import { auditQuerySchema, listAudit } from '../../audit/audit-list.ts';
import { ok, parseInput } from '../../http-kit/schema.ts';
import type { Services } from '../../services.ts';
import { webPrincipal } from '../web-context.ts';

export function auditApiRoutes(app: FastifyInstance, svc: Services): void {
  app.get('/audit', { schema: { hide: true } }, async (request) => {
    const p = webPrincipal(request);
    return ok(await listAudit(svc.db, p, parseInput(auditQuerySchema, request.query)));
  });
}
