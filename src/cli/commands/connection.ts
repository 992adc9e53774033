// dbq connection add|update|set-reader|test|remove|list: the API's core functions
// (save-connection.ts, connections.ts, test-connection.ts), with the CLI acting as an admin.
import type { Command } from 'commander';
import fs from 'node:fs';
import { deleteConnection, listConnections, type ConnectionRecord, type CreateConnectionInput } from '../../connections/connections.ts';
import { addConnection, changeConnection } from '../../connections/save-connection.ts';
import { testConnection } from '../../connections/test-connection.ts';
import { InvalidRequestError } from '../../errors.ts';
import type { Principal } from '../../workspaces/api-keys.ts';
import { getWorkspace, type Workspace } from '../../workspaces/workspaces.ts';
import { type CliContext, type JsonOpt, print, withCore } from '../core.ts';
import { cliActor } from '../../audit/audit.ts';
import { connectionGrantCommands } from './connection-grants.ts';
import { tlsFromOptions, tlsOptions, type TlsOpts } from './connection-tls.ts';
import { connectionAnnotateCommand } from './connection-annotate.ts';

/** Who reads log in as, and what the audit found (the record never carries a password). */
function describeReads(c: ConnectionRecord): string {
  const who = c.readUser ? `reads log in as ${c.readUser}` : 'reads use the connection user';
  if (!c.readAccess) return `${who}; read access not audited yet (database unreachable?)`;
  const findings = c.readAccess.findings.map((f) => `\n  - ${f}`).join('');
  return `${who}; read access: ${c.readAccess.level}${findings}`;
}

/** Whoever runs the CLI holds the store, so acts as an admin of the workspace. */
function cliPrincipal(ws: Workspace): Principal {
  return {
    workspace: { id: ws.id, slug: ws.slug, plan: ws.plan },
    user: { id: 'cli', email: 'cli', role: 'admin', accountRole: 'admin' },
    apiKey: null,
  };
}

interface SshOpts {
  sshHost?: string;
  sshPort?: string;
  sshUser?: string;
  sshKeyFile?: string;
  sshHostKey?: string;
}

/** The body's `ssh` from the --ssh-* options; the key file is read here and only sent on. */
function sshFromOptions(opts: SshOpts): { ssh?: NonNullable<CreateConnectionInput['ssh']> } {
  const given = [opts.sshHost, opts.sshPort, opts.sshUser, opts.sshKeyFile, opts.sshHostKey].some((v) => v !== undefined);
  if (!given) return {};
  if (!opts.sshHost || !opts.sshUser || !opts.sshKeyFile || !opts.sshHostKey) {
    throw new InvalidRequestError('an SSH bastion needs --ssh-host, --ssh-user, --ssh-key-file and --ssh-host-key', { field: 'ssh' });
  }
  const port = opts.sshPort === undefined ? undefined : Number(opts.sshPort);
  if (port !== undefined && !(Number.isInteger(port) && port >= 1 && port <= 65535)) {
    throw new InvalidRequestError('--ssh-port must be a port number', { field: 'ssh.port' });
  }
  let privateKey: string;
  try {
    privateKey = fs.readFileSync(opts.sshKeyFile, 'utf8');
  } catch (err) {
    throw new InvalidRequestError(`cannot read --ssh-key-file: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, {
      field: 'ssh.privateKey',
    });
  }
  return { ssh: { host: opts.sshHost, ...(port !== undefined ? { port } : {}), user: opts.sshUser, privateKey, hostKey: opts.sshHostKey } };
}

export function connectionCommands(program: Command, ctx: CliContext): void {
  const connection = program.command('connection').description('manage database connections');
  tlsOptions(connection.command('add'))
    .description(
      "add a connection: postgres://user:pass@host:5432/db?sslmode=require, mysql://user:pass@host:3306/db or sqlite:<file in the workspace's DBQ_SQLITE_DIR/<slug>/>",
    )
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--name <name>', 'connection name')
    .requiredOption('--url <url>', 'connection URL')
    .option('--read-only', 'every query on it is a read, whatever the key')
    .option('--read-url <url>', "reader credentials: every read logs in as this URL's user (same engine, host, port and database)")
    .option('--create-reader', "create a login that can only read with --url's credentials, and use it for every read")
    .option('--ssh-host <host>', "reach the database through this SSH bastion (--url's host and port as the bastion sees them)")
    .option('--ssh-port <port>', "the bastion's SSH port (default 22)")
    .option('--ssh-user <user>', 'the user to log in to the bastion as')
    .option('--ssh-key-file <file>', 'the private key to log in with (read here, stored sealed, never printed)')
    .option('--ssh-host-key <key>', "the bastion's host key: a known_hosts line, 'ssh-ed25519 AAAA…' or its SHA256: fingerprint")
    .option('--json', 'print JSON')
    .action(
      (
        opts: { workspace: string; name: string; url: string; readOnly?: boolean; readUrl?: string; createReader?: boolean } & SshOpts &
          TlsOpts &
          JsonOpt,
      ) =>
        withCore(ctx, async (svc) => {
          const ws = await getWorkspace(svc.db, opts.workspace);
          const record = await addConnection(
            svc,
            ws.id,
            {
              name: opts.name,
              url: opts.url,
              readOnly: Boolean(opts.readOnly),
              ...(opts.readUrl !== undefined ? { readUrl: opts.readUrl } : {}),
              ...(opts.createReader ? { createReader: true } : {}),
              ...sshFromOptions(opts),
              ...tlsFromOptions(opts),
            },
            cliActor(),
          );
          const via = record.ssh
            ? ` via SSH ${record.ssh.user}@${record.ssh.host}:${record.ssh.port} (host key ${record.ssh.hostKey})`
            : '';
          print(
            opts,
            { connection: record },
            `Added ${record.engine} connection ${record.name} (${record.id})${via}; ${describeReads(record)}`,
          );
        }),
    );
  tlsOptions(connection.command('update'))
    .description('change a connection: its name, URL (credentials included) or read-only flag; its pool is replaced')
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--connection <nameOrId>', 'connection name or id')
    .option('--name <name>', 'new name')
    .option('--url <url>', 'new connection URL')
    .option('--read-only', 'every query on it is a read, whatever the key')
    .option('--no-read-only', 'queries follow the key again')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string; connection: string; name?: string; url?: string; readOnly?: boolean } & TlsOpts & JsonOpt) =>
      withCore(ctx, async (svc) => {
        const change = {
          ...(opts.name !== undefined ? { name: opts.name } : {}),
          ...(opts.url !== undefined ? { url: opts.url } : {}),
          ...(opts.readOnly !== undefined ? { readOnly: opts.readOnly } : {}),
          ...tlsFromOptions(opts),
        };
        if (Object.keys(change).length === 0)
          throw new InvalidRequestError('nothing to change: give --name, --url, --read-only, --no-read-only or an --ssl-*-file');
        const ws = await getWorkspace(svc.db, opts.workspace);
        const record = await changeConnection(svc, ws.id, opts.connection, change, cliActor());
        print(
          opts,
          { connection: record },
          `Updated ${record.name} (${record.id})${record.readOnly ? ', read-only' : ''}; ${describeReads(record)}`,
        );
      }),
    );
  connection
    .command('set-reader')
    .description(
      "set the credentials every read of a connection logs in as: a new login that can only read (--create, made with the connection's own credentials), a URL's user (--read-url), or none (--remove)",
    )
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--connection <nameOrId>', 'connection name or id')
    .option('--create', 'create a login that can only read and use it for every read')
    .option('--read-url <url>', "use this URL's user and password (same engine, host, port and database)")
    .option('--remove', 'reads use the connection user again')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string; connection: string; create?: boolean; readUrl?: string; remove?: boolean } & JsonOpt) =>
      withCore(ctx, async (svc) => {
        const chosen = [opts.create, opts.readUrl !== undefined, opts.remove].filter(Boolean).length;
        if (chosen !== 1) throw new InvalidRequestError('give exactly one of --create, --read-url, --remove');
        const ws = await getWorkspace(svc.db, opts.workspace);
        const record = await changeConnection(
          svc,
          ws.id,
          opts.connection,
          opts.create ? { createReader: true } : opts.readUrl !== undefined ? { readUrl: opts.readUrl } : { readUser: null },
          cliActor(),
        );
        print(opts, { connection: record }, `${record.name}: ${describeReads(record)}`);
      }),
    );
  // `test` and `remove` take one connection and nothing else.
  const oneConnection = (name: string, description: string) =>
    connection
      .command(name)
      .description(description)
      .requiredOption('--workspace <slug>', 'workspace')
      .requiredOption('--connection <nameOrId>', 'connection name or id')
      .option('--json', 'print JSON');
  type OneConnectionOpts = { workspace: string; connection: string } & JsonOpt;
  oneConnection(
    'test',
    'test a connection (bounded by DBQ_CONNECTION_TEST_TIMEOUT_MS) and audit what its reads can do; exits 1 when it fails',
  ).action((opts: OneConnectionOpts) =>
    withCore(ctx, async (svc) => {
      const ws = await getWorkspace(svc.db, opts.workspace);
      const outcome = await testConnection(svc, cliPrincipal(ws), { connectionId: opts.connection });
      const access = outcome.readAccess ? `; read access: ${outcome.readAccess.level}` : '';
      print(
        opts,
        outcome,
        outcome.ok
          ? `ok in ${outcome.latencyMs} ms: ${outcome.serverVersion}${access}`
          : `failed after ${outcome.latencyMs} ms: ${outcome.error}`,
      );
      if (!outcome.ok) process.exitCode = 1;
    }),
  );
  oneConnection('remove', 'delete a connection and close its pool').action((opts: OneConnectionOpts) =>
    withCore(ctx, async (svc) => {
      const ws = await getWorkspace(svc.db, opts.workspace);
      const record = await deleteConnection(svc.db, ws.id, opts.connection, cliActor());
      await svc.pools.drop(record.id);
      print(opts, { deleted: true, connection: record }, `Removed ${record.name} (${record.id})`);
    }),
  );
  connection
    .command('list')
    .description('list connections (secrets are never shown)')
    .requiredOption('--workspace <slug>', 'workspace')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string } & JsonOpt) =>
      withCore(ctx, async (svc) => {
        const ws = await getWorkspace(svc.db, opts.workspace);
        const connections = await listConnections(svc.db, ws.id);
        const lines = connections.map(
          (c) =>
            `${c.id}\t${c.name}\t${c.engine}\t${c.engine === 'sqlite' ? c.database : `${c.host}:${c.port}/${c.database}`}${c.readOnly ? '\tread-only' : ''}${c.readUser ? `\treads as ${c.readUser}` : ''}${c.readAccess ? `\treads ${c.readAccess.level}` : ''}`,
        );
        print(opts, { connections }, lines.length ? lines.join('\n') : `no connections in workspace ${opts.workspace}`);
      }),
    );
  connectionGrantCommands(connection, ctx);
  connectionAnnotateCommand(connection, ctx);
}
