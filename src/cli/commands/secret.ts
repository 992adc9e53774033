// dbq secret rotate: re-seals every secret in the store under a new key (src/secrets/rotate.ts;
// docs/upgrading.md, "Rotating the secret key").
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { InvalidRequestError } from '../../errors.ts';
import { parseSecretKey } from '../../secrets/secret-box.ts';
import { rotateSecretKey } from '../../secrets/rotate.ts';
import { openStore } from '../../store/store.ts';
import { readPasswordFromStdin } from '../password-input.ts';
import { type CliContext, cliConfig, type JsonOpt, print } from '../core.ts';

export function secretCommands(program: Command, ctx: CliContext): void {
  const secret = program.command('secret').description('the key that seals connection passwords and other secrets in the store');
  secret
    .command('rotate')
    .description(
      "re-seal every secret in the store (connection passwords, reader passwords, SSH and TLS client keys, SSO client secrets) under a new key, in one transaction. With the data dir's secret.key: a new key is made, written beside it as secret.key.new, and replaces it once every secret is re-sealed; running servers follow without a restart. With DBQ_SECRET_KEY set: pipe the new key with --new-key-stdin, then set DBQ_SECRET_KEY to it on every process and restart them. Interrupted: run it again, it finishes the same rotation. Backups made before keep needing the old key",
    )
    .option(
      '--new-key-stdin',
      'read the new key (64 hex characters, e.g. `openssl rand -hex 32`) from standard input; required with DBQ_SECRET_KEY',
    )
    .option('--json', 'print JSON: {columns:[{table,column,resealed,alreadyNew}], resumed, keyFile}')
    .action(async (opts: JsonOpt & { newKeyStdin?: boolean }) => {
      const config = cliConfig(ctx);
      if (!config.storeUrl && !fs.existsSync(path.join(config.dataDir, 'dbq.sqlite'))) {
        throw new InvalidRequestError(
          `No dbq store at ${path.join(config.dataDir, 'dbq.sqlite')}: point at it with --data-dir or DBQ_DATA_DIR.`,
        );
      }
      let newKey: Buffer | null = null;
      if (opts.newKeyStdin) {
        newKey = parseSecretKey(await readPasswordFromStdin());
        if (!newKey)
          throw new InvalidRequestError('the new key must be 32 bytes: 64 hex characters (openssl rand -hex 32) or 44 base64 characters');
      }
      const store = await openStore({ dataDir: config.dataDir, storeUrl: config.storeUrl });
      try {
        const result = await rotateSecretKey(store, { dataDir: config.dataDir, configuredKey: config.secretKey, newKey });
        const total = result.columns.reduce((n, c) => n + c.resealed + c.alreadyNew, 0);
        const lines = [
          `${result.resumed ? 'Finished an interrupted rotation' : 'Rotated the secret key'}: ${total} sealed value(s) now under the new key.`,
          ...result.columns.map(
            (c) => `  ${c.table}.${c.column}: ${c.resealed} re-sealed${c.alreadyNew ? `, ${c.alreadyNew} already under the new key` : ''}`,
          ),
          result.keyFile
            ? `${result.keyFile} now holds the new key; servers on this data dir use it without a restart. Backups made before this rotation need the old key.`
            : 'Now set DBQ_SECRET_KEY to the new key on every dbq process and restart them: until then they cannot open the re-sealed secrets. Backups made before this rotation need the old key.',
        ];
        print(opts, result, lines.join('\n'));
      } finally {
        await store.close();
      }
    });
}
