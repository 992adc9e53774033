// dbq key create|list|revoke
import type { Command } from 'commander';
import { createApiKey, listApiKeys, revokeApiKey } from '../../workspaces/api-keys.ts';
import { type CliContext, type JsonOpt, print, withCore } from '../core.ts';

export function keyCommands(program: Command, ctx: CliContext): void {
  const key = program.command('key').description('manage API keys');
  key
    .command('create')
    .description('create an API key for a user; the key is printed once and never again')
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--user <email>', 'user email')
    .requiredOption('--name <name>', 'key name')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string; user: string; name: string } & JsonOpt) =>
      withCore(ctx, async (svc) => {
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
    .description('list API keys (never their values): id, prefix, name, user, status, created, last used (keys do not expire; revoke them)')
    .requiredOption('--workspace <slug>', 'workspace')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string } & JsonOpt) =>
      withCore(ctx, async (svc) => {
        const apiKeys = await listApiKeys(svc.db, opts.workspace);
        const lines = apiKeys.map(
          (k) =>
            `${k.id}\t${k.prefix}…\t${k.name}\t${k.user.email}\t${k.revokedAt ? 'revoked' : 'active'}\tcreated ${k.createdAt}\t${k.lastUsedAt ? `last used ${k.lastUsedAt}` : 'never used'}`,
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
        const apiKey = await revokeApiKey(svc.db, opts.workspace, keyId);
        print(opts, { apiKey }, `Revoked ${apiKey.id} (${apiKey.name})`);
      }),
    );
}
