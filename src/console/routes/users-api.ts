// {workspace_url}/ui/api/users: the users page, admins only. Disabling a user here also ends
// their web sessions at once (their API keys stop working through the per-request check).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { InvalidRequestError, NotFoundError } from '../../errors.ts';
import { requireAdmin } from '../../http-kit/auth.ts';
import { ok, parseInput } from '../../http-kit/schema.ts';
import type { Services } from '../../services.ts';
import { createUser, listUsers, ROLES, setUserDisabled, setUserRole, type Role, type User } from '../../workspaces/users.ts';
import { deleteUserSessions } from '../sessions.ts';
import { actorOf } from '../../audit/audit.ts';
import { webPrincipal } from '../web-context.ts';

const roleSchema = z.enum(ROLES as [Role, ...Role[]]);
const createSchema = z
  .object({
    email: z.string().trim().min(3).max(320),
    role: roleSchema,
    password: z.string().min(8, 'must be at least 8 characters').max(1024),
  })
  .strict();
const updateSchema = z.object({ role: roleSchema.optional(), disabled: z.boolean().optional() }).strict();
const idParams = z.object({ id: z.string().min(1).max(200) });

export function usersApiRoutes(app: FastifyInstance, svc: Services): void {
  const schema = { hide: true };

  app.get('/users', { schema }, async (request) => {
    const p = webPrincipal(request);
    requireAdmin(p);
    return ok({ users: await listUsers(svc.db, p.workspace.slug) });
  });

  app.post('/users', { schema }, async (request, reply) => {
    const p = webPrincipal(request);
    requireAdmin(p);
    const user = await createUser(
      svc.db,
      { workspace: p.workspace.slug, ...parseInput(createSchema, request.body) },
      actorOf(p, request.ip, 'ui'),
    );
    return reply.status(201).send(ok({ user }));
  });

  app.patch('/users/:id', { schema }, async (request) => {
    const p = webPrincipal(request);
    requireAdmin(p);
    const { id } = parseInput(idParams, request.params);
    const input = parseInput(updateSchema, request.body);
    const target = (await listUsers(svc.db, p.workspace.slug)).find((u) => u.id === id);
    if (!target) throw new NotFoundError('User not found');
    // An admin locking themselves out (or leaving the workspace without an admin) is always a
    // mistake made from this page; another admin or the CLI can still do it deliberately.
    if (target.id === p.user.id && (input.disabled === true || (input.role && input.role !== 'admin'))) {
      throw new InvalidRequestError('You cannot disable or demote your own account');
    }
    const actor = actorOf(p, request.ip, 'ui');
    let user: User = target;
    if (input.role) user = await setUserRole(svc.db, p.workspace.slug, target.email, input.role, actor);
    if (input.disabled !== undefined) {
      user = await setUserDisabled(svc.db, p.workspace.slug, target.email, input.disabled, actor);
      if (input.disabled) await deleteUserSessions(svc.db, target.id);
    }
    return ok({ user });
  });
}
