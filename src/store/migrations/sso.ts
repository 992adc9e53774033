import { sql, type Kysely, type Migration } from 'kysely';

// Migrations numbered 0013_… (append only, as in ../migrations.ts).
export const ssoMigrations: Record<string, Migration> = {
  // Single sign-on (OIDC) of a workspace: one row or none. The client secret is sealed by
  // src/secrets (bound to `sso:<workspace_id>`); allowed_domains is a JSON array of
  // lower-case domains. The sign-in's own state (PKCE verifier, state, nonce) is never stored:
  // it rides in a sealed, short-lived cookie (src/sso/sso-flow.ts).
  '0013_sso': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('workspace_sso')
        .addColumn('workspace_id', 'text', (c) => c.primaryKey().references('workspaces.id').onDelete('cascade'))
        .addColumn('issuer', 'text', (c) => c.notNull())
        .addColumn('client_id', 'text', (c) => c.notNull())
        .addColumn('client_secret', 'text', (c) => c.notNull())
        .addColumn('allowed_domains', 'text', (c) => c.notNull())
        .addColumn('default_role', 'text', (c) => c.notNull())
        .addColumn('password_sign_in', 'integer', (c) => c.notNull().defaultTo(sql`1`))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  // Which identity at the provider each user is: (issuer, sub) is stable where an email can be
  // reassigned, so once linked a user is only ever signed in by that subject, and another
  // subject presenting the same email is refused (src/sso/sso-users.ts). One link per user and
  // issuer; users who signed in before this are linked at their next sign-in.
  '0015_sso_identities': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('sso_identities')
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('issuer', 'text', (c) => c.notNull())
        .addColumn('subject', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('sso_identities_pk', ['workspace_id', 'issuer', 'subject'])
        .execute();
      await db.schema
        .createIndex('sso_identities_user')
        .unique()
        .on('sso_identities')
        .columns(['workspace_id', 'issuer', 'user_id'])
        .execute();
    },
  },
};
