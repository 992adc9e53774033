import type { Migration } from 'kysely';

// Migrations numbered 0011_… (append only, as in ../migrations.ts).
export const asyncQueryMigrations: Record<string, Migration> = {};
