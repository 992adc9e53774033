// Single sign-on in the web app: {workspace_url}/sso/start sends the browser to the identity
// provider, {workspace_url}/sso/callback finishes there and opens the same cookie session a
// password sign-in opens. A refusal lands on the sign-in page with `?sso_error=<reason>`, a
// word from a fixed list the page turns into a sentence (never text from the URL shown as is).
// Under /ui/api: what the sign-in page offers (public), and the admins' settings page.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { actorOf } from '../../audit/audit.ts';
import { SsoSignInError } from '../../errors.ts';
import { requireAdmin } from '../../http-kit/auth.ts';
import { ok } from '../../http-kit/schema.ts';
import type { Services } from '../../services.ts';
import { CALLBACK_PATH, redirectUriOf } from '../../sso/redirect-uri.ts';
import { finishSsoSignIn, FLOW_COOKIE, startSsoSignIn } from '../../sso/sso-flow.ts';
import { deleteSsoSettings, getSsoSettings, setSsoSettings, ssoSignInOptions, type SsoSettings } from '../../sso/sso-settings.ts';
import type { SignInLimiter } from '../sign-in-limiter.ts';
import { loadWebContext, webContextOf, webPrincipal, type WebContext } from '../web-context.ts';
import { startSignedInSession } from '../sign-in.ts';
import { safeNext } from './pages.ts';

function flowCookie(value: string, maxAgeSeconds: number, path: string, secure: boolean): string {
  const parts = [`${FLOW_COOKIE}=${value}`, `Path=${path}`, `Max-Age=${maxAgeSeconds}`, 'HttpOnly', 'SameSite=Lax'];
  if (secure) parts.push('Secure');
  return parts.join('; ');
}

function flowCookieValue(request: FastifyRequest): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === FLOW_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function redirectUriFor(svc: Services, request: FastifyRequest, ctx: WebContext): string {
  return redirectUriOf(svc.config, ctx.workspace.slug, { protocol: request.protocol, host: request.host, pathForm: ctx.base !== '' });
}

function toLogin(reply: FastifyReply, ctx: WebContext, err: unknown): FastifyReply {
  const reason = err instanceof SsoSignInError ? String(err.details?.reason ?? 'failed') : 'failed';
  return reply.redirect(`${ctx.base}/login?sso_error=${encodeURIComponent(reason)}`, 302);
}

/** The two pages of the sign-in round trip, beside the other pages of each workspace prefix. */
// Refused callbacks count against the address's sign-in budget (shared with passwords, 30 per
// 15 minutes), which also bounds the audit entries an unauthenticated client can cause. Who
// failed is not known before the provider answers, so no per-person count applies: failures
// go under one name and the check under another, leaving only the per-address limit.
const SSO_FAILURE = 'sso:failure';
const SSO_CHECK = 'sso:check';

export function ssoPageRoutes(app: FastifyInstance, svc: Services, limiter: SignInLimiter): void {
  app.get('/sso/start', { schema: { hide: true } }, async (request, reply) => {
    const ctx = await loadWebContext(svc, request, reply);
    reply.header('cache-control', 'no-store');
    const origin = `${request.protocol}://${request.host}`;
    const next = safeNext((request.query as { next?: unknown }).next, ctx.base, origin);
    const redirectUri = redirectUriFor(svc, request, ctx);
    try {
      const started = await startSsoSignIn(svc, ctx.workspace, redirectUri, next);
      const maxAge = Math.floor((started.expiresAt - Date.now()) / 1000);
      reply.header('set-cookie', flowCookie(started.flowCookie, maxAge, new URL(redirectUri).pathname, redirectUri.startsWith('https:')));
      return reply.redirect(started.authorizationUrl, 302);
    } catch (err) {
      if (err instanceof SsoSignInError) request.log.info({ reason: err.details?.reason, err: err.message }, 'single sign-on not started');
      if (!(err instanceof SsoSignInError)) throw err;
      return toLogin(reply, ctx, err);
    }
  });

  app.get(CALLBACK_PATH, { schema: { hide: true } }, async (request, reply) => {
    const ctx = await loadWebContext(svc, request, reply);
    reply.header('cache-control', 'no-store');
    // One use: whatever happens next, the flow's cookie is spent.
    const redirectUri = redirectUriFor(svc, request, ctx);
    reply.header('set-cookie', flowCookie('', 0, new URL(redirectUri).pathname, redirectUri.startsWith('https:')));
    const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?') + 1) : '';
    if (limiter.retryAfter(request.ip, SSO_CHECK) > 0)
      return toLogin(reply, ctx, new SsoSignInError('rate_limited', 'Too many sign-in attempts'));
    let admitted;
    try {
      admitted = await finishSsoSignIn(svc, ctx.workspace, { flowCookie: flowCookieValue(request), query, ip: request.ip });
    } catch (err) {
      limiter.recordFailure(request.ip, SSO_FAILURE);
      if (!(err instanceof SsoSignInError)) throw err;
      request.log.info({ reason: err.details?.reason, err: err.message }, 'single sign-on refused');
      return toLogin(reply, ctx, err);
    }
    await startSignedInSession(svc, request, reply, ctx, admitted.user, 'sso');
    return reply.redirect(admitted.next, 302);
  });
}

/** {workspace_url}/ui/api/sso…: what the sign-in page offers, and the settings page's data. */
export function ssoApiRoutes(app: FastifyInstance, svc: Services): void {
  const schema = { hide: true };
  const view = (request: FastifyRequest, settings: SsoSettings) => ({
    ...settings,
    redirectUri: redirectUriFor(svc, request, webContextOf(request)),
  });

  app.get('/sso', { schema, config: { webPublic: true } }, async (request) => {
    return ok(await ssoSignInOptions(svc.db, webContextOf(request).workspace.id));
  });

  app.get('/sso/settings', { schema }, async (request) => {
    const p = webPrincipal(request);
    requireAdmin(p);
    return ok(view(request, await getSsoSettings(svc.db, p.workspace.slug)));
  });

  app.put('/sso/settings', { schema }, async (request) => {
    const p = webPrincipal(request);
    requireAdmin(p);
    const settings = await setSsoSettings(svc.db, svc.secretBox, p.workspace.slug, request.body, actorOf(p, request.ip, 'ui'), {
      allowHttp: svc.sso.allowHttp,
    });
    svc.sso.forget(p.workspace.id);
    return ok(view(request, settings));
  });

  app.delete('/sso/settings', { schema }, async (request) => {
    const p = webPrincipal(request);
    requireAdmin(p);
    const settings = await deleteSsoSettings(svc.db, p.workspace.slug, actorOf(p, request.ip, 'ui'));
    svc.sso.forget(p.workspace.id);
    return ok(view(request, settings));
  });
}
