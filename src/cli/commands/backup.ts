// dbq backup / dbq restore: a consistent copy of the SQLite store while it serves, and putting
// one back into an empty data dir (docs/operations.md). These commands work on the store's file,
// not through the core, so they never open (or migrate) the store the way admin commands do.
// The PostgreSQL store has its own tools, pg_dump and pg_restore.
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import type { Config } from '../../config.ts';
import { InvalidRequestError } from '../../errors.ts';
import { createSecretBox, loadSecretKey } from '../../secrets/secret-box.ts';
import { backupSqliteStore, restoreSqliteStore, STORE_FILE } from '../../store/backup.ts';
import { type CliContext, cliConfig, type JsonOpt, print } from '../core.ts';

const KEY_FILE = 'secret.key';

function refusePostgres(config: Config, what: 'backup' | 'restore'): void {
  if (!config.storeUrl) return;
  const tool =
    what === 'backup' ? 'pg_dump --format=custom --file=dbq.dump "$DBQ_STORE_URL"' : 'pg_restore --dbname="$DBQ_STORE_URL" dbq.dump';
  throw new InvalidRequestError(
    `The store is PostgreSQL (DBQ_STORE_URL): dbq ${what} copies only the SQLite store. Use PostgreSQL's own tools, e.g. ${tool} (see docs/operations.md).`,
  );
}

/** Where the key that opens this store's secrets comes from, in words for a reminder. */
function keyWhereabouts(config: Config): string {
  return config.secretKey ? 'the value of DBQ_SECRET_KEY' : path.join(config.dataDir, KEY_FILE);
}

/** The key a server on this data dir would use, or null when it would have to make a new one
 * (which is never done here: a new key opens none of the restored secrets). */
function existingKey(config: Config): Buffer | null {
  if (config.secretKey) return loadSecretKey(config.secretKey, config.dataDir);
  return fs.existsSync(path.join(config.dataDir, KEY_FILE)) ? loadSecretKey(null, config.dataDir) : null;
}

function keyWarning(config: Config, sample: { id: string; sealed: string } | null): string | null {
  const key = existingKey(config);
  if (!key) {
    return (
      `Warning: no secret key yet. Before \`dbq serve\`, copy the secret.key kept with this backup to ${path.join(config.dataDir, KEY_FILE)} (mode 0600) ` +
      'or set DBQ_SECRET_KEY to it: started without it, dbq makes a new key and no saved connection password opens.'
    );
  }
  if (!sample) return null;
  try {
    createSecretBox(key).open(sample.sealed, sample.id);
    return null;
  } catch {
    return (
      `Warning: the secret key in ${keyWhereabouts(config)} does not open this backup's connection secrets: ` +
      'put the key kept with the backup in its place, or re-enter every connection password.'
    );
  }
}

export function backupCommands(program: Command, ctx: CliContext): void {
  program
    .command('backup')
    .description(
      'write a consistent copy of the SQLite store to a new file (0600), safe while dbq serves; the secret key is not in it: keep it with the copy (docs/operations.md). A PostgreSQL store: use pg_dump',
    )
    .requiredOption('--to <file>', 'the new backup file (must not exist)')
    .option('--json', 'print JSON')
    .action(async (opts: JsonOpt & { to: string }) => {
      const config = cliConfig(ctx);
      refusePostgres(config, 'backup');
      const result = await backupSqliteStore(config.dataDir, opts.to);
      const reminder = `Reminder: the backup holds no secret key; keep ${keyWhereabouts(config)} with it, or the connection secrets in it cannot be opened.`;
      print(opts, result, `Backed up ${path.join(config.dataDir, STORE_FILE)} to ${result.file} (${result.bytes} bytes).\n${reminder}`);
      if (opts.json) process.stderr.write(`${reminder}\n`);
    });

  program
    .command('restore')
    .description(
      'put a backup made by dbq backup in place as the store of an empty data dir (never over an existing store, so never under a running server); put the secret key kept with it there too (docs/operations.md)',
    )
    .requiredOption('--from <file>', 'the backup file')
    .option('--json', 'print JSON')
    .action(async (opts: JsonOpt & { from: string }) => {
      const config = cliConfig(ctx);
      refusePostgres(config, 'restore');
      const from = path.resolve(opts.from);
      const info = await restoreSqliteStore(config.dataDir, from);
      const warning = keyWarning(config, info.sealedSample);
      print(
        opts,
        { file: path.join(config.dataDir, STORE_FILE), from, migration: info.migration },
        `Restored ${from} to ${path.join(config.dataDir, STORE_FILE)}; start it with dbq serve.`,
      );
      if (warning) process.stderr.write(`${warning}\n`);
    });
}
