// The consent step of an authorization (the web app's page, src/console/routes/oauth-api.ts):
// what the client asks for, and turning the user's answer into a grant. The answer is a scoped
// key's scope — read-only or not, which connections and tools, a lifetime — resolved by the same
// code that narrows keys (src/access/key-scope-input.ts), so it is never wider than the user:
// a read_only user, or "Read-only" ticked, grants no `dbq:write`, and every listed connection and
// tool must be one the user may use now.
import { z } from 'zod';
import type { InteractionInstance, Provider } from 'oidc-provider';
import { InvalidRequestError, NotFoundError } from '../errors.ts';
import { nowIso } from '../ids.ts';
import type { Actor } from '../audit/audit.ts';
import { listConnectionsFor } from '../access/grants.ts';
import { resolveExpiry, resolveKeyScope } from '../access/key-scope-input.ts';
import { TOOL_NAME } from '../access/scope.ts';
import type { Services } from '../services.ts';
import { listTools } from '../tools/tools.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { getUserRow } from '../workspaces/users.ts';
import { getWorkspaceSettings } from '../workspaces/workspace-settings.ts';
import { recordGrant } from './grants.ts';
import { DBQ_SCOPES } from './provider.ts';
import type { ResourceKind } from './urls.ts';

export const DEFAULT_LIFETIME_DAYS = 30;

export const allowSchema = z
  .object({
    readOnly: z.boolean(),
    connections: z.union([z.literal('all'), z.array(z.string().min(1).max(200)).min(1).max(100)]),
    tools: z.union([z.literal('all'), z.array(z.string().regex(TOOL_NAME, 'must be a tool name')).min(1).max(100)]),
    lifetimeDays: z.number().int().min(1).max(3650),
  })
  .strict();
export type AllowInput = z.infer<typeof allowSchema>;

interface Pending {
  interaction: InteractionInstance;
  clientId: string;
  clientName: string;
  redirectHost: string;
  requested: string[];
  resource: string;
  kind: ResourceKind;
}

/** The pending authorization `uid` of this workspace's server; 404 once decided or expired. */
async function pending(provider: Provider, uid: string): Promise<Pending> {
  const interaction = await provider.Interaction.find(uid);
  if (!interaction || interaction.result) throw new NotFoundError('Authorization request not found or expired');
  const params = interaction.params as { client_id?: string; redirect_uri?: string; scope?: string; resource?: string | string[] };
  const clientId = params.client_id ?? '';
  const client = await provider.Client.find(clientId).catch(() => undefined);
  if (!client) throw new NotFoundError('Authorization request not found or expired');
  if (Array.isArray(params.resource) && params.resource.length > 1) {
    throw new InvalidRequestError('an authorization is for one resource: ask for the MCP server or the REST API, not both', {
      field: 'resource',
    });
  }
  const resource = (Array.isArray(params.resource) ? params.resource[0] : params.resource) ?? `${provider.issuer}/mcp`;
  const kind: ResourceKind | null = resource === `${provider.issuer}/mcp` ? 'mcp' : resource === `${provider.issuer}/api` ? 'api' : null;
  if (!kind) throw new InvalidRequestError("resource must be this workspace's /mcp or /api", { field: 'resource' });
  let redirectHost = '';
  try {
    redirectHost = new URL(params.redirect_uri ?? '').host;
  } catch {
    // the authorization endpoint checked it against the registration already
  }
  let clientName = client.clientName ?? '';
  if (!clientName) {
    try {
      clientName = new URL(clientId).host;
    } catch {
      clientName = clientId;
    }
  }
  return { interaction, clientId, clientName, redirectHost, requested: (params.scope ?? '').split(' ').filter(Boolean), resource, kind };
}

/** Scopes the client asked for; none of dbq's: both (what "all of the user" means). */
function askedScopes(requested: string[]): string[] {
  const dbq = requested.filter((s) => (DBQ_SCOPES as readonly string[]).includes(s));
  const asked = dbq.length ? dbq : [...DBQ_SCOPES];
  if (requested.includes('offline_access')) asked.push('offline_access');
  return asked;
}

export async function describeInteraction(svc: Services, provider: Provider, principal: Principal, uid: string) {
  const p = await pending(provider, uid);
  const settings = await getWorkspaceSettings(svc.db, principal.workspace.slug);
  const tools = await listTools(svc, principal);
  return {
    client: { id: p.clientId, name: p.clientName, redirectHost: p.redirectHost },
    scopes: askedScopes(p.requested),
    resource: p.resource,
    userRole: principal.user.accountRole,
    connections: (await listConnectionsFor(svc, principal)).map((c) => ({ id: c.id, name: c.name })),
    tools: tools.map((t) => ({ name: t.name })),
    defaultLifetimeDays: settings.maxKeyDays === null ? DEFAULT_LIFETIME_DAYS : Math.min(DEFAULT_LIFETIME_DAYS, settings.maxKeyDays),
    maxLifetimeDays: settings.maxKeyDays,
  };
}

async function finish(interaction: InteractionInstance, result: Record<string, unknown>): Promise<string> {
  interaction.result = result;
  await interaction.save(Math.max(1, interaction.exp - Math.floor(Date.now() / 1000)));
  return interaction.returnTo;
}

/** The user allowed: records the grant (audit `oauth.authorized`) and returns where the
 * browser goes next (the authorization endpoint, which answers the client). */
export async function allowInteraction(
  svc: Services,
  provider: Provider,
  principal: Principal,
  uid: string,
  input: AllowInput,
  actor: Actor,
): Promise<string> {
  const p = await pending(provider, uid);
  const asked = askedScopes(p.requested);
  const write = asked.includes('dbq:write') && !input.readOnly && principal.user.accountRole === 'admin';
  const user = await getUserRow(svc.db, principal.workspace.slug, principal.user.email);
  const scope = await resolveKeyScope(
    svc.db,
    user,
    {
      readOnly: write ? undefined : true,
      connections: input.connections === 'all' ? undefined : input.connections,
      tools: input.tools === 'all' ? undefined : input.tools,
    },
    null,
  );
  const settings = await getWorkspaceSettings(svc.db, principal.workspace.slug);
  const expiresAt = resolveExpiry({ expiresInDays: input.lifetimeDays }, settings.maxKeyDays, null)!;
  const resourceScopes = write ? ['dbq:read', 'dbq:write'] : ['dbq:read'];
  const offline = asked.includes('offline_access');

  const grant = new provider.Grant({ accountId: principal.user.id, clientId: p.clientId });
  // Granted both as the resource's scopes (what its tokens carry) and as the server's own (what
  // the library compares with the request's `scope` before it stops asking for consent).
  grant.addOIDCScope([...resourceScopes, ...(offline ? ['offline_access'] : [])].join(' '));
  grant.addResourceScope(p.resource, resourceScopes.join(' '));
  const grantId = await grant.save();
  await recordGrant(
    svc.db,
    {
      id: grantId,
      workspace_id: principal.workspace.id,
      user_id: principal.user.id,
      client_id: p.clientId,
      client_name: p.clientName.slice(0, 200),
      redirect_host: p.redirectHost,
      resource: p.resource,
      resource_kind: p.kind,
      scope: scope ? JSON.stringify(scope) : null,
      created_at: nowIso(),
      last_used_at: null,
      expires_at: expiresAt,
      revoked_at: null,
    },
    actor,
  );
  // What the code and its tokens carry is what was granted, not what was asked: the provider
  // resumes with these parameters (and would otherwise ask again for the scopes left out).
  p.interaction.params.scope = [...resourceScopes, ...(offline ? ['offline_access'] : [])].join(' ');
  p.interaction.params.resource = p.resource;
  return finish(p.interaction, { login: { accountId: principal.user.id }, consent: { grantId } });
}

export async function denyInteraction(provider: Provider, uid: string): Promise<string> {
  const p = await pending(provider, uid);
  return finish(p.interaction, { error: 'access_denied', error_description: 'The user denied the request' });
}
