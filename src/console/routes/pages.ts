// HTML pages of the web app. Each answers the same shell (the bundle picks the page from a
// <meta> tag); the server decides who may see what: no session → redirect to /login, a reader
// on the users page → 403, unknown workspace → 404. The data behind each page comes from
// /ui/api, which enforces the same rules again.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DbqError } from '../../errors.ts';
import type { Services } from '../../services.ts';
import { PAGE_SECURITY_HEADERS, type PageName, type WebShell } from '../shell.ts';
import { passwordTokenEmail, PASSWORD_LINK_PATH } from '../../workspaces/password-token.ts';
import { setupTokenUsable, workspaceHasUsers } from '../../workspaces/setup-token.ts';
import { loadWebContext, type WebContext } from '../web-context.ts';

type Access = 'public' | 'signed-in' | 'admin';

const PAGES: { path: string; page: PageName; access: Access }[] = [
  { path: '/', page: 'console', access: 'signed-in' },
  { path: '/settings/api-keys', page: 'api-keys', access: 'signed-in' },
  { path: '/settings/connections', page: 'connections', access: 'signed-in' },
  { path: '/settings/users', page: 'users', access: 'admin' },
  { path: '/settings/audit', page: 'audit', access: 'admin' },
  { path: '/settings/sso', page: 'sso', access: 'admin' },
  { path: '/tools', page: 'tools', access: 'signed-in' },
  { path: '/settings/account', page: 'account', access: 'signed-in' },
  // An OAuth client sent the user here (the authorization endpoint's interaction); signed out,
  // sign-in comes first and returns to this URL.
  { path: '/oauth/consent/:uid', page: 'oauth-consent', access: 'signed-in' },
];

/**
 * Only a path inside this workspace may be a post-sign-in target (no open redirect). Checking
 * the text is not enough: browsers drop tabs and newlines and read `\` as `/` before they
 * resolve a URL, so `/<TAB>/evil.example` is `//evil.example` to them. `next` is resolved the
 * way they resolve it (WHATWG URL) against the workspace's origin, and kept, normalised, only
 * when it stays on that origin and under `base`. The page applies the same rule after its own
 * sign-in form (web/src/next-target.ts).
 */
export function safeNext(next: unknown, base: string, origin: string): string {
  const home = `${base}/`;
  if (typeof next !== 'string' || !next.startsWith('/')) return home;
  try {
    const url = new URL(next, origin);
    const path = url.pathname;
    // `/.//evil.example` normalises to the path `//evil.example`, which as a Location is
    // protocol-relative: another host.
    if (url.origin !== new URL(origin).origin || path.startsWith('//')) return home;
    if (base !== '' && path !== base && !path.startsWith(home)) return home;
    return `${path}${url.search}${url.hash}`;
  } catch {
    return home;
  }
}

export function pageRoutes(app: FastifyInstance, svc: Services, shell: WebShell): void {
  const send = (reply: FastifyReply, status: number, page: PageName, ctx: { base: string; workspace: string }) => {
    const html = shell.render({ page, base: ctx.base, workspace: ctx.workspace, status });
    // Unbuilt bundle: the explanation page, with the status the page would have had.
    return reply
      .status(status)
      .headers(PAGE_SECURITY_HEADERS)
      .type('text/html; charset=utf-8')
      .send(html ?? shell.notBuilt());
  };

  // Unknown workspace: a 404 page rather than the JSON envelope, since a person is reading.
  const context = async (request: FastifyRequest, reply: FastifyReply): Promise<WebContext | null> => {
    try {
      return await loadWebContext(svc, request, reply);
    } catch (err) {
      if (err instanceof DbqError && err.status === 404) {
        const params = request.params as { workspace?: string };
        await send(reply, 404, 'not-found', { base: params.workspace ? `/w/${params.workspace}` : '', workspace: params.workspace ?? '' });
        return null;
      }
      throw err;
    }
  };

  for (const { path, page, access } of PAGES) {
    app.get(path, { schema: { hide: true } }, async (request, reply) => {
      const ctx = await context(request, reply);
      if (!ctx) return reply;
      const shellCtx = { base: ctx.base, workspace: ctx.workspace.slug };
      if (access !== 'public' && !ctx.principal) {
        return reply.redirect(`${ctx.base}/login?next=${encodeURIComponent(request.url)}`, 302);
      }
      if (access === 'admin' && ctx.principal?.user.role !== 'admin') return send(reply, 403, 'forbidden', shellCtx);
      return send(reply, 200, page, shellCtx);
    });
  }

  app.get('/settings', { schema: { hide: true } }, async (request, reply) => {
    const ctx = await context(request, reply);
    if (!ctx) return reply;
    return reply.redirect(`${ctx.base}/settings/api-keys`, 302);
  });

  // The other pages live under /settings, so people guess /settings/tools for the Tools page.
  app.get('/settings/tools', { schema: { hide: true } }, async (request, reply) => {
    const ctx = await context(request, reply);
    if (!ctx) return reply;
    return reply.redirect(`${ctx.base}/tools`, 302);
  });

  app.get('/login', { schema: { hide: true } }, async (request, reply) => {
    const ctx = await context(request, reply);
    if (!ctx) return reply;
    const next = (request.query as { next?: unknown }).next;
    if (ctx.principal) return reply.redirect(safeNext(next, ctx.base, `${request.protocol}://${request.host}`), 302);
    return send(reply, 200, 'login', { base: ctx.base, workspace: ctx.workspace.slug });
  });

  app.get('/setup', { schema: { hide: true } }, async (request, reply) => {
    const ctx = await context(request, reply);
    if (!ctx) return reply;
    const token = (request.query as { token?: unknown }).token;
    // Once anyone exists, setup is over: send people to sign in instead. Someone signed out who
    // opened an old setup link is told why they landed there, rather than silently.
    if (await workspaceHasUsers(svc.db, ctx.workspace.id)) {
      const why = token !== undefined && !ctx.principal ? '?setup=used' : '';
      return reply.redirect(`${ctx.base}/login${why}`, 302);
    }
    const usable = typeof token === 'string' && token.length <= 200 && (await setupTokenUsable(svc.db, ctx.workspace.slug, token));
    return send(reply, usable ? 200 : 403, 'setup', { base: ctx.base, workspace: ctx.workspace.slug });
  });

  // A one-time "set your password" link (password-token.ts): 403 page when wrong, used or expired.
  app.get(PASSWORD_LINK_PATH, { schema: { hide: true } }, async (request, reply) => {
    const ctx = await context(request, reply);
    if (!ctx) return reply;
    const token = (request.query as { token?: unknown }).token;
    const email = typeof token === 'string' && token.length <= 200 ? await passwordTokenEmail(svc.db, ctx.workspace.slug, token) : null;
    return send(reply, email ? 200 : 403, 'set-password', { base: ctx.base, workspace: ctx.workspace.slug });
  });
}
