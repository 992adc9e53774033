import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

export const PG_URL = 'postgres://postgres@127.0.0.1:5432/test';
export const MYSQL_URL = 'mysql://root@127.0.0.1:3306/test';

export function tempDir(prefix = 'dbq-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** A fresh, empty PostgreSQL database for a store test; dropped by the returned cleanup. */
export async function freshPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `dbq_store_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return {
    url: `postgres://postgres@127.0.0.1:5432/${name}`,
    async drop() {
      const c = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}
