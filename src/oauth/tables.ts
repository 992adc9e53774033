// The store's OAuth tables (migration 0012_oauth, src/store/migrations/oauth.ts), typed here so
// the feature stays in its room: `OAuthDb` is the store's Kysely seen with them.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../store/schema.ts';

/** One artifact of the authorization server (oidc-provider's model instances). */
export interface OAuthArtifactRow {
  workspace_id: string;
  /** oidc-provider's model name: AccessToken, RefreshToken, AuthorizationCode, Interaction, Grant, Client, Session… */
  kind: string;
  /** base64url SHA-256 of the artifact's id (for tokens, of the token itself). */
  id: string;
  /** JSON of the model's payload. */
  payload: string;
  grant_id: string | null;
  uid: string | null;
  user_code: string | null;
  /** Epoch milliseconds; null: no expiry. */
  expires_at: number | null;
  consumed_at: number | null;
}

/** dbq's side of a grant: what a user allowed a client, as a scoped key's scope. */
export interface OAuthGrantRow {
  /** oidc-provider's Grant id. */
  id: string;
  workspace_id: string;
  user_id: string;
  client_id: string;
  client_name: string;
  redirect_host: string;
  /** The one resource the grant serves: `{workspace_url}/mcp` or `{workspace_url}/api`. */
  resource: string;
  resource_kind: 'mcp' | 'api';
  /** JSON KeyScope (src/access/scope.ts), null: all of the user. */
  scope: string | null;
  created_at: string;
  last_used_at: string | null;
  expires_at: string;
  revoked_at: string | null;
}

export interface OAuthTables {
  oauth_artifacts: OAuthArtifactRow;
  oauth_grants: OAuthGrantRow;
}

export type OAuthDatabase = Database & OAuthTables;
export type OAuthDb = Kysely<OAuthDatabase>;

export function oauthDb(db: Kysely<Database>): OAuthDb {
  return db as unknown as OAuthDb;
}

/** A transaction on the OAuth tables, seen as the store's for recordAudit. */
export function asStoreTransaction(trx: Transaction<OAuthDatabase>): Transaction<Database> {
  return trx as unknown as Transaction<Database>;
}
