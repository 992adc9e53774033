// Pure parsing of the connection URLs the API and CLI accept. Only the settings dbq knows are
// taken from a URL; anything else in the query string is refused rather than passed to a
// driver (libpq-style `options=-c …`, `sslkey=/path`, mysql `localInfile=true`).
import type { SshSettings } from '../engines/ssh/ssh-tunnel.ts';
import { InvalidRequestError } from '../errors.ts';
import type { EngineName } from '../engines/engine.ts';

export interface ConnectionFields {
  engine: EngineName;
  host: string | null;
  port: number | null;
  database: string;
  user: string | null;
  password: string | null;
  ssl: boolean;
  /** The SSH bastion host:port is reached through; absent or null: dialled directly. */
  ssh?: SshSettings | null;
  /** PEM text a TLS connection verifies and identifies with (sealed with the password); absent
   * or null: the system's CAs, no client certificate. */
  tls?: TlsMaterial | null;
}

/** A CA to verify the server's certificate against (instead of the system's), and a client
 * certificate with its key; each PEM text, never a path. */
export interface TlsMaterial {
  ca: string | null;
  cert: string | null;
  key: string | null;
}

const DEFAULT_PORT: Record<EngineName, number | null> = { postgres: 5432, mysql: 3306, sqlite: null };
const SSL_ON = new Set(['require', 'verify-ca', 'verify-full', 'true', '1']);
const SSL_OFF = new Set(['disable', 'allow', 'prefer', 'false', '0']);

function bad(message: string): never {
  throw new InvalidRequestError(message, { field: 'url' });
}

export function parseConnectionUrl(url: string): ConnectionFields {
  // `%00` decodes to NUL in the user, password or database; connections.ts refuses a raw one.
  if (/%00/.test(url) || url.includes('\u0000')) bad('url must not contain a NUL character (%00)');
  if (/^sqlite:/i.test(url)) {
    const file = decodeURIComponent(url.replace(/^sqlite:(\/\/)?/i, ''));
    if (!file) bad('sqlite: URL needs a file name, e.g. sqlite:shop.db');
    return { engine: 'sqlite', host: null, port: null, database: file, user: null, password: null, ssl: false };
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return bad('url is not a valid URL');
  }
  const scheme = parsed.protocol.replace(/:$/, '').toLowerCase();
  const engine: EngineName | null =
    scheme === 'postgres' || scheme === 'postgresql' ? 'postgres' : scheme === 'mysql' || scheme === 'mariadb' ? 'mysql' : null;
  if (!engine) return bad('url scheme must be postgres://, mysql:// or sqlite:');
  if (!parsed.hostname) bad('url needs a host');
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ''));
  if (!database) bad('url needs a database name after the host');
  let ssl = false;
  for (const [key, value] of parsed.searchParams) {
    if (key === 'sslrootcert' || key === 'sslcert' || key === 'sslkey' || key === 'ssl-ca') {
      // Paths on dbq's own disk, never taken from a record: the PEM text goes in its own field.
      bad(
        `url parameter "${key}" is not supported: give the PEM text as sslCa, sslCert and sslKey (CLI: --ssl-ca-file, --ssl-cert-file, --ssl-key-file)`,
      );
    }
    if (key !== 'sslmode' && key !== 'ssl') bad(`url parameter "${key}" is not supported`);
    const v = value.toLowerCase();
    if (SSL_ON.has(v)) ssl = true;
    else if (!SSL_OFF.has(v)) bad(`url parameter ${key}=${value} is not supported`);
  }
  return {
    engine,
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: parsed.port ? Number(parsed.port) : DEFAULT_PORT[engine],
    database,
    user: parsed.username ? decodeURIComponent(parsed.username) : null,
    password: parsed.password ? decodeURIComponent(parsed.password) : null,
    ssl,
  };
}
