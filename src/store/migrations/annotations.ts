import type { Kysely, Migration } from 'kysely';

// Migrations numbered 0014_… (append only, as in ../migrations.ts).
export const annotationMigrations: Record<string, Migration> = {
  // Business context of a connection (src/annotations): one row per version, the whole
  // document as JSON; a PUT adds version n+1, like curated_tools. Old versions stay for history.
  '0014_connection_annotations': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('connection_annotations')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('connection_id', 'text', (c) => c.notNull().references('connections.id').onDelete('cascade'))
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('created_by', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('connection_annotations_version', ['connection_id', 'version'])
        .execute();
    },
  },
};
