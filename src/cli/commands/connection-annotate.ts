// dbq connection annotate: replace a connection's annotations (descriptions, synonyms, example
// questions with their SQL) from a JSON file, as PUT /api/connections/{id}/annotations takes
// it; the local operator is the audited actor. `--show` prints the version in force.
import type { Command } from 'commander';
import { annotationsOf, putAnnotations } from '../../annotations/annotations.ts';
import { cliActor } from '../../audit/audit.ts';
import { getConnectionRow } from '../../connections/connections.ts';
import { InvalidRequestError } from '../../errors.ts';
import { getWorkspace } from '../../workspaces/workspaces.ts';
import { type CliContext, type JsonOpt, print, readJsonFile, withCore } from '../core.ts';

const FILE_HELP = `
The file holds one JSON object, as PUT /api/connections/{id}/annotations takes it:

  {
    "tables": {
      "orders": {
        "description": "One row per checkout; cancelled orders stay with status 'cancelled'",
        "synonyms": ["purchases", "sales"],
        "columns": {"total": {"description": "Amount charged, in euros, after discounts", "synonyms": ["amount", "revenue"]}}
      }
    },
    "examples": [
      {"question": "revenue last month", "sql": "SELECT sum(total) FROM orders WHERE status <> 'cancelled' AND placed_at >= date_trunc('month', now()) - interval '1 month' AND placed_at < date_trunc('month', now())"}
    ]
  }

The file replaces the whole document as its next version. Every table and column must exist on
the connection and every example's SQL must be a read its guard accepts. See docs/ai.md.`;

export function connectionAnnotateCommand(connection: Command, ctx: CliContext): void {
  connection
    .command('annotate')
    .description("replace a connection's annotations (what tables and columns mean, synonyms, example questions) from a JSON file")
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--connection <nameOrId>', 'connection name or id')
    .option('--file <path>', 'the annotations as JSON ("-" reads stdin)')
    .option('--show', 'print the annotations in force instead of changing them')
    .option('--json', 'print JSON')
    .addHelpText('after', FILE_HELP)
    .action((opts: { workspace: string; connection: string; file?: string; show?: boolean } & JsonOpt) =>
      withCore(ctx, async (svc) => {
        const ws = await getWorkspace(svc.db, opts.workspace);
        const row = await getConnectionRow(svc.db, ws.id, opts.connection);
        if (opts.show || opts.file === undefined) {
          if (!opts.show)
            throw new InvalidRequestError('pass --file <path> to change the annotations, or --show to print them', { field: 'file' });
          const { version, annotations } = await annotationsOf(svc, row.id);
          print(opts, { connectionId: row.id, version, ...annotations }, JSON.stringify({ version, ...annotations }, null, 2));
          return;
        }
        const saved = await putAnnotations(
          svc,
          { operator: true, workspace: { id: ws.id }, connection: row },
          row.id,
          readJsonFile(opts.file),
          cliActor(),
        );
        const columns = Object.values(saved.tables).reduce((n, t) => n + Object.keys(t.columns ?? {}).length, 0);
        print(
          opts,
          { annotations: saved },
          `Annotated ${row.name}: version ${saved.version}, ${Object.keys(saved.tables).length} tables, ${columns} columns, ${saved.examples.length} examples`,
        );
      }),
    );
}
