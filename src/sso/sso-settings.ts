// A workspace's single sign-on settings, set by its admins (REST, web, CLI alike): the OIDC
// issuer, the client registered there, which email domains may sign in, the role a first
// sign-in gets, and whether passwords still work. The client secret is sealed like connection
// secrets and never leaves the core again except to the token endpoint.
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { inTransaction, recordAudit, type Actor } from '../audit/audit.ts';
import { InvalidRequestError, NotFoundError, PasswordSignInDisabledError } from '../errors.ts';
import { nowIso } from '../ids.ts';
import type { SecretBox } from '../secrets/secret-box.ts';
import type { Database, WorkspaceSsoRow } from '../store/schema.ts';
import { getWorkspace } from '../workspaces/workspaces.ts';
import { ROLES, type Role } from '../workspaces/users.ts';
import { zodToInvalidRequest } from '../zod-error.ts';

// A DNS name: labels of letters, digits and inner hyphens, at least one dot. Checked per
// label with a bounded pattern (no nested quantifiers over the whole name).
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

function isDomain(value: string): boolean {
  if (value.length > 253) return false;
  const labels = value.split('.');
  return labels.length >= 2 && labels.every((l) => LABEL.test(l));
}

export const ssoInputSchema = z
  .object({
    issuer: z
      .string()
      .trim()
      .min(1)
      .max(2048)
      .describe("The identity provider's issuer URL (its /.well-known/openid-configuration is read)"),
    clientId: z.string().trim().min(1).max(1024).describe('The client id registered at the identity provider'),
    clientSecret: z
      .string()
      .min(1)
      .max(4096)
      .optional()
      .describe('Write-only. Required the first time; omitted later, the stored secret is kept'),
    allowedDomains: z
      .array(z.string().trim().toLowerCase().max(253))
      .min(1, 'name at least one email domain')
      .max(100)
      .describe('Email domains that may sign in (exact match of what follows the @)'),
    defaultRole: z
      .enum(ROLES as [Role, ...Role[]])
      .default('read_only')
      .describe('Role of a user created by their first sign-in'),
    passwordSignIn: z.boolean().default(true).describe('false: the password sign-in is refused in this workspace'),
  })
  .strict();

export type SsoInput = z.input<typeof ssoInputSchema>;

/** What anyone may read back: never the secret. */
export interface SsoSettings {
  configured: boolean;
  issuer: string | null;
  clientId: string | null;
  clientSecretSet: boolean;
  allowedDomains: string[];
  defaultRole: Role;
  passwordSignIn: boolean;
  updatedAt: string | null;
}

/** What the sign-in needs, the secret opened. */
export interface SsoClientSettings {
  workspaceId: string;
  issuer: string;
  clientId: string;
  clientSecret: string;
  allowedDomains: string[];
  defaultRole: Role;
  passwordSignIn: boolean;
  updatedAt: string;
}

const NOT_CONFIGURED: SsoSettings = {
  configured: false,
  issuer: null,
  clientId: null,
  clientSecretSet: false,
  allowedDomains: [],
  defaultRole: 'read_only',
  passwordSignIn: true,
  updatedAt: null,
};

/** The secret is bound to this record id: a sealed value copied elsewhere does not open. */
const sealedFor = (workspaceId: string) => `sso:${workspaceId}`;

function toSettings(row: WorkspaceSsoRow): SsoSettings {
  return {
    configured: true,
    issuer: row.issuer,
    clientId: row.client_id,
    clientSecretSet: true,
    allowedDomains: JSON.parse(row.allowed_domains) as string[],
    defaultRole: row.default_role,
    passwordSignIn: Number(row.password_sign_in) === 1,
    updatedAt: row.updated_at,
  };
}

async function ssoRow(db: Kysely<Database>, workspaceId: string): Promise<WorkspaceSsoRow | undefined> {
  return db.selectFrom('workspace_sso').selectAll().where('workspace_id', '=', workspaceId).executeTakeFirst();
}

export async function getSsoSettings(db: Kysely<Database>, slug: string): Promise<SsoSettings> {
  const ws = await getWorkspace(db, slug);
  const row = await ssoRow(db, ws.id);
  return row ? toSettings(row) : NOT_CONFIGURED;
}

export async function ssoClientSettings(db: Kysely<Database>, box: SecretBox, workspaceId: string): Promise<SsoClientSettings | null> {
  const row = await ssoRow(db, workspaceId);
  if (!row) return null;
  const s = toSettings(row);
  return {
    workspaceId,
    issuer: row.issuer,
    clientId: row.client_id,
    clientSecret: box.open(row.client_secret, sealedFor(workspaceId)),
    allowedDomains: s.allowedDomains,
    defaultRole: s.defaultRole,
    passwordSignIn: s.passwordSignIn,
    updatedAt: row.updated_at,
  };
}

/** The issuer as a URL: https only (unless `allowHttp`, which only tests set), no query or
 * fragment (OIDC Discovery appends /.well-known/… to it), no credentials. */
export function parseIssuer(value: string, allowHttp: boolean): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidRequestError('issuer must be a URL such as https://login.example.com', { field: 'issuer' });
  }
  if (url.protocol !== 'https:' && !(allowHttp && url.protocol === 'http:')) {
    throw new InvalidRequestError('issuer must be an https:// URL', { field: 'issuer' });
  }
  if (url.search || url.hash || url.username || url.password) {
    throw new InvalidRequestError('issuer must have no query, fragment or credentials', { field: 'issuer' });
  }
  // The issuer is compared with the provider's own `issuer` claim exactly: keep what was
  // typed (a trailing slash matters to some providers) apart from surrounding spaces.
  return value.trim();
}

export async function setSsoSettings(
  db: Kysely<Database>,
  box: SecretBox,
  slug: string,
  body: unknown,
  actor: Actor,
  opts: { allowHttp: boolean },
): Promise<SsoSettings> {
  const parsed = ssoInputSchema.safeParse(body);
  if (!parsed.success) throw zodToInvalidRequest(parsed.error);
  const input = parsed.data;
  const issuer = parseIssuer(input.issuer, opts.allowHttp);
  const domains = [...new Set(input.allowedDomains.map((d) => d.replace(/^@/, '')))];
  const bad = domains.find((d) => !isDomain(d));
  if (bad !== undefined)
    throw new InvalidRequestError(`allowedDomains: "${bad}" is not a domain such as acme.com`, { field: 'allowedDomains' });
  const ws = await getWorkspace(db, slug);
  const before = await ssoRow(db, ws.id);
  if (!before && input.clientSecret === undefined) {
    throw new InvalidRequestError('clientSecret is required the first time single sign-on is set', { field: 'clientSecret' });
  }
  const now = nowIso();
  const row: WorkspaceSsoRow = {
    workspace_id: ws.id,
    issuer,
    client_id: input.clientId,
    client_secret: input.clientSecret !== undefined ? box.seal(input.clientSecret, sealedFor(ws.id)) : before!.client_secret,
    allowed_domains: JSON.stringify(domains),
    default_role: input.defaultRole,
    password_sign_in: input.passwordSignIn ? 1 : 0,
    created_at: before?.created_at ?? now,
    updated_at: now,
  };
  const after = toSettings(row);
  await inTransaction(db, async (trx) => {
    if (before) {
      const { workspace_id: _w, created_at: _c, ...rest } = row;
      await trx.updateTable('workspace_sso').set(rest).where('workspace_id', '=', ws.id).execute();
    } else {
      await trx.insertInto('workspace_sso').values(row).execute();
    }
    await recordAudit(trx, {
      workspaceId: ws.id,
      actor,
      action: 'sso.configured',
      target: { type: 'workspace', id: ws.id, name: ws.slug },
      changes: changesOf(before ? toSettings(before) : null, after, input.clientSecret !== undefined),
    });
  });
  return after;
}

/** What an admin changed, never the secret itself: only that it was set or changed. */
function changesOf(before: SsoSettings | null, after: SsoSettings, secretGiven: boolean): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  const fields = ['issuer', 'clientId', 'allowedDomains', 'defaultRole', 'passwordSignIn'] as const;
  for (const f of fields) {
    if (!before) changes[f] = after[f];
    else if (JSON.stringify(before[f]) !== JSON.stringify(after[f])) changes[f] = { from: before[f], to: after[f] };
  }
  if (secretGiven) changes.clientSecret = before ? 'changed' : 'set';
  return changes;
}

export async function deleteSsoSettings(db: Kysely<Database>, slug: string, actor: Actor): Promise<SsoSettings> {
  const ws = await getWorkspace(db, slug);
  const before = await ssoRow(db, ws.id);
  if (!before) throw new NotFoundError('Single sign-on is not set for this workspace');
  await inTransaction(db, async (trx) => {
    await trx.deleteFrom('workspace_sso').where('workspace_id', '=', ws.id).execute();
    // SSO off forgets who was who at the provider: set up again, users are linked anew by email.
    await trx.deleteFrom('sso_identities').where('workspace_id', '=', ws.id).execute();
    await recordAudit(trx, {
      workspaceId: ws.id,
      actor,
      action: 'sso.configured',
      target: { type: 'workspace', id: ws.id, name: ws.slug },
      changes: { removed: true, issuer: before.issuer, passwordSignIn: { from: Number(before.password_sign_in) === 1, to: true } },
    });
  });
  return NOT_CONFIGURED;
}

/** What the sign-in page needs before anyone is signed in. */
export async function ssoSignInOptions(db: Kysely<Database>, workspaceId: string): Promise<{ sso: boolean; passwordSignIn: boolean }> {
  const row = await db.selectFrom('workspace_sso').select('password_sign_in').where('workspace_id', '=', workspaceId).executeTakeFirst();
  return { sso: row !== undefined, passwordSignIn: row === undefined || Number(row.password_sign_in) === 1 };
}

/** The password sign-in's gate: refused, before any password is checked, where SSO turned it off. */
export async function assertPasswordSignInAllowed(db: Kysely<Database>, workspaceId: string): Promise<void> {
  if (!(await ssoSignInOptions(db, workspaceId)).passwordSignIn) throw new PasswordSignInDisabledError();
}
