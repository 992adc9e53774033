// What the machine's PostgreSQL is running: tests wait for a statement to be under way (or
// gone) by a marker in its text, rather than sleeping until it probably is.
import pg from 'pg';
import { PG_URL } from './databases.ts';

/** How many backends, other than the asking one, run a statement whose text holds `marker`
 * (on `client`, else on a connection of its own to the machine's server). */
export async function backendsRunning(marker: string, client?: pg.Client): Promise<number> {
  const sql = 'SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE $1 AND pid <> pg_backend_pid()';
  if (client) return (await client.query(sql, [`%${marker}%`])).rows[0].n as number;
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    return (await c.query(sql, [`%${marker}%`])).rows[0].n as number;
  } finally {
    await c.end();
  }
}
