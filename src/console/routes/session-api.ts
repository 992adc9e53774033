// {workspace_url}/ui/api/session|login|logout|setup: sign-in and first-run setup.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ok, parseInput } from '../../http-kit/schema.ts';
import type { Services } from '../../services.ts';
import type { Principal } from '../../workspaces/api-keys.ts';
import { clearSessionCookie, setSessionCookie } from '../cookies.ts';
import { createSession, csrfTokenFor, deleteSession } from '../sessions.ts';
import { redeemSetupToken, workspaceHasUsers } from '../../workspaces/setup-token.ts';
import { checkPassword, startSignedInSession } from '../sign-in.ts';
import type { SignInLimiter } from '../sign-in-limiter.ts';
import { RateLimitedError } from '../../errors.ts';
import { webContextOf, webPrincipal } from '../web-context.ts';
import { inTransaction, recordAudit } from '../../audit/audit.ts';
import { assertPasswordSignInAllowed } from '../../sso/sso-settings.ts';

const loginSchema = z.object({ email: z.string().trim().min(1).max(320), password: z.string().min(1).max(1024) }).strict();
const setupSchema = z
  .object({
    token: z.string().min(1).max(200),
    email: z.string().trim().min(1).max(320),
    password: z.string().min(8, 'must be at least 8 characters').max(1024),
  })
  .strict();

function me(principal: Principal, token: string) {
  return {
    user: principal.user,
    workspace: { slug: principal.workspace.slug },
    csrfToken: csrfTokenFor(token),
  };
}

export function sessionApiRoutes(app: FastifyInstance, svc: Services, limiter: SignInLimiter): void {
  const hide = { hide: true };
  const guard = (request: FastifyRequest, reply: FastifyReply, email: string) => {
    const wait = limiter.retryAfter(request.ip, email);
    if (wait > 0) {
      reply.header('retry-after', String(wait));
      throw new RateLimitedError({ retryAfter: wait }, 'Too many sign-in attempts. Try again later.');
    }
  };

  app.get('/session', { schema: hide, config: { webPublic: true } }, async (request) => {
    const ctx = webContextOf(request);
    if (!ctx.principal || !ctx.session) {
      return ok({ signedIn: false, setupNeeded: !(await workspaceHasUsers(svc.db, ctx.workspace.id)) });
    }
    return ok({ signedIn: true, ...me(ctx.principal, ctx.session.token) });
  });

  app.post('/login', { schema: hide, config: { webPublic: true } }, async (request, reply) => {
    const ctx = webContextOf(request);
    const input = parseInput(loginSchema, request.body);
    // Where single sign-on turned passwords off, no password is even checked.
    await assertPasswordSignInAllowed(svc.db, ctx.workspace.id);
    guard(request, reply, input.email);
    let user;
    try {
      user = await checkPassword(svc.db, ctx.workspace.id, input.email, input.password);
    } catch (err) {
      limiter.recordFailure(request.ip, input.email);
      // Nobody is known: the actor and the target are the email tried (never the password).
      // The limiter above bounds how many of these one address can write.
      // The entry is the whole change, its own transaction.
      const tried = input.email.toLowerCase();
      await inTransaction(svc.db, (trx) =>
        recordAudit(trx, {
          workspaceId: ctx.workspace.id,
          actor: { userId: null, email: tried, keyId: null, ip: request.ip, source: 'ui' },
          action: 'session.sign_in_failed',
          target: { type: 'user', id: null, name: tried },
        }),
      );
      throw err;
    }
    limiter.recordSuccess(request.ip, input.email);
    const { principal, session } = await startSignedInSession(svc, request, reply, ctx, user, 'ui');
    return ok({ signedIn: true, ...me(principal, session.token) });
  });

  app.post('/logout', { schema: hide }, async (request, reply) => {
    const ctx = webContextOf(request);
    webPrincipal(request);
    if (ctx.session) await deleteSession(svc.db, ctx.session.id);
    clearSessionCookie(reply, ctx.cookie);
    return ok({ signedIn: false });
  });

  app.post('/setup', { schema: hide, config: { webPublic: true } }, async (request, reply) => {
    const ctx = webContextOf(request);
    const input = parseInput(setupSchema, request.body);
    // The token has 256 bits, but a bound on tries costs nothing and keeps logs quiet.
    guard(request, reply, 'setup');
    let user;
    try {
      user = await redeemSetupToken(svc.db, ctx.workspace.slug, input, request.ip);
    } catch (err) {
      limiter.recordFailure(request.ip, 'setup');
      throw err;
    }
    const session = await createSession(svc.db, { workspaceId: ctx.workspace.id, userId: user.id });
    setSessionCookie(reply, session.token, session.expiresAt, ctx.cookie);
    const principal: Principal = {
      workspace: { id: ctx.workspace.id, slug: ctx.workspace.slug, plan: ctx.workspace.plan },
      user: { id: user.id, email: user.email, role: user.role, accountRole: user.role },
      apiKey: null,
    };
    return reply.status(201).send(ok({ signedIn: true, ...me(principal, session.token) }));
  });
}
