import type { Migration } from 'kysely';

// Migrations numbered 0013_… (append only, as in ../migrations.ts).
export const ssoMigrations: Record<string, Migration> = {};
