import type { Migration } from 'kysely';

// Migrations numbered 0012_… (append only, as in ../migrations.ts).
export const oauthMigrations: Record<string, Migration> = {};
