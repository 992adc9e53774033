// From a connection's stored row back to what a login needs, and its secrets into the row: the
// password, the reader's password and the SSH bastion's key or password are sealed together
// under the connection's id (the row has no column for each), the bastion's public part is
// JSON, and toEngineConfig makes the config a pool opens with. connections.ts (the records and
// their storage) uses these and offers them to its callers with the rest of the connection API.
import { InvalidRequestError, SecretUnreadableError } from '../errors.ts';
import type { EngineConfig } from '../engines/engine.ts';
import type { SshSettings } from '../engines/ssh/ssh-tunnel.ts';
import type { SecretBox } from '../secrets/secret-box.ts';
import { resolveSqlitePath } from '../sqlite-files/sqlite-path.ts';
import type { ConnectionRow } from '../store/schema.ts';
import type { ConnectionFields } from './connection-url.ts';

export interface PublicSsh {
  host: string;
  port: number;
  user: string;
  hostKey: string;
}

/** Reader credentials: every read on the connection logs in as this user instead. */
export interface ReaderCredentials {
  user: string;
  password: string | null;
}

interface Secrets {
  password?: string;
  readPassword?: string;
  sshPrivateKey?: string;
  sshPassword?: string;
  // TLS: the CA is not secret, but it decides whom dbq trusts, so it is sealed (bound to the
  // row) with the client key rather than left editable in a plain column.
  sslCa?: string;
  sslCert?: string;
  sslKey?: string;
}

export function sealSecrets(secretBox: SecretBox, id: string, fields: ConnectionFields, readPassword: string | null): string | null {
  const secrets: Secrets = {};
  if (fields.password) secrets.password = fields.password;
  if (readPassword) secrets.readPassword = readPassword;
  if (fields.ssh?.privateKey) secrets.sshPrivateKey = fields.ssh.privateKey;
  if (fields.ssh?.password) secrets.sshPassword = fields.ssh.password;
  if (fields.tls?.ca) secrets.sslCa = fields.tls.ca;
  if (fields.tls?.cert) secrets.sslCert = fields.tls.cert;
  if (fields.tls?.key) secrets.sslKey = fields.tls.key;
  if (Object.keys(secrets).length === 0) return null;
  return secretBox.seal(JSON.stringify(secrets), id);
}

export function publicSsh(ssh: SshSettings | null | undefined): string | null {
  if (!ssh) return null;
  const shown: PublicSsh = { host: ssh.host, port: ssh.port, user: ssh.user, hostKey: ssh.hostKey };
  return JSON.stringify(shown);
}

function openSecrets(row: ConnectionRow, secretBox: SecretBox): Secrets {
  if (!row.secret) return {};
  let plain: string;
  try {
    plain = secretBox.open(row.secret, row.id);
  } catch (err) {
    // GCM's tag refused every key of the ring: a lost or other key, never a wrong password.
    throw new SecretUnreadableError(row.name, err);
  }
  return JSON.parse(plain) as Secrets;
}

export function fieldsOf(row: ConnectionRow, secretBox: SecretBox): ConnectionFields {
  const secrets = openSecrets(row, secretBox);
  const ssh = row.ssh ? (JSON.parse(row.ssh) as PublicSsh) : null;
  return {
    engine: row.engine,
    host: row.host,
    port: row.port,
    database: row.database,
    user: row.username,
    password: secrets.password ?? null,
    ssl: row.ssl === 1,
    ssh: ssh ? { ...ssh, privateKey: secrets.sshPrivateKey ?? null, password: secrets.sshPassword ?? null } : null,
    tls:
      secrets.sslCa || secrets.sslCert || secrets.sslKey
        ? { ca: secrets.sslCa ?? null, cert: secrets.sslCert ?? null, key: secrets.sslKey ?? null }
        : null,
  };
}

/** The stored reader credentials, or null. */
export function readerOf(row: ConnectionRow, secretBox: SecretBox): ReaderCredentials | null {
  if (!row.read_username) return null;
  return { user: row.read_username, password: openSecrets(row, secretBox).readPassword ?? null };
}

/** The settings reads log in with: the connection's, as the reader; null without reader credentials. */
export function readFieldsOf(row: ConnectionRow, secretBox: SecretBox): ConnectionFields | null {
  const reader = readerOf(row, secretBox);
  return reader ? { ...fieldsOf(row, secretBox), user: reader.user, password: reader.password } : null;
}

/** `sqliteWorkspaceDir`: DBQ_SQLITE_DIR/<slug>/ of the connection's workspace; null where no
 * SQLite file may be opened (a sqlite config is then refused). */
export function toEngineConfig(
  fields: ConnectionFields,
  opts: { sqliteWorkspaceDir: string | null; maxConnections: number; acquireTimeoutMs: number; connectTimeoutMs: number },
): EngineConfig {
  let database = fields.database;
  if (fields.engine === 'sqlite') {
    if (opts.sqliteWorkspaceDir === null) throw new InvalidRequestError('sqlite connections are not accepted here', { field: 'database' });
    database = resolveSqlitePath(opts.sqliteWorkspaceDir, fields.database);
  }
  return {
    engine: fields.engine,
    host: fields.host,
    port: fields.port,
    database,
    user: fields.user,
    password: fields.password,
    ssl: fields.ssl,
    tls: fields.ssl ? (fields.tls ?? null) : null,
    ssh: fields.ssh ?? null,
    maxConnections: opts.maxConnections,
    acquireTimeoutMs: opts.acquireTimeoutMs,
    connectTimeoutMs: opts.connectTimeoutMs,
  };
}
