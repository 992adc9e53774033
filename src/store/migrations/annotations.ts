import type { Migration } from 'kysely';

// Migrations numbered 0014_… (append only, as in ../migrations.ts).
export const annotationMigrations: Record<string, Migration> = {};
