// {workspace_url}/ui/api/keys: the API keys page. Everyone manages their own keys; admins see
// every key of the workspace, may revoke any, and set the workspace's longest key lifetime.
// The secret is in the create response only (no-store), exactly as with `dbq key create`.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { actorOf } from '../../audit/audit.ts';
import { keyScopeInputShape } from '../../access/scope.ts';
import { listConnectionsFor } from '../../access/grants.ts';
import { NotFoundError } from '../../errors.ts';
import { requireAdmin } from '../../http-kit/auth.ts';
import { ok, parseInput } from '../../http-kit/schema.ts';
import type { Services } from '../../services.ts';
import { createApiKey, deleteRevokedApiKey, listApiKeys, revokeApiKey } from '../../workspaces/api-keys.ts';
import { getWorkspaceSettings, MAX_KEY_DAYS_LIMIT, setMaxKeyDays } from '../../workspaces/workspace-settings.ts';
import { webPrincipal } from '../web-context.ts';

const createSchema = z
  .object({
    name: z.string().trim().min(1, 'is required').max(100),
    ...keyScopeInputShape,
    expiresInDays: z.number().int().min(1).max(3650).optional(),
  })
  .strict();
const idParams = z.object({ id: z.string().min(1).max(200) });
const settingsSchema = z.object({ maxKeyDays: z.number().int().min(1).max(MAX_KEY_DAYS_LIMIT).nullable() }).strict();

export function keysApiRoutes(app: FastifyInstance, svc: Services): void {
  const schema = { hide: true };

  app.get('/keys', { schema }, async (request) => {
    const p = webPrincipal(request);
    const all = p.user.role === 'admin';
    const settings = await getWorkspaceSettings(svc.db, p.workspace.slug);
    return ok({
      apiKeys: await listApiKeys(svc.db, p.workspace.slug, all ? undefined : p.user.id),
      scope: all ? 'workspace' : 'own',
      maxKeyDays: settings.maxKeyDays,
      // The form's connection picker: those this user may use (a key cannot get any other).
      connections: (await listConnectionsFor(svc, p)).map((c) => ({ id: c.id, name: c.name })),
    });
  });

  app.post('/keys', { schema }, async (request, reply) => {
    const p = webPrincipal(request);
    const input = parseInput(createSchema, request.body);
    const created = await createApiKey(
      svc.db,
      {
        workspace: p.workspace.slug,
        email: p.user.email,
        name: input.name,
        scope: { readOnly: input.readOnly, connections: input.connections, toolsOnly: input.toolsOnly, tools: input.tools },
        expiresInDays: input.expiresInDays,
      },
      actorOf(p, request.ip, 'ui'),
    );
    void reply.header('cache-control', 'no-store');
    return reply.status(201).send(ok(created));
  });

  app.post('/keys/:id/revoke', { schema }, async (request) => {
    const p = webPrincipal(request);
    const { id } = parseInput(idParams, request.params);
    // A reader asking for someone else's key gets the same 404 as for a key that does not exist.
    if (p.user.role !== 'admin' && !(await listApiKeys(svc.db, p.workspace.slug, p.user.id)).some((k) => k.id === id)) {
      throw new NotFoundError('API key not found');
    }
    return ok({ apiKey: await revokeApiKey(svc.db, p.workspace.slug, id, actorOf(p, request.ip, 'ui')) });
  });

  // Removes a revoked key from the list; an active key is refused (409). Same ownership rule.
  app.delete('/keys/:id', { schema }, async (request) => {
    const p = webPrincipal(request);
    const { id } = parseInput(idParams, request.params);
    if (p.user.role !== 'admin' && !(await listApiKeys(svc.db, p.workspace.slug, p.user.id)).some((k) => k.id === id)) {
      throw new NotFoundError('API key not found');
    }
    await deleteRevokedApiKey(svc.db, p.workspace.slug, id);
    return ok({ deleted: true });
  });

  app.patch('/workspace', { schema }, async (request) => {
    const p = webPrincipal(request);
    requireAdmin(p);
    const { maxKeyDays } = parseInput(settingsSchema, request.body);
    return ok({ workspace: await setMaxKeyDays(svc.db, p.workspace.slug, maxKeyDays, actorOf(p, request.ip, 'ui')) });
  });
}
