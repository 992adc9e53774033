// The single sign-on itself: authorization code + PKCE (S256) with openid-client. What the
// callback must check — the PKCE verifier, state and nonce — never touches the store: it rides
// in a cookie sealed by the secret box (AES-256-GCM, bound to the workspace), good for ten
// minutes and readable by no script (HttpOnly), so any process of a deployment can finish a
// sign-in another one started. openid-client checks the state, the nonce, the ID token's
// issuer (and RFC 9207's `iss` when the provider sends it), its audience (our client id), its
// signature and times.
import type { Kysely } from 'kysely';
import * as oidc from 'openid-client';
import { inTransaction, recordAudit } from '../audit/audit.ts';
import { DbqError, SsoSignInError } from '../errors.ts';
import type { SecretBox } from '../secrets/secret-box.ts';
import type { Database, UserRow } from '../store/schema.ts';
import type { Workspace } from '../workspaces/workspaces.ts';
import type { SsoClients } from './sso-clients.ts';
import { admitSsoUser, type VouchedIdentity } from './sso-users.ts';
import { ssoClientSettings } from './sso-settings.ts';

export const FLOW_COOKIE = 'dbq_sso';
export const FLOW_TTL_MS = 10 * 60_000;

interface Flow {
  v: 1;
  state: string;
  nonce: string;
  verifier: string;
  redirectUri: string;
  next: string;
  exp: number;
}

export interface SsoDeps {
  db: Kysely<Database>;
  secretBox: SecretBox;
  sso: SsoClients;
}

const flowSealedFor = (workspaceId: string) => `sso-flow:${workspaceId}`;

function notConfigured(): SsoSignInError {
  return new SsoSignInError('not_configured', 'Single sign-on is not set for this workspace');
}

/** Where to send the browser, and the sealed cookie that must come back with it. */
export async function startSsoSignIn(
  deps: SsoDeps,
  workspace: Workspace,
  redirectUri: string,
  next: string,
): Promise<{ authorizationUrl: string; flowCookie: string; expiresAt: number }> {
  const settings = await ssoClientSettings(deps.db, deps.secretBox, workspace.id);
  if (!settings) throw notConfigured();
  const config = await deps.sso.configurationFor(settings);
  const verifier = oidc.randomPKCECodeVerifier();
  const flow: Flow = {
    v: 1,
    state: oidc.randomState(),
    nonce: oidc.randomNonce(),
    verifier,
    redirectUri,
    next,
    exp: Date.now() + FLOW_TTL_MS,
  };
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid email',
    response_type: 'code',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: flow.state,
    nonce: flow.nonce,
  });
  return {
    authorizationUrl: url.href,
    flowCookie: deps.secretBox.seal(JSON.stringify(flow), flowSealedFor(workspace.id)),
    expiresAt: flow.exp,
  };
}

/** openid-client wraps the precise check that failed (oauth4webapi's) as its cause. */
function whyOf(err: unknown): string {
  const e = err as { message?: string; cause?: unknown };
  const cause = e.cause as { message?: string } | undefined;
  return (cause && typeof cause.message === 'string' ? cause.message : e.message) ?? String(err);
}

function openFlow(box: SecretBox, workspaceId: string, sealed: string | undefined): Flow {
  const expired = new SsoSignInError('expired', 'This sign-in was not started here or took longer than 10 minutes');
  if (!sealed || sealed.length > 4096) throw expired;
  let flow: Flow;
  try {
    flow = JSON.parse(box.open(sealed, flowSealedFor(workspaceId))) as Flow;
  } catch {
    throw expired;
  }
  if (flow.v !== 1 || typeof flow.exp !== 'number' || flow.exp < Date.now()) throw expired;
  return flow;
}

/**
 * Finishes a sign-in at the callback: the user to open a session for (created on a first
 * sign-in) and where to go next. Every refusal is an SsoSignInError, recorded in the audit
 * log as `session.sign_in_failed` with its reason.
 */
export async function finishSsoSignIn(
  deps: SsoDeps,
  workspace: Workspace,
  input: { flowCookie: string | undefined; query: string; ip: string | null },
): Promise<{ user: UserRow; created: boolean; next: string }> {
  let email: string | null = null;
  try {
    const flow = openFlow(deps.secretBox, workspace.id, input.flowCookie);
    const params = new URLSearchParams(input.query);
    const refused = params.get('error');
    if (refused) {
      const why = params.get('error_description') ?? refused;
      throw new SsoSignInError('failed', `The identity provider did not sign you in: ${why.slice(0, 200)}`);
    }
    const settings = await ssoClientSettings(deps.db, deps.secretBox, workspace.id);
    if (!settings) throw notConfigured();
    const config = await deps.sso.configurationFor(settings);
    // The URL the provider redirected to: the redirect URI this flow registered, with the
    // answer's parameters. (Not rebuilt from the Host header.)
    const current = new URL(flow.redirectUri);
    current.search = params.toString();
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      });
    } catch (err) {
      throw new SsoSignInError('failed', `The sign-in could not be completed: ${whyOf(err)}`, err);
    }
    const claims = tokens.claims()!;
    let vouched: VouchedIdentity = { subject: claims.sub, email: claims.email, emailVerified: claims.email_verified };
    // Many providers put the email in the ID token; others only at the userinfo endpoint.
    if (vouched.email === undefined && tokens.access_token) {
      try {
        const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
        vouched = { subject: claims.sub, email: info.email, emailVerified: info.email_verified };
      } catch (err) {
        throw new SsoSignInError('failed', `The identity provider's userinfo could not be read: ${whyOf(err)}`, err);
      }
    }
    if (typeof vouched.email === 'string') email = vouched.email.trim().toLowerCase().slice(0, 320);
    const { user, created } = await admitSsoUser(deps.db, settings, vouched, input.ip);
    return { user, created, next: flow.next };
  } catch (err) {
    const reason = err instanceof SsoSignInError ? String(err.details?.reason) : 'failed';
    // The admin reading the log needs the why ("unexpected ID Token \"nonce\" claim value"):
    // openid-client's own words, never a token or a secret.
    const message = (err instanceof SsoSignInError ? err.message : 'The sign-in could not be completed').slice(0, 300);
    await inTransaction(deps.db, (trx) =>
      recordAudit(trx, {
        workspaceId: workspace.id,
        actor: { userId: null, email, keyId: null, ip: input.ip, source: 'sso' },
        action: 'session.sign_in_failed',
        target: { type: 'user', id: null, name: email },
        changes: { method: 'sso', reason, message },
      }),
    );
    if (err instanceof DbqError) throw err;
    throw new SsoSignInError('failed', 'The sign-in could not be completed', err);
  }
}
