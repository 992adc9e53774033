// dbq workspace set-max-key-days: the longest lifetime of a new API key (audited as the local
// operator). `none` removes the limit.
import type { Command } from 'commander';
import { cliActor } from '../../audit/audit.ts';
import { InvalidRequestError } from '../../errors.ts';
import { MAX_KEY_DAYS_LIMIT, setMaxKeyDays } from '../../workspaces/workspace-settings.ts';
import { type CliContext, type JsonOpt, print, withCore } from '../core.ts';

export function workspaceSettingsCommands(workspace: Command, ctx: CliContext): void {
  workspace
    .command('set-max-key-days <slug> <days>')
    .description(
      `longest lifetime of a new API key, 1-${MAX_KEY_DAYS_LIMIT} days or "none"; keys made without an expiry get it (e.g. 90 for a 90-day rotation)`,
    )
    .option('--json', 'print JSON')
    .action((slug: string, value: string, opts: JsonOpt) =>
      withCore(ctx, async (svc) => {
        const days = value === 'none' ? null : /^\d+$/.test(value) ? Number(value) : NaN;
        if (Number.isNaN(days)) throw new InvalidRequestError('days must be a whole number or "none"', { field: 'maxKeyDays' });
        const ws = await setMaxKeyDays(svc.db, slug, days, cliActor());
        print(
          opts,
          { workspace: ws },
          ws.maxKeyDays === null ? `Keys of ${ws.slug} may live forever` : `New keys of ${ws.slug} expire within ${ws.maxKeyDays} days`,
        );
      }),
    );
}
