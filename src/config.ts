// Configuration is read and validated once, at start, into one frozen object that is passed
// down. Nothing else in dbq reads process.env. docs/configuration.md lists every setting; the
// README table is generated from SETTINGS below by test/config-docs.test.ts's check.
import { isIP } from 'node:net';
import path from 'node:path';
import { z } from 'zod';

const MiB = 1024 * 1024;

const int = (def: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(def);
// Fastify's trustProxy: a boolean, or the proxies' addresses/CIDRs (proxy-addr names such as
// `loopback` too). With a list, X-Forwarded-For is read from the right and stops at the first
// hop that is not one of ours, so a client's own X-Forwarded-For entries cannot pick the
// address the failed-authentication limiter counts against.
const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];
const trustProxy = z
  .string()
  .default('false')
  .transform((v, ctx): boolean | string => {
    const t = v.trim().toLowerCase();
    if (['1', 'true', 'yes', 'on'].includes(t)) return true;
    if (['', '0', 'false', 'no', 'off'].includes(t)) return false;
    const items = t
      .split(',')
      .map((i) => i.trim())
      .filter(Boolean);
    const bad = items.find((i) => {
      if (PROXY_NAMES.includes(i)) return false;
      const [addr, bits, extra] = i.split('/');
      return extra !== undefined || isIP(addr) === 0 || (bits !== undefined && !/^\d{1,3}$/.test(bits));
    });
    if (bad) ctx.addIssue({ code: 'custom', message: `not true/false nor an address/CIDR list (${bad})` });
    return items.join(',');
  });

// Only the syntax is checked here; src/connections/connection-targets.ts turns the entries into
// the list a host is checked against.
const HOST_NAME = /^(?=.{1,253}\.?$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/;

/** Why one entry of DBQ_CONNECTION_TARGETS is not an IP address, a CIDR or a host name. */
function connectionTargetProblem(entry: string): string | undefined {
  const [addr, bits, extra] = entry.split('/');
  if (extra !== undefined) return 'more than one /';
  if (bits !== undefined) {
    const family = isIP(addr);
    if (family === 0) return 'a CIDR needs an IP address before the /';
    if (!/^\d{1,3}$/.test(bits) || Number(bits) > (family === 4 ? 32 : 128)) return 'prefix length out of range';
    return undefined;
  }
  if (isIP(addr) !== 0 || HOST_NAME.test(addr)) return undefined;
  return 'not an IP address, a CIDR or a host name';
}

// Comma-separated IPs, CIDRs and host names (enforced by src/connections/connection-targets.ts);
// unset or empty: connections may dial any host.
const connectionTargets = z
  .string()
  .optional()
  .transform((v, ctx): readonly string[] | null => {
    if (v === undefined || v.trim() === '') return null;
    const items = v
      .split(',')
      .map((i) => i.trim().toLowerCase())
      .filter(Boolean);
    for (const item of items) {
      const problem = connectionTargetProblem(item);
      if (problem) ctx.addIssue({ code: 'custom', message: `${item}: ${problem}` });
    }
    return items;
  });
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? null : v.trim()));

/** Every DBQ_* setting: the schema, its default and one line of documentation. */
export const SETTINGS = {
  DBQ_HOST: { schema: z.string().default('127.0.0.1'), doc: 'Address `dbq serve` binds to (`--host` overrides).' },
  DBQ_PORT: { schema: int(8080, 0, 65535), doc: 'Port `dbq serve` listens on (`--port` overrides).' },
  DBQ_DATA_DIR: {
    schema: z.string().default('./data'),
    doc: 'Where the SQLite store, the generated secret key file and the sample database live.',
  },
  DBQ_STORE_URL: {
    schema: optionalString,
    doc: 'Metadata store. Unset: SQLite file `dbq.sqlite` in the data dir. `postgres://…`: a shared PostgreSQL store for several processes.',
  },
  DBQ_SECRET_KEY: {
    schema: optionalString,
    doc: 'Key for AES-256-GCM encryption of connection secrets: 64 hex chars or 44 base64 chars (32 bytes). Unset: generated once into `DATA_DIR/secret.key` (mode 0600).',
  },
  DBQ_DEFAULT_PLAN: {
    schema: z.enum(['free', 'professional', 'enterprise']).default('enterprise'),
    doc: 'Plan of a workspace created without `--plan`, including `default` at first start: `free` (60 requests a minute), `professional` (300), `enterprise` (unlimited). Existing workspaces keep theirs (`dbq workspace set-plan`). See docs/decisions.md.',
  },
  DBQ_SQLITE_DIR: {
    schema: optionalString,
    doc: 'Where SQLite connection files live: one directory per workspace, `DBQ_SQLITE_DIR/<slug>/`, the only place its `sqlite:<file>` connections resolve (symlinks resolved). Default `DATA_DIR/sqlite`.',
  },
  DBQ_BASE_DOMAIN: { schema: optionalString, doc: 'Enables host-form workspace URLs: `https://{slug}.{DBQ_BASE_DOMAIN}`.' },
  DBQ_PUBLIC_URL: {
    schema: optionalString.refine((v) => v === null || /^https?:\/\/[^/\s]+(\/\S*)?$/.test(v), 'must be an http:// or https:// URL'),
    doc: 'The address people reach the server at (`https://dbq.example.com`); the links the CLI prints start with it.',
  },
  DBQ_OAUTH_ALLOW_PRIVATE_CLIENT_URLS: {
    schema: z.enum(['true', 'false']).default('false'),
    doc: 'Development only: `true` lets an OAuth client ID metadata document (a `client_id` URL) resolve to a loopback, private or link-local address, which is otherwise refused (docs/oauth.md).',
  },
  DBQ_HISTORY_DAYS: { schema: int(90, 1, 36500), doc: 'Query history retention in days; older entries are deleted hourly.' },
  DBQ_HISTORY_SEARCH_INDEX: {
    schema: z.enum(['on', 'off']).default('on'),
    doc: 'SQLite store: keep a trigram index of the history\'s statements for `search=` (docs/deployment.md, "Query history at scale"); about 11–18 µs of CPU per entry, in the background. `off` stops indexing; search then walks the history. The PostgreSQL store uses pg_trgm instead.',
  },
  DBQ_AUDIT_DAYS: {
    schema: int(365, 1, 36500),
    doc: 'Audit log retention in days (docs/audit.md); older entries are deleted at start and hourly, in batches.',
  },
  DBQ_LOG_LEVEL: { schema: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'), doc: 'pino log level.' },
  DBQ_BODY_LIMIT: { schema: int(MiB, 1024, 64 * MiB), doc: 'Largest accepted request body in bytes (413 past it).' },
  DBQ_MAX_SQL_LENGTH: { schema: int(100_000, 1, 10_000_000), doc: 'Longest accepted SQL text in characters (400 past it).' },
  DBQ_MAX_RESULT_BYTES: {
    schema: int(32 * MiB, 1024, 1024 * MiB),
    doc: 'A `/query` JSON result stops adding rows past this many encoded bytes (`truncated: true`).',
  },
  DBQ_EXPORT_MAX_ROWS: { schema: int(10_000_000, 1, 1_000_000_000), doc: 'Row cap of `/query/export`.' },
  DBQ_EXPORT_MAX_BYTES: { schema: int(2 * 1024 * MiB, 1024, Number.MAX_SAFE_INTEGER), doc: 'Byte cap of `/query/export`.' },
  DBQ_RESULT_TTL: { schema: int(3600, 1, 7 * 86400), doc: 'Seconds an async query result is kept.' },
  DBQ_CONNECTION_TEST_TIMEOUT_MS: { schema: int(5000, 100, 60_000), doc: 'Bound on `POST /connections/test`.' },
  DBQ_CONNECTION_TARGETS: {
    schema: connectionTargets,
    doc: 'Comma-separated IPs, CIDRs and host names that connections and connection tests may reach (`10.0.0.0/8,db.internal`); every address a host resolves to must be listed. Unset: any host.',
  },
  DBQ_POOL_ACQUIRE_TIMEOUT_MS: {
    schema: int(10_000, 10, 300_000),
    doc: 'How long a query waits for a free connection of a database before 503 `database_busy`.',
  },
  DBQ_SHUTDOWN_GRACE_MS: {
    schema: int(10_000, 0, 300_000),
    doc: 'On SIGTERM, how long in-flight queries (and MCP tool calls) may finish before they are cancelled; every connection still open is cut 0.5 s later and the process exits by 1.5 s after the grace period whatever clients do (docs/deployment.md, "A stop (SIGTERM)").',
  },
  DBQ_MCP_SESSIONS_PER_KEY: {
    schema: int(100, 1, 100_000),
    doc: 'Most MCP sessions (SSE and Streamable HTTP together) one API key holds on one process; past it the least recently used idle one (no message for 60 s) gives way, else 429 `too_many_sessions` (docs/mcp.md, "Session limits").',
  },
  DBQ_MCP_SESSIONS_PER_WORKSPACE: {
    schema: int(1_000, 1, 1_000_000),
    doc: 'Most MCP sessions one workspace holds on one process; past it an idle one gives way, else 503 `session_capacity`.',
  },
  DBQ_METRICS_TOKEN: { schema: optionalString, doc: 'When set, `GET /metrics` needs `Authorization: Bearer <token>`.' },
  DBQ_REDIS_URL: {
    schema: optionalString,
    doc: 'Redis shared by several processes (`redis://…`, `rediss://…`): rate-limit counts and the MCP session relay. Unset, or while Redis is unreachable: each process counts alone and MCP sessions stay on the process that opened them.',
  },
  DBQ_REDIS_KEY_PREFIX: {
    schema: z
      .string()
      .regex(/^[A-Za-z0-9:._-]{1,64}$/)
      .default('dbq'),
    doc: 'Prefix of the keys dbq writes in Redis; give each deployment that shares one Redis its own.',
  },
  DBQ_TRUST_PROXY: {
    schema: trustProxy,
    doc: 'Honour `X-Forwarded-For`/`-Proto`: `true` trusts every hop (only when your proxy overwrites the header); better, the comma-separated addresses/CIDRs of your proxies (`10.0.0.0/8,loopback`), so a client cannot choose its own address.',
  },
  DBQ_AI_PROVIDER: {
    schema: z.enum(['builtin', 'openai', 'anthropic']).default('builtin'),
    doc: 'SQL generator for `/ai/generate`: `builtin` (offline), `openai` (any OpenAI-compatible server), `anthropic`.',
  },
  DBQ_AI_BASE_URL: { schema: optionalString, doc: 'Base URL of the AI provider (e.g. `http://127.0.0.1:11434/v1` for Ollama).' },
  DBQ_AI_API_KEY: { schema: optionalString, doc: 'API key of the AI provider.' },
  DBQ_AI_MODEL: { schema: optionalString, doc: 'Model name for the AI provider.' },
  DBQ_AI_TIMEOUT_MS: { schema: int(60_000, 1000, 600_000), doc: 'Timeout of one AI provider request.' },
} as const;

type Settings = typeof SETTINGS;
type RawSettings = { [K in keyof Settings]: z.output<Settings[K]['schema']> };

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  storeUrl: string | null;
  secretKey: string | null;
  sqliteDir: string;
  /** DBQ_DEFAULT_PLAN: the plan of a workspace created without one. */
  defaultPlan: RawSettings['DBQ_DEFAULT_PLAN'];
  baseDomain: string | null;
  /** DBQ_PUBLIC_URL without a trailing slash. */
  publicUrl: string | null;
  /** DBQ_OAUTH_ALLOW_PRIVATE_CLIENT_URLS: client metadata URLs may resolve to private addresses. */
  oauthAllowPrivateClientUrls: boolean;
  historyDays: number;
  historySearchIndex: boolean;
  /** DBQ_AUDIT_DAYS: audit log retention. */
  auditDays: number;
  logLevel: RawSettings['DBQ_LOG_LEVEL'];
  bodyLimit: number;
  maxSqlLength: number;
  maxResultBytes: number;
  exportMaxRows: number;
  exportMaxBytes: number;
  resultTtlSeconds: number;
  connectionTestTimeoutMs: number;
  /** DBQ_CONNECTION_TARGETS entries (lower case); null: any host. */
  connectionTargets: readonly string[] | null;
  poolAcquireTimeoutMs: number;
  shutdownGraceMs: number;
  mcpSessionsPerKey: number;
  mcpSessionsPerWorkspace: number;
  metricsToken: string | null;
  redisUrl: string | null;
  redisKeyPrefix: string;
  trustProxy: boolean | string;
  ai: {
    provider: RawSettings['DBQ_AI_PROVIDER'];
    baseUrl: string | null;
    apiKey: string | null;
    model: string | null;
    timeoutMs: number;
  };
}

export class ConfigError extends Error {}

export function loadConfig(env: Record<string, string | undefined> = process.env, overrides: Partial<Config> = {}): Config {
  const shape = Object.fromEntries(Object.entries(SETTINGS).map(([k, v]) => [k, v.schema])) as {
    [K in keyof Settings]: Settings[K]['schema'];
  };
  const parsed = z.object(shape).safeParse(env);
  if (!parsed.success) {
    const msg = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ConfigError(`Invalid configuration: ${msg}`);
  }
  const s = parsed.data;
  const dataDir = path.resolve(s.DBQ_DATA_DIR);
  const config: Config = {
    host: s.DBQ_HOST,
    port: s.DBQ_PORT,
    dataDir,
    storeUrl: s.DBQ_STORE_URL,
    secretKey: s.DBQ_SECRET_KEY,
    sqliteDir: path.resolve(s.DBQ_SQLITE_DIR ?? path.join(dataDir, 'sqlite')),
    defaultPlan: s.DBQ_DEFAULT_PLAN,
    baseDomain: s.DBQ_BASE_DOMAIN?.toLowerCase() ?? null,
    publicUrl: s.DBQ_PUBLIC_URL?.replace(/\/+$/, '') ?? null,
    oauthAllowPrivateClientUrls: s.DBQ_OAUTH_ALLOW_PRIVATE_CLIENT_URLS === 'true',
    historyDays: s.DBQ_HISTORY_DAYS,
    historySearchIndex: s.DBQ_HISTORY_SEARCH_INDEX === 'on',
    auditDays: s.DBQ_AUDIT_DAYS,
    logLevel: s.DBQ_LOG_LEVEL,
    bodyLimit: s.DBQ_BODY_LIMIT,
    maxSqlLength: s.DBQ_MAX_SQL_LENGTH,
    maxResultBytes: s.DBQ_MAX_RESULT_BYTES,
    exportMaxRows: s.DBQ_EXPORT_MAX_ROWS,
    exportMaxBytes: s.DBQ_EXPORT_MAX_BYTES,
    resultTtlSeconds: s.DBQ_RESULT_TTL,
    connectionTestTimeoutMs: s.DBQ_CONNECTION_TEST_TIMEOUT_MS,
    connectionTargets: s.DBQ_CONNECTION_TARGETS,
    poolAcquireTimeoutMs: s.DBQ_POOL_ACQUIRE_TIMEOUT_MS,
    shutdownGraceMs: s.DBQ_SHUTDOWN_GRACE_MS,
    mcpSessionsPerKey: s.DBQ_MCP_SESSIONS_PER_KEY,
    mcpSessionsPerWorkspace: s.DBQ_MCP_SESSIONS_PER_WORKSPACE,
    metricsToken: s.DBQ_METRICS_TOKEN,
    redisUrl: s.DBQ_REDIS_URL,
    redisKeyPrefix: s.DBQ_REDIS_KEY_PREFIX,
    trustProxy: s.DBQ_TRUST_PROXY,
    ai: {
      provider: s.DBQ_AI_PROVIDER,
      baseUrl: s.DBQ_AI_BASE_URL,
      apiKey: s.DBQ_AI_API_KEY,
      model: s.DBQ_AI_MODEL,
      timeoutMs: s.DBQ_AI_TIMEOUT_MS,
    },
    ...overrides,
  };
  if (config.storeUrl && !/^(postgres|postgresql):\/\//.test(config.storeUrl)) {
    throw new ConfigError('Invalid configuration: DBQ_STORE_URL must be a postgres:// URL (or unset for SQLite)');
  }
  if (config.redisUrl && !/^rediss?:\/\//.test(config.redisUrl)) {
    throw new ConfigError('Invalid configuration: DBQ_REDIS_URL must be a redis:// or rediss:// URL (or unset)');
  }
  return Object.freeze(config);
}
