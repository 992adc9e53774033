// The dbq command: serves and administers. Each admin command is a thin call into core (the
// same functions the API uses) and prints either a human line or, with --json, one JSON
// object shaped as the API's `data` would be. One file per resource in commands/.
import fs from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import type { Config } from '../config.ts';
import { DbqError } from '../errors.ts';
import { PACKAGE_ROOT } from '../package-root.ts';
import { auditCommands } from './commands/audit.ts';
import { backupCommands } from './commands/backup.ts';
import { connectionCommands } from './commands/connection.ts';
import { keyCommands } from './commands/key.ts';
import { toolCommands } from './commands/tool.ts';
import { mcpCommands } from './commands/mcp.ts';
import { migrateCommands } from './commands/migrate.ts';
import { secretCommands } from './commands/secret.ts';
import { storeCommands } from './commands/store.ts';
import { userCommands } from './commands/user.ts';
import { workspaceCommands } from './commands/workspace.ts';
import { type CliContext, cliConfig, type GlobalOptions, parsePort } from './core.ts';

function packageVersion(): string {
  return (JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

/** commander's help lists choices and defaults but not which options are required. */
function markRequired(cmd: Command): void {
  for (const option of cmd.options) {
    if (option.mandatory && !option.description.endsWith('(required)')) option.description = `${option.description} (required)`;
  }
  for (const sub of cmd.commands) markRequired(sub);
}

function buildCli(): Command {
  const program = new Command('dbq')
    .description(
      'dbq: a workspace-hosted HTTP API and MCP server for PostgreSQL, MySQL/MariaDB and SQLite.\nSettings come from DBQ_* environment variables (see README); DBQ_DATA_DIR (default ./data) and DBQ_STORE_URL pick the store.',
    )
    .version(packageVersion(), '-V, --version', 'print the dbq version')
    .option('--data-dir <dir>', 'the data dir holding the store (overrides DBQ_DATA_DIR; default ./data)')
    .option('--init', 'let an admin command create a new, empty store when there is none (serve always does)')
    .showHelpAfterError()
    .configureHelp({ sortSubcommands: true });
  const ctx: CliContext = { globals: () => program.opts<GlobalOptions>() };

  program
    .command('serve')
    .description('serve the HTTP API, MCP endpoints and web pages')
    .option('--port <port>', 'port (default DBQ_PORT or 8080)', parsePort)
    .option('--host <host>', 'address to bind (default DBQ_HOST or 127.0.0.1)')
    .option('--sample', 'create the built-in sample SQLite database and connect it to the default workspace as "sample"')
    .action(async (opts: { port?: number; host?: string; sample?: boolean }) => {
      const config: Config = cliConfig(ctx, {
        ...(opts.port !== undefined ? { port: opts.port } : {}),
        ...(opts.host !== undefined ? { host: opts.host } : {}),
      });
      // Loaded on demand: admin commands should not pay for the HTTP stack's import time.
      const { serve } = await import('./serve.ts');
      await serve(config, { sample: Boolean(opts.sample) });
    });

  workspaceCommands(program, ctx);
  userCommands(program, ctx);
  keyCommands(program, ctx);
  connectionCommands(program, ctx);
  toolCommands(program, ctx);
  auditCommands(program, ctx);
  backupCommands(program, ctx);
  migrateCommands(program, ctx);
  storeCommands(program, ctx);
  secretCommands(program, ctx);
  mcpCommands(program);
  markRequired(program);
  return program;
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildCli().parseAsync(argv);
  } catch (err) {
    if (err instanceof DbqError) {
      const wantsJson = argv.includes('--json');
      process.stderr.write(
        wantsJson ? `${JSON.stringify({ success: false, error: err.message, code: err.code })}\n` : `error: ${err.message}\n`,
      );
      process.exitCode = 1;
      return;
    }
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
