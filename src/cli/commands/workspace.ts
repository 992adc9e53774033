// dbq workspace create|set-plan|list
import { type Command, Option } from 'commander';
import { ensureWorkspaceSqliteDir, workspaceSqliteDir } from '../../sqlite-files/sqlite-path.ts';
import { createWorkspace, listWorkspaces, setWorkspacePlan, PLANS } from '../../workspaces/workspaces.ts';
import { type CliContext, type JsonOpt, print, withCore } from '../core.ts';
import { cliActor } from '../../audit/audit.ts';
import { workspaceSettingsCommands } from './workspace-settings.ts';
import { workspaceSsoCommands } from './workspace-sso.ts';

export function workspaceCommands(program: Command, ctx: CliContext): void {
  const workspace = program.command('workspace').description('manage workspaces');
  workspace
    .command('create <slug>')
    .description('create a workspace')
    .addOption(new Option('--plan <plan>', 'plan (default DBQ_DEFAULT_PLAN, itself enterprise by default)').choices(PLANS as string[]))
    .option('--name <name>', 'display name')
    .option('--json', 'print JSON')
    .action((slug: string, opts: { plan?: string; name?: string } & JsonOpt) =>
      withCore(ctx, async (svc) => {
        const ws = await createWorkspace(svc.db, { slug, plan: opts.plan ?? svc.config.defaultPlan, name: opts.name });
        const sqliteDir = ensureWorkspaceSqliteDir(svc.config.sqliteDir, ws.slug);
        print(
          opts,
          { workspace: { ...ws, sqliteDir } },
          `Created workspace ${ws.slug} (${ws.plan}) ${ws.id}; its SQLite files go in ${sqliteDir}`,
        );
      }),
    );
  workspace
    .command('set-plan <slug> <plan>')
    .description(`change a workspace's plan (${PLANS.join(', ')}); takes effect at once`)
    .option('--json', 'print JSON')
    .action((slug: string, plan: string, opts: JsonOpt) =>
      withCore(ctx, async (svc) => {
        const ws = await setWorkspacePlan(svc.db, slug, plan, cliActor());
        print(opts, { workspace: ws }, `Workspace ${ws.slug} is now on plan ${ws.plan}`);
      }),
    );
  workspace
    .command('list')
    .description('list workspaces')
    .option('--json', 'print JSON')
    .action((opts: JsonOpt) =>
      withCore(ctx, async (svc) => {
        // sqliteDir: where the workspace's `sqlite:<file>` connections resolve (and nowhere else).
        const workspaces = (await listWorkspaces(svc.db)).map((w) => ({
          ...w,
          sqliteDir: workspaceSqliteDir(svc.config.sqliteDir, w.slug),
        }));
        print(opts, { workspaces }, workspaces.map((w) => `${w.slug}\t${w.plan}\t${w.name}\t${w.sqliteDir}`).join('\n'));
      }),
    );
  workspaceSettingsCommands(workspace, ctx);
  workspaceSsoCommands(workspace, ctx);
}
