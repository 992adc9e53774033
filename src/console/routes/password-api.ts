// {workspace_url}/ui/api/password, /users/{id}/password-link, /set-password: changing your own
// password, an admin's one-time reset link, and redeeming such a link. A password change ends
// every other session of the user (docs/web.md, Passwords).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { InvalidRequestError, NotFoundError, RateLimitedError } from '../../errors.ts';
import { requireAdmin } from '../../http-kit/auth.ts';
import { ok, parseInput } from '../../http-kit/schema.ts';
import type { Services } from '../../services.ts';
import { listUsers, MIN_PASSWORD_LENGTH, setUserPassword } from '../../workspaces/users.ts';
import { issuePasswordToken, PASSWORD_LINK_PATH, redeemPasswordToken } from '../../workspaces/password-token.ts';
import { checkPassword } from '../sign-in.ts';
import type { SignInLimiter } from '../sign-in-limiter.ts';
import { webContextOf, webPrincipal } from '../web-context.ts';

const newPassword = z.string().min(MIN_PASSWORD_LENGTH, `must be at least ${MIN_PASSWORD_LENGTH} characters`).max(1024);
const changeSchema = z.object({ currentPassword: z.string().min(1).max(1024), newPassword }).strict();
const redeemSchema = z.object({ token: z.string().min(1).max(200), password: newPassword }).strict();
const idParams = z.object({ id: z.string().min(1).max(200) });

export function passwordApiRoutes(app: FastifyInstance, svc: Services, limiter: SignInLimiter): void {
  const schema = { hide: true };
  const guard = (request: FastifyRequest, reply: FastifyReply, key: string) => {
    const wait = limiter.retryAfter(request.ip, key);
    if (wait > 0) {
      reply.header('retry-after', String(wait));
      throw new RateLimitedError({ retryAfter: wait }, 'Too many attempts. Try again later.');
    }
  };

  app.post('/password', { schema }, async (request, reply) => {
    const ctx = webContextOf(request);
    const p = webPrincipal(request);
    const input = parseInput(changeSchema, request.body);
    // A stolen session must not be able to guess its way to the password: the same attempt
    // budget as sign-in.
    guard(request, reply, p.user.email);
    try {
      await checkPassword(svc.db, p.workspace.id, p.user.email, input.currentPassword);
    } catch {
      limiter.recordFailure(request.ip, p.user.email);
      throw new InvalidRequestError('The current password is wrong', { field: 'currentPassword' });
    }
    const user = await setUserPassword(svc.db, p.workspace.slug, p.user.email, input.newPassword, { keepSessionId: ctx.session?.id });
    return ok({ user });
  });

  app.post('/users/:id/password-link', { schema }, async (request, reply) => {
    const ctx = webContextOf(request);
    const p = webPrincipal(request);
    requireAdmin(p);
    const { id } = parseInput(idParams, request.params);
    const target = (await listUsers(svc.db, p.workspace.slug)).find((u) => u.id === id);
    if (!target) throw new NotFoundError('User not found');
    const link = await issuePasswordToken(svc.db, p.workspace.slug, target.email);
    const url = `${request.protocol}://${request.host}${ctx.base}${PASSWORD_LINK_PATH}?token=${link.token}`;
    return reply.status(201).send(ok({ user: link.user, url, expiresAt: link.expiresAt }));
  });

  app.post('/set-password', { schema, config: { webPublic: true } }, async (request, reply) => {
    const ctx = webContextOf(request);
    const input = parseInput(redeemSchema, request.body);
    guard(request, reply, 'set-password');
    try {
      const user = await redeemPasswordToken(svc.db, ctx.workspace.slug, input);
      return ok({ user: { email: user.email } });
    } catch (err) {
      limiter.recordFailure(request.ip, 'set-password');
      throw err;
    }
  });
}
