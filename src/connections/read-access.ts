// The privilege audit of the credential a connection's reads use (the reader credentials, else
// the connection's own). Computed when a record is created, changed or tested and stored with
// it (read_access), so listing connections never dials a database.
import type { Kysely } from 'kysely';
import type { Engine, ReadAccess } from '../engines/engine.ts';
import { ConnectionFailedError, DbqError } from '../errors.ts';
import type { Services } from '../services.ts';
import type { ConnectionRow, Database } from '../store/schema.ts';

/** engine.readAccess(), bounded in time. */
async function auditEngine(engine: Engine, timeoutMs: number): Promise<ReadAccess> {
  if (!engine.readAccess) throw new Error(`the ${engine.name} engine cannot audit privileges`);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ConnectionFailedError(`timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([engine.readAccess(), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Stores an audit of `row`'s settings, unless the record changed since it was read: then the
 * audit describes credentials it no longer has. Leaves updated_at alone (the pool fingerprint). */
export async function storeReadAccess(db: Kysely<Database>, row: ConnectionRow, access: ReadAccess): Promise<void> {
  await db
    .updateTable('connections')
    .set({ read_access: JSON.stringify(access) })
    .where('id', '=', row.id)
    .where('updated_at', '=', row.updated_at)
    .execute();
}

/** Audits a stored record and stores the outcome. A database that cannot be reached leaves it
 * null: a record is saved whether or not its database is up, and the next test fills it in. */
export async function auditConnection(svc: Services, row: ConnectionRow): Promise<ReadAccess | null> {
  let access: ReadAccess;
  try {
    access = await auditEngine(svc.pools.forRead(row), svc.config.connectionTestTimeoutMs);
  } catch (err) {
    // DbqError messages are the adapter's, built from fields that hold no password
    // (engines/connection-reason.ts); nothing else is logged.
    svc.logger.info({ connectionId: row.id, reason: err instanceof DbqError ? err.message : 'internal error' }, 'privilege audit failed');
    return null;
  }
  await storeReadAccess(svc.db, row, access);
  return access;
}
