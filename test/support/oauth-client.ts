// A small OAuth 2.1 client over fetch, for driving dbq's authorization server the way an agent
// does (discovery from a 401, registration, authorization code + PKCE, token, refresh,
// revocation), with the consent step answered through the console's JSON API by a signed-in
// user instead of a browser (the Chromium run is test/oauth-consent-e2e.test.ts).
import { createHash, randomBytes } from 'node:crypto';

export class CookieJar {
  private readonly cookies = new Map<string, string>();
  take(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (/expires=Thu, 01 Jan 1970/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export interface Metadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  registration_endpoint: string;
  revocation_endpoint: string;
  code_challenge_methods_supported: string[];
  [k: string]: unknown;
}

export async function discover(resourceUrl: string): Promise<{ challenge: string; prm: any; as: Metadata }> {
  const unauth = await fetch(resourceUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  if (unauth.status !== 401) throw new Error(`expected 401 from ${resourceUrl}, got ${unauth.status}`);
  const challenge = unauth.headers.get('www-authenticate') ?? '';
  const prmUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
  if (!prmUrl) throw new Error(`no resource_metadata in ${challenge}`);
  const prm = (await (await fetch(prmUrl)).json()) as any;
  const issuer = new URL(prm.authorization_servers[0]);
  const asUrl = `${issuer.origin}/.well-known/oauth-authorization-server${issuer.pathname === '/' ? '' : issuer.pathname}`;
  const asRes = await fetch(asUrl);
  if (asRes.status !== 200) throw new Error(`authorization server metadata ${asUrl}: ${asRes.status}`);
  return { challenge, prm, as: (await asRes.json()) as Metadata };
}

export async function register(as: Metadata, metadata: Record<string, unknown>): Promise<any> {
  const res = await fetch(as.registration_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      ...metadata,
    }),
  });
  const body = await res.json();
  if (res.status !== 201) throw new Error(`registration: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

export interface Session {
  cookie: string;
  csrf: string;
}

/** Signs in through the console's JSON API at `{workspaceUrl}/ui/api/login`. */
export async function signIn(workspaceUrl: string, email: string, password: string): Promise<Session> {
  const res = await fetch(`${workspaceUrl}/ui/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  const body = (await res.json()) as any;
  if (res.status !== 200) throw new Error(`sign-in: ${res.status} ${JSON.stringify(body)}`);
  const m = /dbq_session=([^;]+)/.exec(res.headers.getSetCookie().join('\n'));
  return { cookie: `dbq_session=${m![1]}`, csrf: body.data.csrfToken };
}

export interface AuthorizeOptions {
  as: Metadata;
  clientId: string;
  redirectUri: string;
  scope?: string;
  resource?: string | string[];
  /** Leave out PKCE, or send another method. */
  challengeMethod?: string | null;
  extra?: Record<string, string>;
}

export interface Started {
  status: number;
  location: string | null;
  jar: CookieJar;
  verifier: string;
  state: string;
  body: string;
}

/** GET the authorization endpoint; the browser's cookies are kept in `jar`. */
export async function startAuthorization(o: AuthorizeOptions): Promise<Started> {
  const { verifier, challenge } = pkce();
  const state = randomBytes(8).toString('hex');
  const url = new URL(o.as.authorization_endpoint);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', o.clientId);
  url.searchParams.set('redirect_uri', o.redirectUri);
  url.searchParams.set('scope', o.scope ?? 'dbq:read dbq:write offline_access');
  url.searchParams.set('state', state);
  if (o.challengeMethod !== null) {
    url.searchParams.set('code_challenge', o.challengeMethod === 'plain' ? verifier : challenge);
    url.searchParams.set('code_challenge_method', o.challengeMethod ?? 'S256');
  }
  for (const r of [o.resource ?? []].flat()) url.searchParams.append('resource', r);
  for (const [k, v] of Object.entries(o.extra ?? {})) url.searchParams.set(k, v);
  const jar = new CookieJar();
  const res = await fetch(url, { redirect: 'manual' });
  jar.take(res);
  return { status: res.status, location: res.headers.get('location'), jar, verifier, state, body: await res.text() };
}

export async function consentApi(workspaceUrl: string, s: Session, method: 'GET' | 'POST', path: string, body?: unknown) {
  const res = await fetch(`${workspaceUrl}/ui/api/oauth/interactions/${path}`, {
    method,
    headers: {
      cookie: s.cookie,
      ...(method === 'POST' ? { 'x-csrf-token': s.csrf } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

export interface Allow {
  readOnly?: boolean;
  connections?: string[] | 'all';
  tools?: string[] | 'all';
  lifetimeDays?: number;
}

/** Follows the consent page's answer back through the authorization endpoint to the client's redirect. */
export async function followToRedirect(redirectTo: string, jar: CookieJar): Promise<URL> {
  let next = redirectTo;
  for (let i = 0; i < 5; i++) {
    const res = await fetch(next, { redirect: 'manual', headers: { cookie: jar.header() } });
    jar.take(res);
    const location = res.headers.get('location');
    if (!location) throw new Error(`no redirect from ${next}: ${res.status} ${await res.text()}`);
    const url = new URL(location, next);
    if (!url.pathname.includes('/oauth/')) return url;
    next = url.href;
  }
  throw new Error('too many redirects');
}

/** The whole authorization: start, consent as `session`'s user with `allow`, follow back. */
export async function authorize(
  o: AuthorizeOptions & { workspaceUrl: string; session: Session; allow?: Allow },
): Promise<{ code: string; verifier: string; callback: URL; details: any }> {
  const started = await startAuthorization(o);
  if (started.status !== 303 || !started.location) throw new Error(`authorize: ${started.status} ${started.body}`);
  const uid = /\/oauth\/consent\/([^/?]+)/.exec(started.location)?.[1];
  if (!uid) throw new Error(`not sent to the consent page: ${started.location}`);
  const details = await consentApi(o.workspaceUrl, o.session, 'GET', uid);
  if (details.status !== 200) throw new Error(`interaction: ${details.status} ${JSON.stringify(details.body)}`);
  const allowed = await consentApi(o.workspaceUrl, o.session, 'POST', `${uid}/allow`, {
    readOnly: o.allow?.readOnly ?? false,
    connections: o.allow?.connections ?? 'all',
    tools: o.allow?.tools ?? 'all',
    lifetimeDays: o.allow?.lifetimeDays ?? 30,
  });
  if (allowed.status !== 200) throw new Error(`allow: ${allowed.status} ${JSON.stringify(allowed.body)}`);
  const callback = await followToRedirect(allowed.body.data.redirectTo, started.jar);
  const code = callback.searchParams.get('code');
  if (!code) throw new Error(`no code: ${callback}`);
  if (callback.searchParams.get('state') !== started.state) throw new Error('state mismatch');
  return { code, verifier: started.verifier, callback, details: details.body.data };
}

export async function tokenRequest(as: Metadata, params: Record<string, string>): Promise<{ status: number; body: any }> {
  const res = await fetch(as.token_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params).toString(),
  });
  return { status: res.status, body: await res.json() };
}

/** A listening harness app's origin. */
export async function listenOn(app: {
  listen(o: { port: number; host: string }): Promise<unknown>;
  server: { address(): unknown };
}): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address() as { port: number } | null;
  if (!address) throw new Error('no address');
  return `http://127.0.0.1:${address.port}`;
}

/** Authorization through consent and the code exchange: the token response. */
export async function obtainTokens(
  o: AuthorizeOptions & { workspaceUrl: string; session: Session; allow?: Allow },
): Promise<{ access_token: string; refresh_token?: string; scope: string }> {
  const { code, verifier } = await authorize(o);
  const res = await tokenRequest(o.as, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: o.redirectUri,
    client_id: o.clientId,
    code_verifier: verifier,
  });
  if (res.status !== 200) throw new Error(`token: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}
