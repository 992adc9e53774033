// dbq tool create|list|show|update|delete: curated tools, from the machine that holds the
// store. Changes are audited with the local operator as actor, and connected MCP sessions of
// the workspace are sent tools/list_changed within about a second (src/tools/tool-changes.ts).
import type { Command } from 'commander';
import { cliActor } from '../../audit/audit.ts';
import { createTool, deleteTool, listTools, updateTool, type ToolRecord } from '../../tools/tools.ts';
import { ToolNotFoundError } from '../../errors.ts';
import type { Services } from '../../services.ts';
import { getWorkspace } from '../../workspaces/workspaces.ts';
import { connectionNames, named, type ConnectionNames } from '../connection-names.ts';
import { type CliContext, type JsonOpt, print, readJsonFile, withCore } from '../core.ts';

const FILE_HELP = `
The file holds one JSON object, as POST /api/tools takes it:

  {
    "name": "orders_by_customer",
    "description": "Orders of one customer since a date, newest first",
    "connectionId": "shop",
    "sql": "SELECT id, total, placed_at FROM orders WHERE customer_id = :customer_id AND placed_at >= :since ORDER BY placed_at DESC",
    "parameters": [
      {"name": "customer_id", "type": "integer", "required": true, "min": 1},
      {"name": "since", "type": "date", "default": "2025-01-01"}
    ],
    "maxRows": 100
  }

Types: string integer number boolean date enum (with "values") array (with "items").
Constraints: min max maxLength pattern. :caller.email, :caller.userId and :caller.keyId are
bound from the caller. See docs/tools.md.`;

async function operatorOf(svc: Services, slug: string) {
  const ws = await getWorkspace(svc.db, slug);
  return { operator: true as const, workspace: { id: ws.id } };
}

function line(t: ToolRecord, names: ConnectionNames): string {
  const params = t.parameters.map((p) => `${p.name}:${p.type}${p.required ? '!' : ''}`).join(', ');
  return `${t.name}\tv${t.version}\t${named(t.connectionId, names)}\t(${params})\t${t.description}`;
}

export function toolCommands(program: Command, ctx: CliContext): void {
  const tool = program
    .command('tool')
    .description('manage curated tools: named, described statements with typed parameters, run over REST, the web console and MCP');
  tool
    .command('create')
    .description('define a curated tool from a JSON file (version 1)')
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--file <path>', 'the tool definition as JSON ("-" reads stdin)')
    .option('--json', 'print JSON')
    .addHelpText('after', FILE_HELP)
    .action((opts: { workspace: string; file: string } & JsonOpt) =>
      withCore(ctx, async (svc) => {
        const created = await createTool(svc, await operatorOf(svc, opts.workspace), readJsonFile(opts.file) as never, cliActor());
        print(
          opts,
          { tool: created },
          `Created tool ${created.name} (version ${created.version}) on ${named(created.connectionId, await connectionNames(svc, opts.workspace))}`,
        );
      }),
    );
  tool
    .command('update')
    .description('change a curated tool from a JSON file of the fields to change; makes the next version')
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--name <name>', 'tool name')
    .requiredOption('--file <path>', 'the fields to change as JSON ("-" reads stdin), e.g. {"maxRows": 50}')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string; name: string; file: string } & JsonOpt) =>
      withCore(ctx, async (svc) => {
        const updated = await updateTool(
          svc,
          await operatorOf(svc, opts.workspace),
          opts.name,
          readJsonFile(opts.file) as never,
          cliActor(),
        );
        print(opts, { tool: updated }, `Updated tool ${updated.name}: now version ${updated.version}`);
      }),
    );
  tool
    .command('list')
    .description('list the curated tools of a workspace: name, version, connection, parameters (! = required), description')
    .requiredOption('--workspace <slug>', 'workspace')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string } & JsonOpt) =>
      withCore(ctx, async (svc) => {
        const tools = await listTools(svc, await operatorOf(svc, opts.workspace));
        const names = await connectionNames(svc, opts.workspace);
        print(opts, { tools }, tools.length ? tools.map((t) => line(t, names)).join('\n') : `no tools in workspace ${opts.workspace}`);
      }),
    );
  tool
    .command('show')
    .description('print one curated tool, SQL included')
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--name <name>', 'tool name')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string; name: string } & JsonOpt) =>
      withCore(ctx, async (svc) => {
        const found = (await listTools(svc, await operatorOf(svc, opts.workspace))).find((t) => t.name === opts.name);
        if (!found) throw new ToolNotFoundError();
        print(opts, { tool: found }, `${line(found, await connectionNames(svc, opts.workspace))}\n\n${found.sql}`);
      }),
    );
  tool
    .command('delete')
    .description('delete a curated tool; history keeps its runs, and a new tool of the same name continues the version numbers')
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--name <name>', 'tool name')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string; name: string } & JsonOpt) =>
      withCore(ctx, async (svc) => {
        const deleted = await deleteTool(svc, await operatorOf(svc, opts.workspace), opts.name, cliActor());
        print(opts, { deleted: true, tool: deleted }, `Deleted tool ${deleted.name} (version ${deleted.version})`);
      }),
    );
}
