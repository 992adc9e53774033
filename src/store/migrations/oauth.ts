import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

// Migrations numbered 0012_… (append only, as in ../migrations.ts).
//
// OAuth 2.1 (src/oauth): `oauth_artifacts` holds what the authorization server (oidc-provider)
// keeps — interactions, codes, access and refresh tokens, registered clients, its grants — one
// row per artifact, under the SHA-256 of its id (a token's id is the token: a copy of the store
// must not hold usable tokens); `oauth_grants` is dbq's side of a grant: who allowed which
// client what (a scoped key's scope), until when, and whether it was revoked.
export const oauthMigrations: Record<string, Migration> = {
  '0012_oauth': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('oauth_artifacts')
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('id', 'text', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('grant_id', 'text')
        .addColumn('uid', 'text')
        .addColumn('user_code', 'text')
        .addColumn('expires_at', 'bigint')
        .addColumn('consumed_at', 'bigint')
        .addPrimaryKeyConstraint('oauth_artifacts_pk', ['workspace_id', 'kind', 'id'])
        .execute();
      await db.schema.createIndex('oauth_artifacts_grant').on('oauth_artifacts').columns(['workspace_id', 'grant_id']).execute();
      await db.schema.createIndex('oauth_artifacts_uid').on('oauth_artifacts').columns(['workspace_id', 'kind', 'uid']).execute();
      await db.schema.createIndex('oauth_artifacts_expiry').on('oauth_artifacts').columns(['expires_at']).execute();
      await db.schema
        .createTable('oauth_grants')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('client_id', 'text', (c) => c.notNull())
        .addColumn('client_name', 'text', (c) => c.notNull())
        .addColumn('redirect_host', 'text', (c) => c.notNull())
        .addColumn('resource', 'text', (c) => c.notNull())
        .addColumn('resource_kind', 'text', (c) => c.notNull())
        .addColumn('scope', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_used_at', 'text')
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('revoked_at', 'text')
        .execute();
      await db.schema.createIndex('oauth_grants_workspace').on('oauth_grants').columns(['workspace_id', 'user_id', 'created_at']).execute();
      if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
      // Access-token look-ups are cached per process under the store's change epoch
      // (src/store/pg-changes.ts): a revoked grant (any change but last_used_at) and a deleted
      // token (RFC 7009, a grant's tokens revoked) must move it. Issuing tokens (inserts, the
      // busy path) moves nothing: a new token is not in any cache.
      await sql`create trigger dbq_changed_update after update on oauth_grants for each row
        when ((to_jsonb(old) - 'last_used_at') is distinct from (to_jsonb(new) - 'last_used_at')) execute function dbq_store_changed()`.execute(
        db,
      );
      await sql`create trigger dbq_changed_rows after delete on oauth_grants for each statement execute function dbq_store_changed()`.execute(
        db,
      );
      await sql`create trigger dbq_changed_rows after delete on oauth_artifacts for each statement execute function dbq_store_changed()`.execute(
        db,
      );
      await sql`create trigger dbq_changed_truncate after truncate on oauth_grants for each statement execute function dbq_store_changed()`.execute(
        db,
      );
      await sql`create trigger dbq_changed_truncate after truncate on oauth_artifacts for each statement execute function dbq_store_changed()`.execute(
        db,
      );
    },
  },
};
