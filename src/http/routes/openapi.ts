import type { FastifyInstance, FastifyRequest } from 'fastify';
import { WorkspaceNotFoundError } from '../../errors.ts';
import type { Services } from '../../services.ts';
import { findWorkspace } from '../../workspaces/workspaces.ts';
import { addressedWorkspace } from '../../http-kit/auth.ts';
import type { RouteOptions } from './index.ts';

/** Unauthenticated pages still answer 404 for a workspace that does not exist. */
export async function assertWorkspaceExists(svc: Services, request: FastifyRequest): Promise<void> {
  if (!(await findWorkspace(svc.db, addressedWorkspace(request, svc.config.baseDomain)))) throw new WorkspaceNotFoundError();
}

export function openapiRoute(app: FastifyInstance, svc: Services, { hide }: RouteOptions): void {
  app.get('/openapi.json', { schema: { hide } }, async (request, reply) => {
    await assertWorkspaceExists(svc, request);
    // Served bare (not in the envelope): tools that read OpenAPI expect the document itself.
    return reply.type('application/json').send(JSON.stringify((app as any).swagger()));
  });
}
