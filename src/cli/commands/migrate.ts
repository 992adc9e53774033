// dbq migrate status: the store's migrations, applied and pending, read without running any
// (a server runs the pending ones when it starts). A store migrated by a newer dbq shows the
// migrations this version does not know, and no dbq of this version will start on it.
import type { Command } from 'commander';
import { storeMigrationStatus } from '../../store/migration-status.ts';
import { type CliContext, cliConfig, type JsonOpt, print } from '../core.ts';

export function migrateCommands(program: Command, ctx: CliContext): void {
  const migrate = program
    .command('migrate')
    .description('the store schema\'s migrations (forward-only; run by "dbq serve" at start): see docs/upgrading.md');
  migrate
    .command('status')
    .description(
      'list the migrations the store has applied and those pending (run at the next start), without changing anything; a store migrated by a newer dbq is reported, and this version refuses to start on it',
    )
    .option('--json', 'print JSON: {applied:[{name,executedAt}], pending:[name], unknown:[{name,executedAt}]}')
    .action(async (opts: JsonOpt) => {
      const config = cliConfig(ctx);
      const status = await storeMigrationStatus({ dataDir: config.dataDir, storeUrl: config.storeUrl });
      const lines = [
        `Store: ${config.storeUrl ? 'PostgreSQL (DBQ_STORE_URL)' : `SQLite in ${config.dataDir}`}`,
        `Applied (${status.applied.length}):`,
        ...status.applied.map((m) => `  ${m.name}  ${m.executedAt}`),
        `Pending (${status.pending.length})${status.pending.length ? ': applied when dbq serve next starts' : ''}:`,
        ...status.pending.map((n) => `  ${n}`),
      ];
      if (status.unknown.length > 0) {
        lines.push(
          `Unknown to this dbq (${status.unknown.length}): the store was migrated by a newer version, and this one will not start on it:`,
          ...status.unknown.map((m) => `  ${m.name}  ${m.executedAt}`),
        );
      }
      print(opts, status, lines.join('\n'));
      if (status.unknown.length > 0) process.exitCode = 1;
    });
}
