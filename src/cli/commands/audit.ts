// dbq audit list: the workspace's audit log, newest first, through the same listAudit the API
// uses. Whoever runs the CLI holds the store, so reads it as an admin.
import { type Command, Option } from 'commander';
import { AUDIT_ACTIONS } from '../../audit/audit.ts';
import { auditQuerySchema, listAudit, type AuditEntry } from '../../audit/audit-list.ts';
import { parseInput } from '../../http-kit/schema.ts';
import { getWorkspace } from '../../workspaces/workspaces.ts';
import { connectionNames, nameIdsIn, type ConnectionNames } from '../connection-names.ts';
import { type CliContext, type JsonOpt, print, withCore } from '../core.ts';

interface ListOpts extends JsonOpt {
  workspace: string;
  limit?: string;
  cursor?: string;
  action?: string;
  actor?: string;
  target?: string;
  since?: string;
  until?: string;
}

function line(e: AuditEntry, names: ConnectionNames): string {
  const actor = [e.actor.email ?? e.actor.userId ?? '-', e.actor.keyId ? `key ${e.actor.keyId}` : null].filter(Boolean).join(' ');
  const target = `${e.target.type} ${e.target.name ?? e.target.id ?? '-'}${e.target.id && e.target.name ? ` (${e.target.id})` : ''}`;
  const changes = e.changes ? `\t${nameIdsIn(JSON.stringify(e.changes), names)}` : '';
  return `${e.createdAt}\t${e.action}\t${actor}\t${target}\t${e.source}${e.ip ? ` ${e.ip}` : ''}${changes}`;
}

export function auditCommands(program: Command, ctx: CliContext): void {
  const audit = program.command('audit').description('read the audit log: who changed who may do what (docs/audit.md)');
  audit
    .command('list')
    .description('list audit entries, newest first: time, action, actor, target, source and address, changes')
    .requiredOption('--workspace <slug>', 'workspace')
    .option('--limit <n>', 'entries per page, 1-200 (default 50)')
    .addOption(new Option('--action <action>', 'only this action').choices(AUDIT_ACTIONS as unknown as string[]))
    .option('--actor <idOrEmail>', 'only entries by this user id, key id or email (local:<name> for the CLI)')
    .option('--target <idOrName>', 'only entries about this target id or name')
    .option('--since <iso>', 'only entries at or after this time')
    .option('--until <iso>', 'only entries before this time')
    .option('--cursor <cursor>', 'the next page: nextCursor of the previous one')
    .option('--json', 'print JSON ({"entries":[…],"nextCursor":…})')
    .action((opts: ListOpts) =>
      withCore(ctx, async (svc) => {
        const query = parseInput(auditQuerySchema, {
          ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
          ...(opts.cursor !== undefined ? { cursor: opts.cursor } : {}),
          ...(opts.action !== undefined ? { action: opts.action } : {}),
          ...(opts.actor !== undefined ? { actorId: opts.actor } : {}),
          ...(opts.target !== undefined ? { targetId: opts.target } : {}),
          ...(opts.since !== undefined ? { since: opts.since } : {}),
          ...(opts.until !== undefined ? { until: opts.until } : {}),
        });
        const ws = await getWorkspace(svc.db, opts.workspace);
        const principal = {
          workspace: { id: ws.id, slug: ws.slug, plan: ws.plan },
          user: { id: 'cli', email: 'cli', role: 'admin' as const, accountRole: 'admin' as const },
          apiKey: null,
        };
        const page = await listAudit(svc.db, principal, query);
        const names = await connectionNames(svc, opts.workspace);
        const lines = page.entries.map((e) => line(e, names));
        if (page.nextCursor) lines.push(`more: --cursor ${page.nextCursor}`);
        print(opts, page, lines.length ? lines.join('\n') : `no audit entries in workspace ${opts.workspace}`);
      }),
    );
}
