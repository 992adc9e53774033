// The dbq command: serves and administers. Each admin command is a thin call into core (the
// same functions the API uses) and prints either a human line or, with --json, one JSON
// object shaped as the API's `data` would be.
import { Command, Option } from 'commander';
import { loadConfig, type Config } from '../config.ts';
import { listConnections, type ConnectionRecord } from '../connections/connections.ts';
import { addConnection, changeConnection } from '../connections/save-connection.ts';
import { ensureWorkspaceSqliteDir, workspaceSqliteDir } from '../connections/sqlite-path.ts';
import { DbqError, InvalidRequestError } from '../errors.ts';
import { createLogger } from '../logger.ts';
import { closeServices, createServices, type Services } from '../services.ts';
import { createApiKey, listApiKeys, revokeApiKey } from '../workspaces/api-keys.ts';
import { createUser, listUsers, setUserDisabled, setUserRole } from '../workspaces/users.ts';
import { createWorkspace, getWorkspace, listWorkspaces, setWorkspacePlan, PLANS } from '../workspaces/workspaces.ts';

interface JsonOpt {
  json?: boolean;
}

function print(opts: JsonOpt, data: unknown, human: string): void {
  process.stdout.write(opts.json ? `${JSON.stringify(data)}\n` : `${human}\n`);
}

/** Who reads log in as, and what the audit found (the record never carries a password). */
function describeReads(c: ConnectionRecord): string {
  const who = c.readUser ? `reads log in as ${c.readUser}` : 'reads use the connection user';
  if (!c.readAccess) return `${who}; read access not audited yet (database unreachable?)`;
  const findings = c.readAccess.findings.map((f) => `\n  - ${f}`).join('');
  return `${who}; read access: ${c.readAccess.level}${findings}`;
}

/** Opens the core for one admin command, runs it, closes everything. */
async function withCore<T>(fn: (svc: Services) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const svc = await createServices(config, { logger: createLogger('warn', process.stderr as any) });
  try {
    return await fn(svc);
  } finally {
    await closeServices(svc);
  }
}

export function buildCli(): Command {
  const program = new Command('dbq')
    .description('dbq: a workspace-hosted HTTP API and MCP server for PostgreSQL, MySQL/MariaDB and SQLite.\nSettings come from DBQ_* environment variables (see README); DBQ_DATA_DIR (default ./data) and DBQ_STORE_URL pick the store.')
    .showHelpAfterError()
    .configureHelp({ sortSubcommands: true });

  program
    .command('serve')
    .description('serve the HTTP API, MCP endpoints and web pages')
    .option('--port <port>', 'port (default DBQ_PORT or 8080)')
    .option('--host <host>', 'address to bind (default DBQ_HOST or 127.0.0.1)')
    .option('--sample', 'create the built-in sample SQLite database and connect it to the default workspace as "sample"')
    .action(async (opts: { port?: string; host?: string; sample?: boolean }) => {
      const config: Config = loadConfig(process.env, {
        ...(opts.port !== undefined ? { port: Number(opts.port) } : {}),
        ...(opts.host !== undefined ? { host: opts.host } : {}),
      });
      // Loaded on demand: admin commands should not pay for the HTTP stack's import time.
      const { serve } = await import('./serve.ts');
      await serve(config, { sample: Boolean(opts.sample) });
    });

  const workspace = program.command('workspace').description('manage workspaces');
  workspace
    .command('create <slug>')
    .description('create a workspace')
    .addOption(new Option('--plan <plan>', 'plan').choices(PLANS as string[]).default('free'))
    .option('--name <name>', 'display name')
    .option('--json', 'print JSON')
    .action((slug: string, opts: { plan: string; name?: string } & JsonOpt) =>
      withCore(async (svc) => {
        const ws = await createWorkspace(svc.db, { slug, plan: opts.plan, name: opts.name });
        const sqliteDir = ensureWorkspaceSqliteDir(svc.config.sqliteDir, ws.slug);
        print(opts, { workspace: { ...ws, sqliteDir } }, `Created workspace ${ws.slug} (${ws.plan}) ${ws.id}; its SQLite files go in ${sqliteDir}`);
      }),
    );
  workspace
    .command('set-plan <slug> <plan>')
    .description(`change a workspace's plan (${PLANS.join(', ')}); takes effect at once`)
    .option('--json', 'print JSON')
    .action((slug: string, plan: string, opts: JsonOpt) =>
      withCore(async (svc) => {
        const ws = await setWorkspacePlan(svc.db, slug, plan);
        print(opts, { workspace: ws }, `Workspace ${ws.slug} is now on plan ${ws.plan}`);
      }),
    );
  workspace
    .command('list')
    .description('list workspaces')
    .option('--json', 'print JSON')
    .action((opts: JsonOpt) =>
      withCore(async (svc) => {
        // sqliteDir: where the workspace's `sqlite:<file>` connections resolve (and nowhere else).
        const workspaces = (await listWorkspaces(svc.db)).map((w) => ({ ...w, sqliteDir: workspaceSqliteDir(svc.config.sqliteDir, w.slug) }));
        print(opts, { workspaces }, workspaces.map((w) => `${w.slug}\t${w.plan}\t${w.name}\t${w.sqliteDir}`).join('\n'));
      }),
    );

  const user = program.command('user').description('manage users of a workspace');
  user
    .command('create')
    .description('create a user')
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--email <email>', 'email')
    .addOption(new Option('--role <role>', 'role').choices(['admin', 'read_only']).makeOptionMandatory())
    .option('--password <password>', 'password for the web sign-in (optional)')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string; email: string; role: string; password?: string } & JsonOpt) =>
      withCore(async (svc) => {
        const u = await createUser(svc.db, opts);
        print(opts, { user: u }, `Created ${u.role} user ${u.email} (${u.id})`);
      }),
    );
  user
    .command('set-role')
    .description("change a user's role; their keys follow at the next request")
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--email <email>', 'email')
    .addOption(new Option('--role <role>', 'role').choices(['admin', 'read_only']).makeOptionMandatory())
    .option('--json', 'print JSON')
    .action((opts: { workspace: string; email: string; role: string } & JsonOpt) =>
      withCore(async (svc) => {
        const u = await setUserRole(svc.db, opts.workspace, opts.email, opts.role);
        print(opts, { user: u }, `${u.email} is now ${u.role}`);
      }),
    );
  for (const [name, disabled] of [['disable', true], ['enable', false]] as const) {
    user
      .command(name)
      .description(disabled ? 'disable a user: their keys are refused from the next request on' : 're-enable a disabled user')
      .requiredOption('--workspace <slug>', 'workspace')
      .requiredOption('--email <email>', 'email')
      .option('--json', 'print JSON')
      .action((opts: { workspace: string; email: string } & JsonOpt) =>
        withCore(async (svc) => {
          const u = await setUserDisabled(svc.db, opts.workspace, opts.email, disabled);
          print(opts, { user: u }, `${u.email} is ${u.disabled ? 'disabled' : 'enabled'}`);
        }),
      );
  }
  user
    .command('list')
    .description('list users')
    .requiredOption('--workspace <slug>', 'workspace')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string } & JsonOpt) =>
      withCore(async (svc) => {
        const users = await listUsers(svc.db, opts.workspace);
        print(opts, { users }, users.map((u) => `${u.email}\t${u.role}${u.disabled ? '\tdisabled' : ''}`).join('\n'));
      }),
    );

  const key = program.command('key').description('manage API keys');
  key
    .command('create')
    .description('create an API key for a user; the key is printed once and never again')
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--user <email>', 'user email')
    .requiredOption('--name <name>', 'key name')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string; user: string; name: string } & JsonOpt) =>
      withCore(async (svc) => {
        const { apiKey, secret } = await createApiKey(svc.db, { workspace: opts.workspace, email: opts.user, name: opts.name });
        print(
          opts,
          { apiKey: { id: apiKey.id, name: apiKey.name, prefix: apiKey.prefix }, secret },
          `Created key ${apiKey.name} (${apiKey.id}) for ${apiKey.user.email}. Store it now; it will not be shown again:\n\n  ${secret}\n`,
        );
      }),
    );
  key
    .command('list')
    .description('list API keys (never their values)')
    .requiredOption('--workspace <slug>', 'workspace')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string } & JsonOpt) =>
      withCore(async (svc) => {
        const apiKeys = await listApiKeys(svc.db, opts.workspace);
        print(
          opts,
          { apiKeys },
          apiKeys.map((k) => `${k.id}\t${k.prefix}…\t${k.name}\t${k.user.email}\t${k.revokedAt ? 'revoked' : 'active'}`).join('\n'),
        );
      }),
    );
  key
    .command('revoke <keyId>')
    .description('revoke an API key: refused from its next request on, by every process')
    .requiredOption('--workspace <slug>', 'workspace')
    .option('--json', 'print JSON')
    .action((keyId: string, opts: { workspace: string } & JsonOpt) =>
      withCore(async (svc) => {
        const apiKey = await revokeApiKey(svc.db, opts.workspace, keyId);
        print(opts, { apiKey }, `Revoked ${apiKey.id} (${apiKey.name})`);
      }),
    );

  const connection = program.command('connection').description('manage database connections');
  connection
    .command('add')
    .description("add a connection: postgres://user:pass@host:5432/db?sslmode=require, mysql://user:pass@host:3306/db or sqlite:<file in the workspace's DBQ_SQLITE_DIR/<slug>/>")
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--name <name>', 'connection name')
    .requiredOption('--url <url>', 'connection URL')
    .option('--read-only', 'every query on it is a read, whatever the key')
    .option('--read-url <url>', 'reader credentials: every read logs in as this URL\'s user (same engine, host, port and database)')
    .option('--create-reader', "create a login that can only read with --url's credentials, and use it for every read")
    .option('--json', 'print JSON')
    .action((opts: { workspace: string; name: string; url: string; readOnly?: boolean; readUrl?: string; createReader?: boolean } & JsonOpt) =>
      withCore(async (svc) => {
        const ws = await getWorkspace(svc.db, opts.workspace);
        const record = await addConnection(svc, ws.id, {
          name: opts.name,
          url: opts.url,
          readOnly: Boolean(opts.readOnly),
          ...(opts.readUrl !== undefined ? { readUrl: opts.readUrl } : {}),
          ...(opts.createReader ? { createReader: true } : {}),
        });
        print(opts, { connection: record }, `Added ${record.engine} connection ${record.name} (${record.id}); ${describeReads(record)}`);
      }),
    );
  connection
    .command('set-reader')
    .description("set the credentials every read of a connection logs in as: a new login that can only read (--create, made with the connection's own credentials), a URL's user (--read-url), or none (--remove)")
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--connection <nameOrId>', 'connection name or id')
    .option('--create', 'create a login that can only read and use it for every read')
    .option('--read-url <url>', 'use this URL\'s user and password (same engine, host, port and database)')
    .option('--remove', 'reads use the connection user again')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string; connection: string; create?: boolean; readUrl?: string; remove?: boolean } & JsonOpt) =>
      withCore(async (svc) => {
        const chosen = [opts.create, opts.readUrl !== undefined, opts.remove].filter(Boolean).length;
        if (chosen !== 1) throw new InvalidRequestError('give exactly one of --create, --read-url, --remove');
        const ws = await getWorkspace(svc.db, opts.workspace);
        const record = await changeConnection(
          svc,
          ws.id,
          opts.connection,
          opts.create ? { createReader: true } : opts.readUrl !== undefined ? { readUrl: opts.readUrl } : { readUser: null },
        );
        print(opts, { connection: record }, `${record.name}: ${describeReads(record)}`);
      }),
    );
  connection
    .command('list')
    .description('list connections (secrets are never shown)')
    .requiredOption('--workspace <slug>', 'workspace')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string } & JsonOpt) =>
      withCore(async (svc) => {
        const ws = await getWorkspace(svc.db, opts.workspace);
        const connections = await listConnections(svc.db, ws.id);
        print(
          opts,
          { connections },
          connections
            .map((c) => `${c.id}\t${c.name}\t${c.engine}\t${c.engine === 'sqlite' ? c.database : `${c.host}:${c.port}/${c.database}`}${c.readOnly ? '\tread-only' : ''}${c.readUser ? `\treads as ${c.readUser}` : ''}${c.readAccess ? `\treads ${c.readAccess.level}` : ''}`)
            .join('\n'),
        );
      }),
    );
  return program;
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildCli().parseAsync(argv);
  } catch (err) {
    if (err instanceof DbqError) {
      const wantsJson = argv.includes('--json');
      process.stderr.write(wantsJson ? `${JSON.stringify({ success: false, error: err.message, code: err.code })}\n` : `error: ${err.message}\n`);
      process.exitCode = 1;
      return;
    }
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
