// Each workspace is an OAuth 2.1 authorization server (issuer `{workspace_url}`), built on
// oidc-provider rather than hand-written token, PKCE and metadata code. One Provider per
// issuer, made on first use (the library is loaded lazily: a deployment that never sees an
// OAuth client never loads it) and kept in a small map. Every artifact lives in the store
// (adapter.ts), and the cookie keys derive from the store's secret key, so any process of a
// deployment can carry on a flow another one started.
//
// Policy, beside the library's defaults:
//  - authorization code + PKCE S256 only (pkce.required always; `plain` is not implemented by
//    the library at all); public clients (`none`) and secret-based ones registered by DCR;
//  - resources are the workspace's `/mcp` and `/api` (RFC 8707); a grant is for one of them and
//    every access token names it as its audience (resource-bound);
//  - refresh tokens rotate on every use; presenting a used one revokes the whole grant
//    (`oauth.refresh_reuse_detected`), as does a reused authorization code;
//  - every authorization asks the user: no grant is reused from an earlier session;
//  - Client ID Metadata Documents: fetched by the library with its SSRF-refusing dispatcher,
//    a 2.5 s timeout and a 5 KiB body limit, cached 30 s to 1 day; DBQ_OAUTH_ALLOW_PRIVATE_CLIENT_URLS
//    lifts only the address check (development).
import { createHmac, generateKeyPairSync } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Provider } from 'oidc-provider';
import type { Config } from '../config.ts';
import type { Database } from '../store/schema.ts';
import { StoreAdapter } from './adapter.ts';
import { endGrantById, grantUsable } from './grants.ts';
import { oauthDb } from './tables.ts';
import { RESOURCE_KINDS, resourceUrl, type ResourceKind, type WorkspacePlace } from './urls.ts';
import { inTransaction, recordAudit } from '../audit/audit.ts';

export const DBQ_SCOPES = ['dbq:read', 'dbq:write'] as const;
export const ACCESS_TOKEN_TTL_S = 3600;
const REFRESH_TOKEN_TTL_S = 90 * 86_400;
/** The library's Grant outlives any dbq grant: dbq's own expiry (oauth_grants) decides. */
const GRANT_TTL_S = 3650 * 86_400;
const PROVIDERS_KEPT = 64;
const REDIRECT_POLICY = 'dbq_redirect_policy';
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export interface OAuthDeps {
  db: Kysely<Database>;
  config: Config;
  /** The store's secret key (src/secrets): the cookie keys derive from it. */
  secretKey: Buffer;
}

interface Ctx {
  ip: string;
  oidc: {
    route: string;
    client?: { clientId: string; clientName?: string };
    entities: Record<string, { grantId?: string; consumed?: unknown; accountId?: string } | undefined>;
    result?: { consent?: { grantId?: string } };
    provider: Provider;
  };
}

/** Client metadata URLs whose last fetch failed, refused without a fetch for FAILED_FOR_MS. */
class FailedDocuments {
  private readonly at = new Map<string, number>();
  note(url: string): void {
    if (this.at.size >= 1_000) this.at.clear();
    this.at.set(url, Date.now());
  }
  recent(url: string): boolean {
    const when = this.at.get(url);
    if (when === undefined) return false;
    if (Date.now() - when < FAILED_FOR_MS) return true;
    this.at.delete(url);
    return false;
  }
}
const FAILED_FOR_MS = 30_000;

export class OAuthServers {
  private readonly providers = new Map<string, Provider>();
  private readonly failedDocuments = new FailedDocuments();
  private readonly cookieKeys: string[];
  private jwks: { keys: object[] } | null = null;

  constructor(private readonly deps: OAuthDeps) {
    this.cookieKeys = [createHmac('sha256', deps.secretKey).update('dbq oauth cookies').digest('base64url')];
  }

  /** The workspace's authorization server at this public address. */
  async providerFor(workspace: { id: string; slug: string }, place: WorkspacePlace): Promise<Provider> {
    const key = `${workspace.id} ${place.url}`;
    const found = this.providers.get(key);
    if (found) return found;
    const lib = await import('oidc-provider');
    const provider = new lib.default(place.url, this.configuration(workspace, place, lib.errors));
    // The door hands the provider the public scheme and host it worked out itself (from
    // DBQ_PUBLIC_URL or the request with DBQ_TRUST_PROXY), in headers it overwrites.
    provider.proxy = true;
    provider.on('registration_create.success', (ctx: Ctx, client: { clientId: string; clientName?: string; redirectUris: string[] }) => {
      void inTransaction(this.deps.db, (trx) =>
        recordAudit(trx, {
          workspaceId: workspace.id,
          actor: { userId: null, email: null, keyId: null, ip: ctx.ip, source: 'api' },
          action: 'oauth.client_registered',
          target: { type: 'oauth_client', id: client.clientId, name: client.clientName ?? client.clientId },
          changes: { redirectUris: client.redirectUris },
        }),
      ).catch(() => {});
    });
    if (this.providers.size >= PROVIDERS_KEPT) this.providers.delete(this.providers.keys().next().value!);
    this.providers.set(key, provider);
    return provider;
  }

  /** Signing keys: dbq issues no ID tokens nor JWT access tokens (tokens are opaque, looked up
   * in the store), so nothing it signs outlives the process; one key per process keeps the
   * library from falling back to its published development key. */
  private signingKeys(): { keys: object[] } {
    if (!this.jwks) {
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      this.jwks = { keys: [{ ...privateKey.export({ format: 'jwk' }), use: 'sig', alg: 'ES256' }] };
    }
    return this.jwks;
  }

  private configuration(
    workspace: { id: string; slug: string },
    place: WorkspacePlace,
    errors: typeof import('oidc-provider').errors,
  ): Record<string, unknown> {
    const { db, config } = this.deps;
    const resources = new Map<string, ResourceKind>(RESOURCE_KINDS.map((k) => [resourceUrl(place, k), k]));
    const allowPrivate = config.oauthAllowPrivateClientUrls;
    return {
      adapter: (name: string) => new StoreAdapter(oauthDb(db), workspace.id, name),
      clients: [],
      jwks: this.signingKeys(),
      cookies: { keys: this.cookieKeys },
      // dbq's scopes are resource scopes (getResourceServerInfo below); listed here too so the
      // metadata advertises them and a client may name them in its registration's `scope`.
      scopes: [...DBQ_SCOPES, 'offline_access'],
      claims: { openid: ['sub'] },
      responseTypes: ['code'],
      clientAuthMethods: ['none', 'client_secret_basic', 'client_secret_post'],
      clientDefaults: {
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        id_token_signed_response_alg: 'ES256',
      },
      pkce: { required: () => true },
      // OAuth 2.1 §2.3.1: a redirect URI is https, or http on a loopback address (a client on
      // the user's machine), or a native app's own scheme; never plain http to a host on the
      // network. The library's validator hook runs once per registration (DCR and metadata
      // documents alike) for this one made-up property, whose value is never read.
      extraClientMetadata: {
        properties: [REDIRECT_POLICY],
        validator: (_ctx: unknown, key: string, _value: unknown, metadata: { redirect_uris?: unknown; application_type?: string }) => {
          if (key !== REDIRECT_POLICY) return;
          const uris = Array.isArray(metadata.redirect_uris) ? metadata.redirect_uris : [];
          let loopbackOnly = uris.length > 0;
          for (const uri of uris) {
            const url = typeof uri === 'string' ? URL.parse(uri) : null;
            const loopback = url?.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
            if (url?.protocol === 'http:' && !loopback) {
              throw new errors.InvalidClientMetadata('redirect_uris must use https, or http on a loopback address');
            }
            loopbackOnly &&= loopback;
          }
          // RFC 8252 §7.3: a loopback redirect may use any port at the time of the request (a
          // client on the user's machine listens where it can). The library grants that to
          // native clients; a client whose every redirect is loopback is one, whatever it said.
          if (loopbackOnly) metadata.application_type = 'native';
        },
      },
      rotateRefreshToken: true,
      issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(t: string): boolean }, code: { scopes: Set<string> }) =>
        client.grantTypeAllowed('refresh_token') && code.scopes.has('offline_access'),
      // Only the grant the consent page just made: each authorization is asked for.
      loadExistingGrant: async (ctx: Ctx) => {
        const id = ctx.oidc.result?.consent?.grantId;
        return id ? ctx.oidc.provider.Grant.find(id) : undefined;
      },
      revokeGrantPolicy: async (ctx: Ctx) => {
        if (ctx.oidc.route === 'revocation' && ctx.oidc.entities.AccessToken) return false;
        const refresh = ctx.oidc.entities.RefreshToken;
        const grantId = refresh?.grantId ?? ctx.oidc.entities.AuthorizationCode?.grantId;
        if (grantId) {
          const reuse = ctx.oidc.route === 'token' && !!refresh?.consumed;
          const reason = reuse
            ? 'refresh token reused'
            : ctx.oidc.route === 'token'
              ? 'authorization code reused'
              : 'revoked by the client';
          await endGrantById(
            db,
            workspace.id,
            grantId,
            { userId: null, email: null, keyId: grantId, ip: ctx.ip, source: 'api' },
            reuse ? 'oauth.refresh_reuse_detected' : 'oauth.revoked',
            { reason },
          );
        }
        return true;
      },
      findAccount: async (_ctx: unknown, sub: string, token?: { grantId?: string }) => {
        const user = await db
          .selectFrom('users')
          .select(['id', 'disabled_at'])
          .where('id', '=', sub)
          .where('workspace_id', '=', workspace.id)
          .executeTakeFirst();
        if (!user || user.disabled_at !== null) return undefined;
        // A code or refresh token of a revoked or expired grant mints nothing.
        if (token?.grantId && !(await grantUsable(db, workspace.id, token.grantId, sub))) return undefined;
        return { accountId: sub, claims: async () => ({ sub }) };
      },
      interactions: { url: async (_ctx: unknown, interaction: { uid: string }) => `${place.url}/oauth/consent/${interaction.uid}` },
      routes: {
        authorization: '/oauth/authorize',
        token: '/oauth/token',
        registration: '/oauth/register',
        revocation: '/oauth/revoke',
        jwks: '/oauth/jwks',
        end_session: '/oauth/end-session',
        userinfo: '/oauth/userinfo',
        introspection: '/oauth/introspect',
        pushed_authorization_request: '/oauth/par',
        code_verification: '/oauth/device',
        device_authorization: '/oauth/device/auth',
        backchannel_authentication: '/oauth/backchannel',
        challenge: '/oauth/challenge',
        credential: '/oauth/credential',
      },
      features: {
        devInteractions: { enabled: false },
        // Not served: pushed requests (no route for them), DPoP (tokens are plain bearer tokens,
        // which is what /mcp and /api check).
        pushedAuthorizationRequests: { enabled: false },
        dPoP: { enabled: false },
        userinfo: { enabled: false },
        introspection: { enabled: false },
        rpInitiatedLogout: { enabled: false },
        revocation: { enabled: true },
        registration: { enabled: true, initialAccessToken: false },
        resourceIndicators: {
          enabled: true,
          // A client that names no resource gets the MCP server's (the usual caller).
          defaultResource: async (_ctx: unknown, _client: unknown, oneOf?: string[]) => oneOf ?? resourceUrl(place, 'mcp'),
          useGrantedResource: async () => true,
          getResourceServerInfo: async (_ctx: unknown, resource: string) => {
            if (!resources.has(resource)) throw new errors.InvalidTarget();
            return { scope: DBQ_SCOPES.join(' '), accessTokenFormat: 'opaque', accessTokenTTL: ACCESS_TOKEN_TTL_S };
          },
        },
        clientIdMetadataDocument: {
          enabled: true,
          ack: 'draft-02',
          cacheDuration: { min: 30, max: 86_400 },
          allowFetch: async (_ctx: unknown, clientId: string) => !this.failedDocuments.recent(clientId),
        },
      },
      ttl: {
        AccessToken: ACCESS_TOKEN_TTL_S,
        AuthorizationCode: 60,
        Interaction: 3600,
        Session: 86_400,
        Grant: GRANT_TTL_S,
        RefreshToken: REFRESH_TOKEN_TTL_S,
      },
      // The library sets a dispatcher that refuses special-use addresses; the development
      // switch drops it (the timeout and body limit stay). A document that failed (no answer in
      // time, refused, not 200) is not fetched again for a while: the library resolves a client
      // more than once per request, and each try could cost its full timeout.
      fetch: async (url: string, options: RequestInit & { dispatcher?: unknown }) => {
        if (allowPrivate) delete options.dispatcher;
        try {
          const res = await globalThis.fetch(url, options);
          if (res.status !== 200) this.failedDocuments.note(url);
          return res;
        } catch (err) {
          this.failedDocuments.note(url);
          throw err;
        }
      },
      renderError: async (ctx: { type: string; body: unknown }, out: Record<string, unknown>) => {
        ctx.type = 'json';
        ctx.body = out;
      },
    };
  }
}
