// What a caller may send for a connection, resolved into settings: the URL or the separate
// fields, the SSH bastion and the reader credentials, each refused with a message naming the
// field. Split from connections.ts (storage and the public record).
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { InvalidRequestError } from '../errors.ts';
import { parseHostKey } from '../engines/ssh/ssh-host-key.ts';
import type { SshSettings } from '../engines/ssh/ssh-tunnel.ts';
import type { AdHocConnectionInput, ReaderCredentials } from './connections.ts';
import { parseConnectionUrl, type ConnectionFields, type TlsMaterial } from './connection-url.ts';

/** A NUL character in a connection string was once saved as given: drivers and C libraries
 * (libpq, the SQLite file API) cut a string at NUL, so what is stored is not what is dialled.
 * Checked here, in the core, because the CLI hands its options to addConnection without the
 * HTTP schemas. */
export function refuseNulCharacters(input: object): void {
  for (const [field, value] of Object.entries(input)) {
    if (typeof value === 'string' && value.includes('\u0000')) {
      throw new InvalidRequestError(`${field} must not contain a NUL character`, { field });
    }
  }
}

/** Turns a body (URL or fields) into validated connection fields. */
export function resolveSettings(input: AdHocConnectionInput, base?: ConnectionFields): ConnectionFields {
  refuseNulCharacters(input);
  let fields: ConnectionFields;
  if (input.url !== undefined) {
    fields = parseConnectionUrl(input.url);
    if (input.engine && input.engine !== fields.engine) {
      throw new InvalidRequestError(`engine ${input.engine} does not match the url scheme`, { field: 'engine' });
    }
  } else {
    const engine = (input.engine ?? base?.engine) as ConnectionFields['engine'] | undefined;
    if (!engine) throw new InvalidRequestError('engine is required (postgres, mysql or sqlite) unless url is given', { field: 'engine' });
    fields =
      base && base.engine === engine
        ? { ...base }
        : { engine, host: null, port: null, database: '', user: null, password: null, ssl: false };
  }
  if (input.host !== undefined) fields.host = input.host;
  if (input.port !== undefined) fields.port = input.port;
  if (input.database !== undefined) fields.database = input.database;
  if (input.user !== undefined) fields.user = input.user || null;
  if (input.password !== undefined) fields.password = input.password;
  if (input.ssl !== undefined) fields.ssl = input.ssl;
  // A new URL or engine keeps the bastion unless the body changes it.
  fields.ssh = fields.ssh ?? base?.ssh ?? null;
  if (input.ssh !== undefined) fields.ssh = input.ssh === null ? null : resolveSsh(input.ssh, base?.ssh ?? null);
  fields.tls = resolveTls(input, fields.tls ?? base?.tls ?? null);
  if (fields.tls) {
    const field = input.sslCa ? 'sslCa' : input.sslCert ? 'sslCert' : 'sslKey';
    if (fields.engine === 'sqlite') throw new InvalidRequestError(`${field} does not apply to sqlite connections`, { field });
    if (input.ssl === false) {
      throw new InvalidRequestError(
        'ssl: false with a CA or client certificate: remove them (sslCa, sslCert, sslKey: null) to connect without TLS',
        {
          field: 'ssl',
        },
      );
    }
    // A CA or client certificate only means something over TLS: giving one asks for it.
    fields.ssl = true;
  }
  if (fields.engine === 'sqlite') {
    if (input.ssh) throw new InvalidRequestError('ssh does not apply to sqlite connections', { field: 'ssh' });
    fields.ssh = null;
    fields.host = null;
    fields.port = null;
    fields.user = null;
    fields.password = null;
    fields.ssl = false;
  } else {
    if (!fields.host) throw new InvalidRequestError('host is required', { field: 'host' });
    fields.port ??= fields.engine === 'postgres' ? 5432 : 3306;
  }
  if (!fields.database) throw new InvalidRequestError('database is required', { field: 'database' });
  return fields;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----/g;

/** The certificates of a PEM text, each parsed; the field named when one is not. Messages never
 * carry the text. */
function checkCertificates(pem: string, field: string): X509Certificate[] {
  const blocks = pem.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) throw new InvalidRequestError(`${field} must be PEM text (-----BEGIN CERTIFICATE----- …)`, { field });
  return blocks.map((block) => {
    try {
      return new X509Certificate(block);
    } catch {
      throw new InvalidRequestError(`${field} holds a certificate that cannot be read`, { field });
    }
  });
}

/** The TLS material a body leaves the connection with: `kept` unless the body sets or removes
 * (null) a part of it. A client certificate and its key go together and must match. */
function resolveTls(input: AdHocConnectionInput, kept: TlsMaterial | null): TlsMaterial | null {
  if (input.sslCa === undefined && input.sslCert === undefined && input.sslKey === undefined) return kept;
  const next: TlsMaterial = { ca: kept?.ca ?? null, cert: kept?.cert ?? null, key: kept?.key ?? null };
  if (input.sslCa !== undefined) {
    if (input.sslCa !== null) checkCertificates(input.sslCa, 'sslCa');
    next.ca = input.sslCa;
  }
  if (input.sslCert !== undefined) next.cert = input.sslCert;
  if (input.sslKey !== undefined) next.key = input.sslKey;
  if (Boolean(next.cert) !== Boolean(next.key)) {
    const field = next.cert ? 'sslKey' : 'sslCert';
    throw new InvalidRequestError('sslCert and sslKey go together: give both, or remove both (null)', { field });
  }
  if (next.cert && next.key && (input.sslCert !== undefined || input.sslKey !== undefined)) {
    const [cert] = checkCertificates(next.cert, 'sslCert');
    let key;
    try {
      key = createPrivateKey(next.key);
    } catch {
      throw new InvalidRequestError('sslKey must be an unencrypted PEM private key (-----BEGIN … PRIVATE KEY-----)', { field: 'sslKey' });
    }
    if (!cert!.checkPrivateKey(key))
      throw new InvalidRequestError("sslKey is not the private key of sslCert's certificate", { field: 'sslKey' });
  }
  return next.ca || next.cert ? next : null;
}

type SshInput = NonNullable<AdHocConnectionInput['ssh']>;

/** The bastion a body gives; a key or password left out keeps the stored one for the same
 * host, port and user. Messages never carry the key or password. */
function resolveSsh(input: SshInput, base: SshSettings | null): SshSettings {
  const port = input.port ?? 22;
  const hostKey = parseHostKey(input.hostKey);
  if (!hostKey) {
    throw new InvalidRequestError('ssh.hostKey must be a known_hosts line, a public key (ssh-ed25519 AAAA…) or a SHA256: fingerprint', {
      field: 'ssh.hostKey',
    });
  }
  if (input.privateKey !== undefined && !/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(input.privateKey)) {
    throw new InvalidRequestError('ssh.privateKey must be a private key (-----BEGIN … PRIVATE KEY-----)', { field: 'ssh.privateKey' });
  }
  const same = base && base.host.toLowerCase() === input.host.toLowerCase() && base.port === port && base.user === input.user;
  const given = input.privateKey !== undefined || input.password !== undefined;
  const privateKey = given ? (input.privateKey ?? null) : same ? base.privateKey : null;
  const password = given ? (input.password ?? null) : same ? base.password : null;
  if (!privateKey && !password) throw new InvalidRequestError('ssh needs privateKey or password', { field: 'ssh.privateKey' });
  return { host: input.host, port, user: input.user, privateKey, password, hostKey };
}

const READER_FIELDS = ['readUrl', 'readUser', 'readPassword'] as const;

/** The reader credentials a body leaves the connection with: `base` (the stored ones) unless the
 * body sets or removes them. Checked against the connection's own settings. */
export function resolveReader(
  input: AdHocConnectionInput & { createReader?: boolean },
  fields: ConnectionFields,
  base: ReaderCredentials | null,
): ReaderCredentials | null {
  refuseNulCharacters(input);
  const given = READER_FIELDS.find((k) => input[k] !== undefined);
  if (fields.engine === 'sqlite') {
    const field = given ?? (input.createReader ? 'createReader' : undefined);
    if (field)
      throw new InvalidRequestError(`${field} does not apply to sqlite connections: every read already uses a read-only handle`, { field });
    return null;
  }
  if (input.createReader) {
    if (given) throw new InvalidRequestError(`createReader makes new reader credentials: leave out ${given}`, { field: 'createReader' });
    return base;
  }
  if (input.readUrl !== undefined) {
    const other = READER_FIELDS.find((k) => k !== 'readUrl' && input[k] !== undefined);
    if (other) throw new InvalidRequestError(`give readUrl or readUser/readPassword, not both`, { field: 'readUrl' });
    return readerFromUrl(input.readUrl, fields);
  }
  if (input.readUser === null) {
    if (input.readPassword) throw new InvalidRequestError('readPassword needs a readUser', { field: 'readPassword' });
    return null;
  }
  if (input.readUser !== undefined) {
    // A password left out keeps the stored one only for the same user.
    const kept = base && base.user === input.readUser ? base.password : null;
    return { user: input.readUser, password: input.readPassword === undefined ? kept : input.readPassword || null };
  }
  if (input.readPassword !== undefined) {
    if (!base) throw new InvalidRequestError('readPassword needs a readUser', { field: 'readPassword' });
    return { user: base.user, password: input.readPassword || null };
  }
  return base;
}

function readerFromUrl(url: string, fields: ConnectionFields): ReaderCredentials {
  const bad = (message: string): never => {
    throw new InvalidRequestError(message, { field: 'readUrl' });
  };
  let parsed: ConnectionFields;
  try {
    parsed = parseConnectionUrl(url);
  } catch (err) {
    // The same checks as `url`, reported under this field's name. Messages never carry the URL.
    if (err instanceof InvalidRequestError) return bad(err.message.replace(/^url\b/i, 'readUrl'));
    throw err;
  }
  if (parsed.engine !== fields.engine) return bad(`readUrl must be a ${fields.engine} URL, like the connection`);
  if (parsed.host?.toLowerCase() !== fields.host?.toLowerCase() || parsed.port !== fields.port || parsed.database !== fields.database) {
    return bad('readUrl must name the same host, port and database as the connection');
  }
  if (!parsed.user) return bad('readUrl needs a user name');
  return { user: parsed.user, password: parsed.password };
}
