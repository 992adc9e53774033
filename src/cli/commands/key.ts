// dbq key create|list|revoke. Keys may be narrower than their user (read-only, some
// connections, curated tools only, an expiry); creation and revocation are audited as the
// local operator.
import { Option, type Command } from 'commander';
import { cliActor } from '../../audit/audit.ts';
import { InvalidRequestError } from '../../errors.ts';
import { createApiKey, listApiKeys, revokeApiKey, type ApiKey } from '../../workspaces/api-keys.ts';
import { connectionNames, named, type ConnectionNames } from '../connection-names.ts';
import { type CliContext, type JsonOpt, print, withCore } from '../core.ts';

interface CreateOpts extends JsonOpt {
  workspace: string;
  user: string;
  name: string;
  readOnly?: boolean;
  connection: string[];
  toolsOnly?: boolean;
  tool: string[];
  expiresInDays?: string;
  expiresAt?: string;
}

const collect = (value: string, previous: string[]) => [...previous, value];

function days(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new InvalidRequestError('--expires-in-days must be a whole number of days', { field: 'expiresInDays' });
  return Number(value);
}

/** One line of what a key narrows: "read-only, connections shop (conn_…), tools a,b" or "full user". */
function scopeSummary(k: Pick<ApiKey, 'scope'>, names: ConnectionNames): string {
  const s = k.scope;
  if (!s) return 'all of its user';
  const parts: string[] = [];
  if (s.readOnly) parts.push('read-only');
  if (s.connections) parts.push(`connections ${s.connections.map((id) => named(id, names)).join(', ')}`);
  if (s.toolsOnly) parts.push('tools only');
  if (s.tools) parts.push(`tools ${s.tools.join(',')}`);
  return parts.join('; ');
}

function expirySummary(k: ApiKey): string {
  if (!k.expiresAt) return 'no expiry';
  if (k.expired) return `expired ${k.expiresAt}`;
  return `expires ${k.expiresAt}${k.expiresSoon ? ' (expires soon)' : ''}`;
}

export function keyCommands(program: Command, ctx: CliContext): void {
  const key = program.command('key').description('manage API keys');
  key
    .command('create')
    .description('create an API key for a user, optionally narrower than the user (never wider); the key is printed once and never again')
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--user <email>', 'user email')
    .requiredOption('--name <name>', 'key name')
    .option('--read-only', 'the key only reads, even when its user is an admin')
    .option('--connection <nameOrId>', 'limit the key to this connection (repeat for more)', collect, [])
    .option('--tools-only', 'the key runs curated tools only: no raw SQL')
    .option('--tool <name>', 'limit the key to this curated tool (repeat for more)', collect, [])
    .addOption(new Option('--expires-in-days <n>', 'the key stops working after n days').conflicts('expiresAt'))
    .option('--expires-at <iso>', 'the key stops working at this time (ISO 8601)')
    .option('--json', 'print JSON')
    .action((opts: CreateOpts) =>
      withCore(ctx, async (svc) => {
        const { apiKey, secret } = await createApiKey(
          svc.db,
          {
            workspace: opts.workspace,
            email: opts.user,
            name: opts.name,
            scope: {
              readOnly: opts.readOnly,
              connections: opts.connection.length ? opts.connection : undefined,
              toolsOnly: opts.toolsOnly,
              tools: opts.tool.length ? opts.tool : undefined,
            },
            expiresInDays: days(opts.expiresInDays),
            expiresAt: opts.expiresAt,
          },
          cliActor(),
        );
        print(
          opts,
          { apiKey: { id: apiKey.id, name: apiKey.name, prefix: apiKey.prefix, scope: apiKey.scope, expiresAt: apiKey.expiresAt }, secret },
          `Created key ${apiKey.name} (${apiKey.id}) for ${apiKey.user.email}: ${scopeSummary(apiKey, await connectionNames(svc, opts.workspace))}, ${expirySummary(apiKey)}. Store it now; it will not be shown again:\n\n  ${secret}\n`,
        );
      }),
    );
  key
    .command('list')
    .description(
      'list API keys (never their values): id, prefix, name, user, status, created, last used, scope, expiry ("expires soon": within 14 days)',
    )
    .requiredOption('--workspace <slug>', 'workspace')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string } & JsonOpt) =>
      withCore(ctx, async (svc) => {
        const apiKeys = await listApiKeys(svc.db, opts.workspace);
        const names = await connectionNames(svc, opts.workspace);
        const lines = apiKeys.map(
          (k) =>
            `${k.id}\t${k.prefix}…\t${k.name}\t${k.user.email}\t${k.revokedAt ? 'revoked' : k.expired ? 'expired' : 'active'}\tcreated ${k.createdAt}\t${k.lastUsedAt ? `last used ${k.lastUsedAt}` : 'never used'}\t${scopeSummary(k, names)}\t${expirySummary(k)}`,
        );
        print(opts, { apiKeys }, lines.length ? lines.join('\n') : `no keys in workspace ${opts.workspace}`);
      }),
    );
  key
    .command('revoke <keyId>')
    .description('revoke an API key: refused from its next request on, by every process')
    .requiredOption('--workspace <slug>', 'workspace')
    .option('--json', 'print JSON')
    .action((keyId: string, opts: { workspace: string } & JsonOpt) =>
      withCore(ctx, async (svc) => {
        const apiKey = await revokeApiKey(svc.db, opts.workspace, keyId, cliActor());
        print(opts, { apiKey }, `Revoked ${apiKey.id} (${apiKey.name})`);
      }),
    );
}
