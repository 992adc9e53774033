// Versioned migrations, applied at start by every process (the Kysely migrator takes a lock,
// so two processes starting together on one PostgreSQL store do not race). Append only:
// a released migration is never edited.
import type { Kysely, Migration, MigrationProvider } from 'kysely';

const migrations: Record<string, Migration> = {
  '0001_initial': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('workspaces')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('slug', 'text', (c) => c.notNull().unique())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('plan', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('users')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('password_hash', 'text')
        .addColumn('disabled_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('users_workspace_email', ['workspace_id', 'email'])
        .execute();
      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('prefix', 'text', (c) => c.notNull())
        .addColumn('hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_used_at', 'text')
        .addColumn('revoked_at', 'text')
        .execute();
      await db.schema.createIndex('api_keys_workspace').on('api_keys').columns(['workspace_id', 'created_at']).execute();
      await db.schema
        .createTable('connections')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('engine', 'text', (c) => c.notNull())
        .addColumn('host', 'text')
        .addColumn('port', 'integer')
        .addColumn('database', 'text', (c) => c.notNull())
        .addColumn('username', 'text')
        .addColumn('ssl', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('read_only', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('max_connections', 'integer', (c) => c.notNull().defaultTo(10))
        .addColumn('secret', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('connections_workspace_name', ['workspace_id', 'name'])
        .execute();
      await db.schema
        .createTable('query_history')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('query_id', 'text', (c) => c.notNull())
        .addColumn('connection_id', 'text', (c) => c.notNull())
        .addColumn('connection_name', 'text', (c) => c.notNull())
        .addColumn('sql', 'text', (c) => c.notNull())
        .addColumn('statement_type', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('row_count', 'integer')
        .addColumn('affected_rows', 'bigint')
        .addColumn('duration_ms', 'integer', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('api_key_id', 'text')
        .addColumn('api_key_name', 'text')
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('user_email', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      // Keyset paging walks (workspace_id, id DESC); ids are time-ordered.
      await db.schema.createIndex('query_history_page').on('query_history').columns(['workspace_id', 'id']).execute();
      await db.schema.createIndex('query_history_user').on('query_history').columns(['workspace_id', 'user_id', 'id']).execute();
      await db.schema.createIndex('query_history_created').on('query_history').column('created_at').execute();
    },
  },
  // Web app sign-in (issue 6): server-side sessions, only a SHA-256 of the cookie token is
  // stored; and the one-time setup token that lets the first admin of an empty workspace in.
  '0002_web_sessions': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('web_sessions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_seen_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('web_sessions_user').on('web_sessions').column('user_id').execute();
      await db.schema.createIndex('web_sessions_expires').on('web_sessions').column('expires_at').execute();
      await db.schema
        .createTable('web_setup_tokens')
        .addColumn('workspace_id', 'text', (c) => c.primaryKey().references('workspaces.id').onDelete('cascade'))
        .addColumn('token_hash', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  // Every query writes a history row, and each index is one more B-tree insert on that path.
  // Retention finds old entries through the time-ordered primary key instead (pruneHistory).
  '0003_history_prune_by_id': {
    async up(db: Kysely<any>) {
      await db.schema.dropIndex('query_history_created').execute();
    },
  },
  // Reader credentials (Read-only v2): the user every read of a connection logs in as (its
  // password rides in the sealed `secret` beside the main one), and the last privilege audit of
  // the credential reads use, as JSON; null until known. One column per statement: SQLite's
  // ALTER TABLE adds one at a time.
  '0004_reader_credentials': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('connections').addColumn('read_username', 'text').execute();
      await db.schema.alterTable('connections').addColumn('read_access', 'text').execute();
    },
  },
  // One-time "set your password" links (issue "A newcomer's first hour"): a user made without a
  // password, or an admin's reset. Hashed like sessions; one live link per user.
  '0005_password_tokens': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('password_tokens')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('password_tokens_user').on('password_tokens').column('user_id').execute();
    },
  },
  // SSH bastions (issue 18 item 5): the public part as JSON; the key or password joins the
  // sealed secret.
  '0006_ssh_tunnels': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('connections').addColumn('ssh', 'text').execute();
    },
  },
};

export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    return migrations;
  },
};
