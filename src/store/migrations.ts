// Versioned migrations, applied at start by every process (the Kysely migrator takes a lock,
// so two processes starting together on one PostgreSQL store do not race). Append only:
// a released migration is never edited.
import { PostgresAdapter, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import { annotationMigrations } from './migrations/annotations.ts';
import { asyncQueryMigrations } from './migrations/async-queries.ts';
import { oauthMigrations } from './migrations/oauth.ts';
import { ssoMigrations } from './migrations/sso.ts';

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
  // Web app sign-in: server-side sessions, only a SHA-256 of the cookie token is
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
  // One-time "set your password" links: a user made without a
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
  // SSH bastions: the public part as JSON; the key or password joins the
  // sealed secret.
  '0006_ssh_tunnels': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('connections').addColumn('ssh', 'text').execute();
    },
  },
  // Least privilege: key scopes and expiry, the workspace's longest key lifetime,
  // per-connection grants, curated tools (one row per version), the audit log, and the tool a
  // history entry ran.
  '0007_least_privilege': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('api_keys').addColumn('scope', 'text').execute();
      await db.schema.alterTable('api_keys').addColumn('expires_at', 'text').execute();
      // Set once, by the first refused request after expiry, so `key.expired` is audited once.
      await db.schema
        .alterTable('api_keys')
        .addColumn('expiry_audited', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('workspaces').addColumn('max_key_days', 'integer').execute();
      await db.schema
        .alterTable('connections')
        .addColumn('grants_everyone', 'integer', (c) => c.notNull().defaultTo(1))
        .execute();
      await db.schema
        .createTable('connection_grants')
        .addColumn('connection_id', 'text', (c) => c.notNull().references('connections.id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('connection_grants_pk', ['connection_id', 'user_id'])
        .execute();
      await db.schema.createIndex('connection_grants_user').on('connection_grants').columns(['user_id', 'connection_id']).execute();
      await db.schema
        .createTable('curated_tools')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('connection_id', 'text', (c) => c.notNull())
        .addColumn('sql', 'text', (c) => c.notNull())
        .addColumn('parameters', 'text', (c) => c.notNull())
        .addColumn('max_rows', 'integer', (c) => c.notNull())
        .addColumn('created_by', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        // Set on the newest version when the tool is deleted; older versions stay for history.
        .addColumn('deleted_at', 'text')
        .addUniqueConstraint('curated_tools_version', ['workspace_id', 'name', 'version'])
        .execute();
      await db.schema
        .createTable('audit_log')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('actor_user_id', 'text')
        .addColumn('actor_email', 'text')
        .addColumn('actor_key_id', 'text')
        .addColumn('target_type', 'text', (c) => c.notNull())
        .addColumn('target_id', 'text')
        .addColumn('target_name', 'text')
        .addColumn('changes', 'text')
        .addColumn('ip', 'text')
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('audit_log_workspace').on('audit_log').columns(['workspace_id', 'id']).execute();
      // Append-only in the store itself, not only by convention: an entry cannot be edited.
      // Deleting stays possible, for retention (DBQ_AUDIT_DAYS).
      if (db.getExecutor().adapter instanceof PostgresAdapter) {
        await sql`create function dbq_audit_append_only() returns trigger language plpgsql as $$
          begin raise exception 'audit_log is append-only'; end $$`.execute(db);
        await sql`create trigger audit_log_append_only before update on audit_log for each row execute function dbq_audit_append_only()`.execute(
          db,
        );
      } else {
        await sql`create trigger audit_log_append_only before update on audit_log begin select raise(abort, 'audit_log is append-only'); end`.execute(
          db,
        );
      }
      await db.schema.alterTable('query_history').addColumn('tool_name', 'text').execute();
      await db.schema.alterTable('query_history').addColumn('tool_version', 'integer').execute();
    },
  },
  // Several processes at one process's speed. PostgreSQL only: triggers on every
  // table a key or connection look-up reads bump a one-row change counter and NOTIFY
  // `dbq_store_change` in the writer's transaction (src/store/pg-changes.ts caches look-ups
  // on it); an UPDATE of api_keys.last_used_at alone (bookkeeping) signals nothing. Both
  // stores: indexes for GET history's filters, each an (equality, id) walk in keyset order;
  // on PostgreSQL a trigram index for the substring search when pg_trgm can be created.
  '0008_store_change_notify': {
    async up(db: Kysely<any>) {
      for (const [name, column] of [
        ['query_history_connection', 'connection_id'],
        ['query_history_connection_name', 'connection_name'],
        ['query_history_status', 'status'],
        ['query_history_source', 'source'],
      ]) {
        // if not exists: an operator may have built them beforehand, CONCURRENTLY (docs/deployment.md).
        await db.schema.createIndex(name).ifNotExists().on('query_history').columns(['workspace_id', column, 'id']).execute();
      }
      if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
      await sql`create table dbq_store_changes (id integer primary key, counter bigint not null)`.execute(db);
      await sql`insert into dbq_store_changes (id, counter) values (1, 0)`.execute(db);
      await sql`
        create or replace function dbq_store_changed() returns trigger language plpgsql as $$
        begin
          update dbq_store_changes set counter = counter + 1 where id = 1;
          perform pg_notify('dbq_store_change', tg_table_name);
          return null;
        end $$`.execute(db);
      for (const table of ['workspaces', 'users', 'api_keys', 'connections', 'connection_grants', 'curated_tools']) {
        const { rows } = await sql<{ present: string | null }>`select to_regclass(${table})::text as present`.execute(db);
        if (!rows[0]?.present) continue;
        if (table === 'api_keys') {
          await sql
            .raw(
              `create trigger dbq_changed_rows after insert or delete on api_keys for each statement execute function dbq_store_changed()`,
            )
            .execute(db);
          await sql
            .raw(
              `create trigger dbq_changed_update after update on api_keys for each row
            when ((to_jsonb(old) - 'last_used_at') is distinct from (to_jsonb(new) - 'last_used_at')) execute function dbq_store_changed()`,
            )
            .execute(db);
        } else {
          await sql
            .raw(
              `create trigger dbq_changed_rows after insert or update or delete on ${table} for each statement execute function dbq_store_changed()`,
            )
            .execute(db);
        }
        await sql
          .raw(`create trigger dbq_changed_truncate after truncate on ${table} for each statement execute function dbq_store_changed()`)
          .execute(db);
      }
      // Substring search (`lower(sql) like '%…%'`): pg_trgm ships with PostgreSQL's contrib
      // (Debian's postgresql package includes it). Creating an extension may need rights the
      // store's user lacks; then search stays a filtered walk of the keyset index.
      // Migrations run in one transaction: a savepoint keeps a refusal from aborting it.
      await sql`savepoint dbq_trgm`.execute(db);
      try {
        await sql`create extension if not exists pg_trgm`.execute(db);
        await sql`release savepoint dbq_trgm`.execute(db);
      } catch {
        await sql`rollback to savepoint dbq_trgm`.execute(db);
        return;
      }
      await sql`create index if not exists query_history_sql_trgm on query_history using gin (lower(sql) gin_trgm_ops)`.execute(db);
    },
  },
  // History search at 10M entries. SQLite only (PostgreSQL has its pg_trgm index):
  // a trigram full-text index of the history's statements, contentless (the text stays in
  // query_history alone), keyed by query_history's rowid and split into partitions of
  // `partition_rows` rowids, FTS5 tables src/history/search-index.ts creates as it goes. It is
  // filled behind the writes, in batches — never in the INSERT's transaction, where it cost
  // 75 µs per entry — so it may lag; the state row says how far it reaches (a search reads past
  // that point without it). Retention never deletes from it entry by entry (FTS5 deletes in a
  // 10M-entry index stalled the event loop for 0.5–3 s): a partition is dropped once all its
  // entries are gone, and an entry deleted in between is only a candidate its check rejects.
  // The trigger handles the one delete that matters: the newest entries' (a workspace's
  // cascade), whose rowids the next INSERTs reuse. It pulls the watermark down and records
  // the range whose index entries must go before those rowids are indexed again.
  '0009_history_search_index': {
    async up(db: Kysely<any>) {
      if (db.getExecutor().adapter instanceof PostgresAdapter) return;
      await sql`
        create table query_history_search_state (
          id integer primary key check (id = 1),
          indexed_rowid integer not null,
          indexed_id text,
          stale_upto integer,
          partition_rows integer not null
        )`.execute(db);
      await sql`insert into query_history_search_state (id, indexed_rowid, indexed_id, stale_upto, partition_rows) values (1, 0, null, null, 1048576)`.execute(
        db,
      );
      await sql`
        create trigger query_history_search_delete after delete on query_history
        when old.rowid <= (select indexed_rowid from query_history_search_state where id = 1)
          and old.rowid > (select coalesce(max(rowid), 0) from query_history)
        begin
          update query_history_search_state
            set stale_upto = max(coalesce(stale_upto, 0), indexed_rowid),
                indexed_rowid = (select coalesce(max(rowid), 0) from query_history),
                indexed_id = null
            where id = 1;
        end`.execute(db);
    },
  },
  // Later features keep their migrations beside the feature's own files, one module each.
  ...asyncQueryMigrations,
  ...oauthMigrations,
  ...ssoMigrations,
  ...annotationMigrations,
};

export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    return migrations;
  },
};

/** Where the Kysely migrator records what it ran, in both stores. */
export const MIGRATION_TABLE = 'dbq_migrations';
export const MIGRATION_LOCK_TABLE = 'dbq_migrations_lock';

export interface MigrationStatus {
  /** Known to this code and recorded as run, oldest first, with when. */
  applied: Array<{ name: string; executedAt: string }>;
  /** Known to this code, not run yet: the next start runs them. */
  pending: string[];
  /** Recorded as run but unknown to this code: the store was migrated by a newer dbq. */
  unknown: Array<{ name: string; executedAt: string }>;
}

/** Whether the migrator's table exists: one catalog look-up (this runs at every start), not
 * an introspection of every table and column. */
async function migrationTableExists(db: Kysely<any>): Promise<boolean> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    const { rows } = await sql<{ found: string | null }>`select to_regclass(${MIGRATION_TABLE})::text as found`.execute(db);
    return rows[0]?.found != null;
  }
  const { rows } = await sql`select 1 from sqlite_master where type = 'table' and name = ${MIGRATION_TABLE}`.execute(db);
  return rows.length > 0;
}

/** What the store has run against what this code knows, read without migrating anything. */
export async function readMigrationStatus(db: Kysely<any>): Promise<MigrationStatus> {
  const ran = (await migrationTableExists(db))
    ? await db.selectFrom(MIGRATION_TABLE).select(['name', 'timestamp']).orderBy('name').execute()
    : [];
  const known = Object.keys(migrations).sort();
  const recorded = new Map(ran.map((r: { name: string; timestamp: string }) => [r.name, String(r.timestamp)]));
  return {
    applied: known.filter((n) => recorded.has(n)).map((name) => ({ name, executedAt: recorded.get(name)! })),
    pending: known.filter((n) => !recorded.has(n)),
    unknown: [...recorded].filter(([n]) => !(n in migrations)).map(([name, executedAt]) => ({ name, executedAt })),
  };
}

/**
 * The start-up check before migrating: a store that has run a migration this code does not
 * know was upgraded by a newer dbq (or rolled back by putting old code on it). Running the old
 * code would read and write a schema it does not understand; Kysely's own refusal
 * ("corrupted migrations") names no way out, so this one does.
 */
export async function assertStoreNotNewer(db: Kysely<any>): Promise<void> {
  const { unknown } = await readMigrationStatus(db);
  if (unknown.length === 0) return;
  throw new Error(
    `This store is newer than this dbq: it has run migration${unknown.length > 1 ? 's' : ''} ${unknown.map((u) => u.name).join(', ')}, ` +
      'which this version does not know. Run the dbq version that migrated it (or a later one), or restore the backup taken before ' +
      'the upgrade (docs/upgrading.md: migrations are forward-only).',
  );
}
