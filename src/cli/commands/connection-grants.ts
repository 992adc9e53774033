// dbq connection grant|revoke|grants: who may use a connection (src/access/grants.ts). The
// first grant turns a connection open to everyone into one for its granted users (admins
// always keep it); audited as the local operator.
import type { Command } from 'commander';
import { cliActor } from '../../audit/audit.ts';
import { grantUser, readGrants, revokeUser, type Grants } from '../../access/grants.ts';
import { getWorkspace } from '../../workspaces/workspaces.ts';
import { type CliContext, type JsonOpt, print, withCore } from '../core.ts';

interface GrantOpts extends JsonOpt {
  workspace: string;
  connection: string;
  user: string;
}

function describe(name: string, g: Grants): string {
  if (g.everyone) return `${name}: every user of the workspace may use it`;
  const users = g.users.map((u) => `\n  ${u.email}\t${u.id}`).join('');
  return `${name}: admins and ${g.users.length ? `these users:${users}` : 'nobody else'}`;
}

export function connectionGrantCommands(connection: Command, ctx: CliContext): void {
  const change = (name: 'grant' | 'revoke', description: string, fn: typeof grantUser) =>
    connection
      .command(name)
      .description(description)
      .requiredOption('--workspace <slug>', 'workspace')
      .requiredOption('--connection <nameOrId>', 'connection name or id')
      .requiredOption('--user <email>', 'user email (or id)')
      .option('--json', 'print JSON')
      .action((opts: GrantOpts) =>
        withCore(ctx, async (svc) => {
          const ws = await getWorkspace(svc.db, opts.workspace);
          const grants = await fn(svc.db, ws.id, opts.connection, opts.user, cliActor());
          print(opts, grants, describe(opts.connection, grants));
        }),
      );
  change(
    'grant',
    'let a user use a connection; a connection open to everyone becomes limited to its granted users (admins always may)',
    grantUser,
  );
  change('revoke', 'stop a user from using a connection: it disappears from their lists and answers 404', revokeUser);
  connection
    .command('grants')
    .description('show who may use a connection: everyone, or admins and the granted users')
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--connection <nameOrId>', 'connection name or id')
    .option('--json', 'print JSON')
    .action((opts: Omit<GrantOpts, 'user'>) =>
      withCore(ctx, async (svc) => {
        const ws = await getWorkspace(svc.db, opts.workspace);
        const { connection: row, grants } = await readGrants(svc.db, ws.id, opts.connection);
        print(opts, grants, describe(row.name, grants));
      }),
    );
}
