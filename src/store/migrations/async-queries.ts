import type { Kysely, Migration } from 'kysely';

// Migrations numbered 0011_… (append only, as in ../migrations.ts).
export const asyncQueryMigrations: Record<string, Migration> = {
  // Async queries and statements in flight seen from every process (src/query/async-store.ts,
  // src/query/shared-running.ts). `async_queries`: an async query's state and, once finished,
  // its result as the JSON text GET sends, until `expires_at` (ms since the epoch).
  // `running_queries`: the statements a process lets the others see and cancel — async ones
  // from their start, any other once it has run for a second — with the cancel request the
  // owner polls for. `heartbeat_at` (ms) is refreshed by the owner while it runs: a row whose
  // owner stopped refreshing is a process that died. Neither table is part of the look-up
  // caches' change signal (change-epoch.ts's untracked tables).
  '0011_async_queries': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('async_queries')
        .addColumn('query_id', 'text', (c) => c.primaryKey())
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('connection_id', 'text', (c) => c.notNull())
        .addColumn('instance_id', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('submitted_at', 'text', (c) => c.notNull())
        .addColumn('finished_at', 'text')
        .addColumn('heartbeat_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint')
        .addColumn('bytes', 'bigint', (c) => c.notNull().defaultTo(0))
        // A result past 1 MiB is stored in `async_query_parts` instead of `result_json`.
        .addColumn('parts', 'integer', (c) => c.notNull().defaultTo(0))
        // Last: SQLite reads a row's columns in order, through the overflow pages of a large
        // value, so nothing read without the result sits after it.
        .addColumn('error_json', 'text')
        .addColumn('result_json', 'text')
        .execute();
      await db.schema.createIndex('async_queries_expires').on('async_queries').column('expires_at').execute();
      // The bound on finished results sums their sizes at every finish: from this index alone,
      // never from the rows holding the results.
      await db.schema.createIndex('async_queries_finished').on('async_queries').columns(['status', 'query_id', 'bytes']).execute();
      // A large result in pieces, each written (and read) by its own statement: the SQLite
      // store runs on the event loop, and 32 MiB in one statement held it for ~100 ms.
      await db.schema
        .createTable('async_query_parts')
        .addColumn('query_id', 'text', (c) => c.notNull().references('async_queries.query_id').onDelete('cascade'))
        .addColumn('n', 'integer', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('async_query_parts_pk', ['query_id', 'n'])
        .execute();
      await db.schema
        .createTable('running_queries')
        .addColumn('query_id', 'text', (c) => c.primaryKey())
        .addColumn('instance_id', 'text', (c) => c.notNull())
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('connection_id', 'text', (c) => c.notNull())
        .addColumn('connection_name', 'text', (c) => c.notNull())
        .addColumn('sql', 'text', (c) => c.notNull())
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('started_at', 'text', (c) => c.notNull())
        .addColumn('heartbeat_at', 'bigint', (c) => c.notNull())
        .addColumn('cancel_requested', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('outcome', 'text')
        .addColumn('ended_at', 'bigint')
        .execute();
      await db.schema.createIndex('running_queries_workspace').on('running_queries').columns(['workspace_id', 'outcome']).execute();
      await db.schema.createIndex('running_queries_instance').on('running_queries').columns(['instance_id', 'outcome']).execute();
    },
  },
};
