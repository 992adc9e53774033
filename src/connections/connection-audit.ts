// What a connection's audit entry says changed: its public settings, and for each secret only
// that it was set, changed or removed. Secrets are compared here, in memory, and never leave:
// no password, reader password, SSH key or URL (a URL may carry a password) reaches the log.
import type { ConnectionFields } from './connection-url.ts';
import type { ConnectionRecord, ReaderCredentials } from './connections.ts';

const PUBLIC_FIELDS = [
  'name',
  'engine',
  'host',
  'port',
  'database',
  'user',
  'ssl',
  'readOnly',
  'maxConnections',
  'readUser',
  'ssh',
] as const;

export interface ConnectionSecrets {
  password: string | null;
  readPassword: string | null;
  sshPrivateKey: string | null;
  sshPassword: string | null;
  sslCa: string | null;
  sslCert: string | null;
  sslKey: string | null;
}

export function secretsOf(fields: ConnectionFields, reader: ReaderCredentials | null): ConnectionSecrets {
  return {
    password: fields.password ?? null,
    readPassword: reader?.password ?? null,
    sshPrivateKey: fields.ssh?.privateKey ?? null,
    sshPassword: fields.ssh?.password ?? null,
    sslCa: fields.tls?.ca ?? null,
    sslCert: fields.tls?.cert ?? null,
    sslKey: fields.tls?.key ?? null,
  };
}

/** `connection.created`: the settings given, and which secrets were set. */
export function createdChanges(record: ConnectionRecord, secrets: ConnectionSecrets): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of PUBLIC_FIELDS) if (record[field] !== null) out[field] = record[field];
  for (const [name, value] of Object.entries(secrets)) if (value) out[name] = 'set';
  return out;
}

/** `connection.updated`: each changed setting as {from, to}; a secret as set|changed|removed.
 * Empty when nothing changed. */
export function updatedChanges(
  before: ConnectionRecord,
  after: ConnectionRecord,
  secretsBefore: ConnectionSecrets,
  secretsAfter: ConnectionSecrets,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of PUBLIC_FIELDS) {
    if (JSON.stringify(before[field]) !== JSON.stringify(after[field])) out[field] = { from: before[field], to: after[field] };
  }
  for (const name of Object.keys(secretsAfter) as (keyof ConnectionSecrets)[]) {
    const was = secretsBefore[name];
    const now = secretsAfter[name];
    if (was === now) continue;
    out[name] = now === null ? 'removed' : was === null ? 'set' : 'changed';
  }
  return out;
}
