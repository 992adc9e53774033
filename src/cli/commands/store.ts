// dbq store copy: the SQLite store into an empty PostgreSQL store (docs/upgrading.md, "Moving to
// the PostgreSQL store"). Works on the stores themselves, not through the core; the source is
// opened once first the way every admin command opens it, so it is at this version's migrations.
import type { Command } from 'commander';
import { InvalidRequestError } from '../../errors.ts';
import { copySqliteStoreToPostgres } from '../../store/store-copy.ts';
import { openStore } from '../../store/store.ts';
import { type CliContext, cliConfig, type JsonOpt, print } from '../core.ts';

export function storeCommands(program: Command, ctx: CliContext): void {
  const store = program.command('store').description("moving dbq's own store (docs/upgrading.md)");
  store
    .command('copy')
    .description(
      'copy everything in the SQLite store (workspaces, users, API keys, connections and their sealed secrets, grants, tools, history, audit log, web sessions) into an EMPTY PostgreSQL store, in one transaction, and print the row counts of both. Stop dbq first: writes made after the copy stay behind. Then serve with DBQ_STORE_URL set and the same secret key',
    )
    .requiredOption('--to <url>', 'postgres://user:pass@host:5432/db of a new, empty database (never printed)')
    .option('--json', 'print JSON: {tables:[{table,source,target}], skipped:[{table,reason}], migration}')
    .action(async (opts: JsonOpt & { to: string }) => {
      const config = cliConfig(ctx);
      if (config.storeUrl) {
        throw new InvalidRequestError(
          'The store is already PostgreSQL (DBQ_STORE_URL is set): dbq store copy copies the SQLite store of the data dir. Unset DBQ_STORE_URL.',
        );
      }
      if (!/^postgres(ql)?:\/\//i.test(opts.to)) throw new InvalidRequestError('--to must be a postgres:// URL', { field: 'to' });
      // Brings the SQLite store to this version's migrations, as any admin command would.
      const source = await openStore({ dataDir: config.dataDir, storeUrl: null });
      await source.close();
      const result = await copySqliteStoreToPostgres(config.dataDir, opts.to);
      const width = Math.max(...result.tables.map((t) => t.table.length));
      const keyNote = config.secretKey
        ? 'Keep DBQ_SECRET_KEY as it is: the copied secrets are sealed under it.'
        : `The copied secrets are sealed under ${config.dataDir}/secret.key: serve from this data dir, or set DBQ_SECRET_KEY to that file's content on every process.`;
      print(
        opts,
        result,
        [
          `Copied the SQLite store into the PostgreSQL store (migration ${result.migration ?? 'none'}):`,
          ...result.tables.map((t) => `  ${t.table.padEnd(width)}  ${String(t.source).padStart(8)} → ${t.target}`),
          ...result.skipped.map((s) => `  not copied: ${s.table} (${s.reason})`),
          `Next: start dbq with DBQ_STORE_URL set to that URL. ${keyNote}`,
        ].join('\n'),
      );
    });
}
