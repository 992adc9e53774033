// Connection records: validation, storage with sealed secrets, and the public shape (which
// never carries a password, in no endpoint, log or error).
import type { Kysely } from 'kysely';
import { inTransaction, recordAudit, type Actor } from '../audit/audit.ts';
import { z } from 'zod';
import { ConflictError, ConnectionNotFoundError, InvalidRequestError, SecretUnreadableError } from '../errors.ts';
import { ENGINE_NAMES, type ReadAccess } from '../engines/engine.ts';
import { newId, nowIso } from '../ids.ts';
import type { ConnectionRow, Database } from '../store/schema.ts';
import type { Memo } from '../store/store.ts';
import { checkConnectionTarget, type ConnectionTargets } from './connection-targets.ts';
import { parseConnectionUrl, type ConnectionFields } from './connection-url.ts';
import type { SecretBox } from '../secrets/secret-box.ts';
import { resolveSqlitePath, workspaceSqliteDir } from '../sqlite-files/sqlite-path.ts';
import { createdChanges, secretsOf, updatedChanges } from './connection-audit.ts';
import { refuseNulCharacters, resolveReader, resolveSettings } from './connection-input.ts';
import {
  fieldsOf,
  publicSsh,
  readerOf,
  readFieldsOf,
  sealSecrets,
  toEngineConfig,
  type PublicSsh,
  type ReaderCredentials,
} from './connection-fields.ts';

// Callers import these from here, with the rest of the connection API.
export { fieldsOf, readerOf, readFieldsOf, refuseNulCharacters, resolveReader, resolveSettings, toEngineConfig };
export type { ReaderCredentials };

export interface ConnectionRecord {
  id: string;
  name: string;
  engine: ConnectionRow['engine'];
  host: string | null;
  port: number | null;
  database: string;
  user: string | null;
  ssl: boolean;
  readOnly: boolean;
  maxConnections: number;
  /** The user every read logs in as, when the connection has reader credentials. */
  readUser: string | null;
  /** What the credential used for reads can do beyond reading; null until audited. */
  readAccess: ReadAccess | null;
  /** The SSH bastion, without its key or password; hostKey is the pinned SHA256 fingerprint. */
  ssh: PublicSsh | null;
  createdAt: string;
  updatedAt: string;
}

// Names double as connection ids in requests, so they stay short and unambiguous: no
// whitespace, and no `conn_` prefix that could shadow a real id.
const nameSchema = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'use letters, digits, _ . -')
  .refine((n) => !n.startsWith('conn_'), 'must not start with conn_');

/** The connection settings of a create/test body: a URL, or the fields one by one. `.strict()`
 * refuses unknown keys, so driver options can never ride along. */
export const connectionSettingsShape = {
  engine: z.enum(ENGINE_NAMES as [string, ...string[]]).optional(),
  url: z.string().min(1).max(4096).optional(),
  host: z.string().trim().min(1).max(255).optional(),
  port: z.number().int().min(1).max(65535).optional(),
  database: z.string().min(1).max(1024).optional(),
  user: z.string().max(255).optional(),
  password: z.string().max(4096).nullable().optional(),
  ssl: z.boolean().optional(),
  // TLS with a CA of the connection's own (verify-full against it) and a client certificate:
  // PEM text, sealed with the password, never shown back; null removes it.
  sslCa: z
    .string()
    .min(1)
    .max(65536)
    .nullable()
    .optional()
    .describe("PEM of the CA(s) the server's certificate must chain to, instead of the system's; implies ssl; write-only"),
  sslCert: z.string().min(1).max(65536).nullable().optional().describe('PEM client certificate, with sslKey; write-only'),
  sslKey: z.string().min(1).max(65536).nullable().optional().describe('PEM private key of sslCert, unencrypted; write-only'),
  readOnly: z.boolean().optional(),
  maxConnections: z.number().int().min(1).max(100).optional(),
  // Reader credentials: a URL of the same engine, host and database (only its user and
  // password are kept), or the user and password; `readUser: null` removes them.
  readUrl: z
    .string()
    .min(1)
    .max(4096)
    .optional()
    .describe('Reader credentials as a URL of the same engine, host, port and database; write-only'),
  readUser: z
    .string()
    .min(1)
    .max(255)
    .nullable()
    .optional()
    .describe('The user every read logs in as; null removes the reader credentials'),
  readPassword: z.string().max(4096).nullable().optional().describe("readUser's password; write-only"),
  // An SSH bastion the database is reached through (docs/security.md, SSH tunnels); null removes it.
  ssh: z
    .object({
      host: z.string().trim().min(1).max(255),
      port: z.number().int().min(1).max(65535).optional(),
      user: z.string().min(1).max(255),
      privateKey: z.string().min(1).max(65536).optional().describe('OpenSSH or PEM private key, unencrypted; write-only'),
      password: z.string().min(1).max(4096).optional().describe('write-only'),
      hostKey: z
        .string()
        .min(1)
        .max(65536)
        .describe("The bastion's host key: a known_hosts line, `ssh-ed25519 AAAA…`, or its SHA256: fingerprint"),
    })
    .strict()
    .nullable()
    .optional()
    .describe('SSH bastion; privateKey or password, and hostKey, are required; null removes it'),
};

/** Create a login that can only read with the connection's (admin) credentials and store it
 * as the reader credentials (save-connection.ts). */
const createReaderShape = {
  createReader: z
    .boolean()
    .optional()
    .describe("Create a login that can only read with this connection's credentials and use it for every read"),
};

export const createConnectionSchema = z.object({ name: nameSchema, ...connectionSettingsShape, ...createReaderShape }).strict();
export const updateConnectionSchema = z.object({ name: nameSchema.optional(), ...connectionSettingsShape, ...createReaderShape }).strict();
export const adHocConnectionSchema = z.object(connectionSettingsShape).strict();

export type CreateConnectionInput = z.infer<typeof createConnectionSchema>;
export type UpdateConnectionInput = z.infer<typeof updateConnectionSchema>;
export type AdHocConnectionInput = z.infer<typeof adHocConnectionSchema>;

export interface ConnectionDeps {
  db: Kysely<Database>;
  secretBox: SecretBox;
  /** DBQ_SQLITE_DIR: a workspace's `sqlite:<file>` resolves in its `<slug>/` directory only. */
  sqliteDir: string;
  /** DBQ_CONNECTION_TARGETS (services.ts); absent or null: any host. */
  connectionTargets?: ConnectionTargets | null;
}

/** Where the settings point must be a host the server may dial (connection-targets.ts), or a
 * file in the workspace's own SQLite directory. */
async function checkWhere(deps: ConnectionDeps, fields: ConnectionFields, sqliteDir: () => Promise<string>): Promise<void> {
  if (fields.engine === 'sqlite') resolveSqlitePath(await sqliteDir(), fields.database);
  else {
    await checkConnectionTarget(deps.connectionTargets ?? null, fields.host!);
    // Through a bastion dbq dials the bastion itself; the database host must be allowed too.
    if (fields.ssh) await checkConnectionTarget(deps.connectionTargets ?? null, fields.ssh.host);
  }
}

/** A record as looked up for use, with its workspace's slug: a SQLite file resolves inside
 * DBQ_SQLITE_DIR/<slug>/, and pools are opened synchronously from the row (pool-registry.ts). */
export type StoredConnectionRow = ConnectionRow & { workspace_slug: string };

/** The slug of the workspace a row belongs to, when it was looked up by getConnectionRow. */
export function workspaceSlugOf(row: ConnectionRow): string | null {
  const slug = (row as Partial<StoredConnectionRow>).workspace_slug;
  return typeof slug === 'string' ? slug : null;
}

/** The SQLite directory of a workspace, by id. */
async function sqliteDirOf(deps: ConnectionDeps, workspaceId: string): Promise<string> {
  const ws = await deps.db.selectFrom('workspaces').select('slug').where('id', '=', workspaceId).executeTakeFirstOrThrow();
  return workspaceSqliteDir(deps.sqliteDir, ws.slug);
}

export function toRecord(row: ConnectionRow): ConnectionRecord {
  return {
    id: row.id,
    name: row.name,
    engine: row.engine,
    host: row.host,
    port: row.port,
    database: row.database,
    user: row.username,
    ssl: row.ssl === 1,
    readOnly: row.read_only === 1,
    maxConnections: row.max_connections,
    readUser: row.read_username ?? null,
    readAccess: row.read_access ? (JSON.parse(row.read_access) as ReadAccess) : null,
    ssh: row.ssh ? (JSON.parse(row.ssh) as PublicSsh) : null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function listConnections(db: Kysely<Database>, workspaceId: string): Promise<ConnectionRecord[]> {
  const rows = await db.selectFrom('connections').selectAll().where('workspace_id', '=', workspaceId).orderBy('name').execute();
  return rows.map(toRecord);
}

/** Looks a connection up by id or by name, inside one workspace only. */
export async function getConnectionRow(
  db: Kysely<Database>,
  workspaceId: string,
  idOrName: string,
  memo?: Memo,
): Promise<StoredConnectionRow> {
  const column = idOrName.startsWith('conn_') ? 'id' : 'name';
  const lookup = () =>
    db
      .selectFrom('connections')
      .innerJoin('workspaces', 'workspaces.id', 'connections.workspace_id')
      .selectAll('connections')
      .select('workspaces.slug as workspace_slug')
      .where('connections.workspace_id', '=', workspaceId)
      .where(`connections.${column}`, '=', idOrName)
      .executeTakeFirst();
  const row = memo ? await memo(`conn:${workspaceId}:${column}:${idOrName}`, lookup) : await lookup();
  if (!row) throw new ConnectionNotFoundError();
  return row;
}

async function assertNameFree(db: Kysely<Database>, workspaceId: string, name: string, exceptId?: string): Promise<void> {
  const clash = await db
    .selectFrom('connections')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('name', '=', name)
    .executeTakeFirst();
  if (clash && clash.id !== exceptId) throw new ConflictError(`A connection named ${name} already exists`, { field: 'name' });
}

export async function createConnection(
  deps: ConnectionDeps,
  workspaceId: string,
  input: CreateConnectionInput,
  actor: Actor,
): Promise<ConnectionRecord> {
  // Making a login needs the database itself: addConnection (save-connection.ts) does it.
  if (input.createReader) throw new InvalidRequestError('createReader is handled by addConnection', { field: 'createReader' });
  const fields = resolveSettings(input);
  const reader = resolveReader(input, fields, null);
  await checkWhere(deps, fields, () => sqliteDirOf(deps, workspaceId));
  await assertNameFree(deps.db, workspaceId, input.name);
  const now = nowIso();
  const id = newId('conn');
  const row: ConnectionRow = {
    id,
    workspace_id: workspaceId,
    name: input.name,
    engine: fields.engine,
    grants_everyone: 1,
    host: fields.host,
    port: fields.port,
    database: fields.database,
    username: fields.user,
    ssl: fields.ssl ? 1 : 0,
    read_only: input.readOnly ? 1 : 0,
    max_connections: input.maxConnections ?? 10,
    secret: sealSecrets(deps.secretBox, id, fields, reader?.password ?? null),
    read_username: reader?.user ?? null,
    read_access: null,
    ssh: publicSsh(fields.ssh),
    created_at: now,
    updated_at: now,
  };
  const record = toRecord(row);
  try {
    await inTransaction(deps.db, async (trx) => {
      await trx.insertInto('connections').values(row).execute();
      await recordAudit(trx, {
        workspaceId,
        actor,
        action: 'connection.created',
        target: connectionTarget(record),
        changes: createdChanges(record, secretsOf(fields, reader)),
      });
    });
  } catch (err) {
    // Two creates raced past assertNameFree; the unique index decides.
    await assertNameFree(deps.db, workspaceId, input.name, id);
    throw err;
  }
  return record;
}

function connectionTarget(record: { id: string; name: string }) {
  return { type: 'connection', id: record.id, name: record.name };
}

export async function updateConnection(
  deps: ConnectionDeps,
  workspaceId: string,
  idOrName: string,
  input: UpdateConnectionInput,
  actor: Actor,
): Promise<ConnectionRecord> {
  if (input.createReader) throw new InvalidRequestError('createReader is handled by changeConnection', { field: 'createReader' });
  const row = await getConnectionRow(deps.db, workspaceId, idOrName);
  const old = storedSettings(row, deps.secretBox, input);
  const fields = resolveSettings(input, old.fields);
  // Reader credentials belong to one server: a connection moved to another engine drops them.
  const reader = resolveReader(input, fields, fields.engine === row.engine ? old.reader : null);
  await checkWhere(deps, fields, async () => workspaceSqliteDir(deps.sqliteDir, row.workspace_slug));
  if (input.name !== undefined) await assertNameFree(deps.db, workspaceId, input.name, row.id);
  const { workspace_slug: _slug, ...stored } = row;
  const updated: ConnectionRow = {
    ...stored,
    name: input.name ?? row.name,
    engine: fields.engine,
    host: fields.host,
    port: fields.port,
    database: fields.database,
    username: fields.user,
    ssl: fields.ssl ? 1 : 0,
    read_only: input.readOnly === undefined ? row.read_only : input.readOnly ? 1 : 0,
    max_connections: input.maxConnections ?? row.max_connections,
    secret: sealSecrets(deps.secretBox, row.id, fields, reader?.password ?? null),
    read_username: reader?.user ?? null,
    ssh: publicSsh(fields.ssh),
    // The settings may have changed: audited again by the caller (save-connection.ts).
    read_access: null,
    updated_at: laterThan(row.updated_at),
  };
  const { id: _id, workspace_id: _ws, created_at: _c, ...changes } = updated;
  const record = toRecord(updated);
  const audited = updatedChanges(toRecord(row), record, secretsOf(old.fields, old.reader), secretsOf(fields, reader));
  await inTransaction(deps.db, async (trx) => {
    await trx.updateTable('connections').set(changes).where('id', '=', row.id).execute();
    if (Object.keys(audited).length === 0) return;
    await recordAudit(trx, { workspaceId, actor, action: 'connection.updated', target: connectionTarget(record), changes: audited });
  });
  return record;
}

/** The stored settings an update starts from. Secrets this server's key cannot open (a lost or
 * replaced key) stop an update, unless it gives a new password (in `password` or the URL): then
 * they are replaced, not merged, since nothing of them can be read — the way back short of
 * removing the connection, which would drop its grants and change its id. Any other update keeps
 * refusing, so a key put back later still opens what is stored. */
function storedSettings(
  row: ConnectionRow,
  secretBox: SecretBox,
  input: { password?: string | null; url?: string },
): { fields: ConnectionFields; reader: ReaderCredentials | null } {
  try {
    return { fields: fieldsOf(row, secretBox), reader: readerOf(row, secretBox) };
  } catch (err) {
    const newPassword = typeof input.password === 'string' || (input.url !== undefined && parseConnectionUrl(input.url).password !== null);
    if (!(err instanceof SecretUnreadableError) || !newPassword) throw err;
    const unsealed = { ...row, secret: null };
    return { fields: fieldsOf(unsealed, secretBox), reader: readerOf(unsealed, secretBox) };
  }
}

export async function deleteConnection(
  db: Kysely<Database>,
  workspaceId: string,
  idOrName: string,
  actor: Actor,
): Promise<ConnectionRecord> {
  const row = await getConnectionRow(db, workspaceId, idOrName);
  const record = toRecord(row);
  await inTransaction(db, async (trx) => {
    await trx.deleteFrom('connections').where('id', '=', row.id).execute();
    await recordAudit(trx, {
      workspaceId,
      actor,
      action: 'connection.deleted',
      target: connectionTarget(record),
      changes: { engine: record.engine, host: record.host, database: record.database },
    });
  });
  return record;
}

/** updated_at doubles as the pool fingerprint (see pool-registry.ts), so an edit must change it
 * even when made within the same millisecond as the previous one. */
function laterThan(previous: string): string {
  const now = Date.now();
  const prev = Date.parse(previous);
  return new Date(now > prev ? now : prev + 1).toISOString();
}
