// Saving a connection from a front door (API, web, CLI): the record (connections.ts) plus what
// needs the database itself: a login that can only read, made with the connection's own
// credentials when asked (createReader), and the privilege audit of the credential reads use.
import type { Actor } from '../audit/audit.ts';
import type { Services } from '../services.ts';
import {
  createConnection,
  fieldsOf,
  getConnectionRow,
  resolveReader,
  resolveSettings,
  updateConnection,
  type ConnectionDeps,
  type ConnectionRecord,
  type CreateConnectionInput,
  type UpdateConnectionInput,
} from './connections.ts';
import type { ConnectionFields } from './connection-url.ts';
import { auditConnection } from './read-access.ts';
import { createReaderLogin, dropReaderLogin } from './reader-login.ts';

function depsOf(svc: Services): ConnectionDeps {
  return { db: svc.db, secretBox: svc.secretBox, sqliteDir: svc.config.sqliteDir, connectionTargets: svc.connectionTargets };
}

/** Creates the reader login when asked, then `save` with it; a failed save drops the login. */
async function withReader<T>(
  svc: Services,
  input: { createReader?: boolean },
  fields: () => Promise<ConnectionFields>,
  save: (reader: { readUser: string; readPassword: string } | null) => Promise<T>,
): Promise<T> {
  if (!input.createReader) return save(null);
  const admin = await fields();
  const reader = await createReaderLogin(svc, admin);
  try {
    return await save({ readUser: reader.user, readPassword: reader.password });
  } catch (err) {
    await dropReaderLogin(svc, admin, reader.user);
    throw err;
  }
}

async function audited(svc: Services, workspaceId: string, record: ConnectionRecord): Promise<ConnectionRecord> {
  const row = await getConnectionRow(svc.db, workspaceId, record.id);
  return { ...record, readAccess: await auditConnection(svc, row) };
}

export async function addConnection(
  svc: Services,
  workspaceId: string,
  input: CreateConnectionInput,
  actor: Actor,
): Promise<ConnectionRecord> {
  const { createReader, ...rest } = input;
  const record = await withReader(
    svc,
    input,
    async () => {
      const fields = resolveSettings(rest);
      resolveReader(input, fields, null); // its 400s before anything is created
      return fields;
    },
    (reader) => createConnection(depsOf(svc), workspaceId, { ...rest, ...reader }, actor),
  );
  return audited(svc, workspaceId, record);
}

export async function changeConnection(
  svc: Services,
  workspaceId: string,
  idOrName: string,
  input: UpdateConnectionInput,
  actor: Actor,
): Promise<ConnectionRecord> {
  const { createReader, ...rest } = input;
  const record = await withReader(
    svc,
    input,
    async () => {
      const row = await getConnectionRow(svc.db, workspaceId, idOrName);
      const fields = resolveSettings(rest, fieldsOf(row, svc.secretBox));
      resolveReader(input, fields, null);
      return fields;
    },
    (reader) => updateConnection(depsOf(svc), workspaceId, idOrName, { ...rest, ...reader }, actor),
  );
  await svc.pools.drop(record.id);
  return audited(svc, workspaceId, record);
}
