// The session cookie, read and written by hand: one cookie, a few attributes, and it lets us
// read every `dbq_session` the browser sends. A browser signed in at the root workspace
// (Path=/) and at /w/acme (Path=/w/acme) sends both cookies to /w/acme/…; each is tried, and
// only the one whose session belongs to the addressed workspace resolves.
import type { FastifyReply, FastifyRequest } from 'fastify';

const SESSION_COOKIE = 'dbq_session';

export function sessionCookieValues(request: FastifyRequest): string[] {
  const header = request.headers.cookie;
  if (!header) return [];
  const values: string[] = [];
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() !== SESSION_COOKIE) continue;
    const value = part.slice(eq + 1).trim();
    if (value) values.push(value);
    // A browser sends at most one per matching path; more than a handful is someone playing.
    if (values.length >= 4) break;
  }
  return values;
}

export interface CookieScope {
  /** "/" for the root (and host-form) workspace, "/w/{slug}" for the path form. */
  path: string;
  secure: boolean;
}

function serialize(value: string, maxAgeSeconds: number, scope: CookieScope): string {
  const parts = [`${SESSION_COOKIE}=${value}`, `Path=${scope.path}`, `Max-Age=${maxAgeSeconds}`, 'HttpOnly', 'SameSite=Lax'];
  if (scope.secure) parts.push('Secure');
  return parts.join('; ');
}

export function setSessionCookie(reply: FastifyReply, token: string, expiresAt: string, scope: CookieScope): void {
  const maxAge = Math.max(0, Math.floor((Date.parse(expiresAt) - Date.now()) / 1000));
  reply.header('set-cookie', serialize(token, maxAge, scope));
}

export function clearSessionCookie(reply: FastifyReply, scope: CookieScope): void {
  reply.header('set-cookie', serialize('', 0, scope));
}
