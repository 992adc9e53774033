// dbq user create|set-role|set-password|reset-link|disable|enable|delete|list
import { type Command, Option } from 'commander';
import { issuePasswordToken, PASSWORD_LINK_PATH, type PasswordLink } from '../../workspaces/password-token.ts';
import { createUser, deleteUser, listUsers, setUserDisabled, setUserPassword, setUserRole } from '../../workspaces/users.ts';
import type { Services } from '../../services.ts';
import { cliActor } from '../../audit/audit.ts';
import { type CliContext, type JsonOpt, print, withCore } from '../core.ts';
import { readNewPassword, readPasswordFromStdin } from '../password-input.ts';
import { workspaceWebUrl } from '../workspace-url.ts';

function linkOf(svc: Services, slug: string, link: PasswordLink): { setPasswordUrl: string; setPasswordExpiresAt: string } {
  return {
    setPasswordUrl: `${workspaceWebUrl(svc.config, slug)}${PASSWORD_LINK_PATH}?token=${link.token}`,
    setPasswordExpiresAt: link.expiresAt,
  };
}

const linkLine = (l: { setPasswordUrl: string; setPasswordExpiresAt: string }) =>
  `Open this one-time link to set the web sign-in password (valid until ${l.setPasswordExpiresAt}):\n\n  ${l.setPasswordUrl}\n`;

export function userCommands(program: Command, ctx: CliContext): void {
  const user = program.command('user').description('manage users of a workspace');
  user
    .command('create')
    .description('create a user; without a password, prints a one-time link (24 h) that sets it')
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--email <email>', 'email')
    .addOption(new Option('--role <role>', 'role').choices(['admin', 'read_only']).makeOptionMandatory())
    .option('--password <password>', 'password for the web sign-in (visible in shell history: prefer --password-stdin or the link)')
    .option('--password-stdin', 'read the web sign-in password from standard input')
    .option('--json', 'print JSON (setPasswordUrl and setPasswordExpiresAt when no password was given)')
    .action((opts: { workspace: string; email: string; role: string; password?: string; passwordStdin?: boolean } & JsonOpt) =>
      withCore(ctx, async (svc) => {
        const password = opts.passwordStdin ? await readPasswordFromStdin() : opts.password;
        const u = await createUser(
          svc.db,
          { workspace: opts.workspace, email: opts.email, role: opts.role, password: password ?? null },
          cliActor(),
        );
        if (password !== undefined) return print(opts, { user: u }, `Created ${u.role} user ${u.email} (${u.id})`);
        const link = linkOf(svc, opts.workspace, await issuePasswordToken(svc.db, opts.workspace, u.email));
        print(opts, { user: u, ...link }, `Created ${u.role} user ${u.email} (${u.id}).\n${linkLine(link)}`);
      }),
    );
  user
    .command('set-password')
    .description('set the web sign-in password (prompted without echo, or --password-stdin); signs the user out of the web app everywhere')
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--email <email>', 'email')
    .option('--password-stdin', 'read the password from standard input')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string; email: string; passwordStdin?: boolean } & JsonOpt) =>
      withCore(ctx, async (svc) => {
        const u = await setUserPassword(svc.db, opts.workspace, opts.email, await readNewPassword(opts));
        print(opts, { user: u }, `Password of ${u.email} set; their web sessions are signed out`);
      }),
    );
  user
    .command('reset-link')
    .description('print a one-time link (24 h) that sets a new web sign-in password; older links die')
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--email <email>', 'email')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string; email: string } & JsonOpt) =>
      withCore(ctx, async (svc) => {
        const issued = await issuePasswordToken(svc.db, opts.workspace, opts.email);
        const link = linkOf(svc, opts.workspace, issued);
        print(opts, { user: issued.user, ...link }, `${issued.user.email}: ${linkLine(link)}`);
      }),
    );
  user
    .command('set-role')
    .description("change a user's role; their keys follow at the next request")
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--email <email>', 'email')
    .addOption(new Option('--role <role>', 'role').choices(['admin', 'read_only']).makeOptionMandatory())
    .option('--json', 'print JSON')
    .action((opts: { workspace: string; email: string; role: string } & JsonOpt) =>
      withCore(ctx, async (svc) => {
        const u = await setUserRole(svc.db, opts.workspace, opts.email, opts.role, cliActor());
        print(opts, { user: u }, `${u.email} is now ${u.role}`);
      }),
    );
  for (const [name, disabled] of [
    ['disable', true],
    ['enable', false],
  ] as const) {
    user
      .command(name)
      .description(disabled ? 'disable a user: their keys are refused from the next request on' : 're-enable a disabled user')
      .requiredOption('--workspace <slug>', 'workspace')
      .requiredOption('--email <email>', 'email')
      .option('--json', 'print JSON')
      .action((opts: { workspace: string; email: string } & JsonOpt) =>
        withCore(ctx, async (svc) => {
          const u = await setUserDisabled(svc.db, opts.workspace, opts.email, disabled, cliActor());
          print(opts, { user: u }, `${u.email} is ${u.disabled ? 'disabled' : 'enabled'}`);
        }),
      );
  }
  user
    .command('delete')
    .description('delete a user with their API keys and sessions (their query history stays)')
    .requiredOption('--workspace <slug>', 'workspace')
    .requiredOption('--email <email>', 'email')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string; email: string } & JsonOpt) =>
      withCore(ctx, async (svc) => {
        const u = await deleteUser(svc.db, opts.workspace, opts.email);
        print(opts, { deleted: true, user: u }, `Deleted ${u.email} with their keys and sessions`);
      }),
    );
  user
    .command('list')
    .description('list users')
    .requiredOption('--workspace <slug>', 'workspace')
    .option('--json', 'print JSON')
    .action((opts: { workspace: string } & JsonOpt) =>
      withCore(ctx, async (svc) => {
        const users = await listUsers(svc.db, opts.workspace);
        const lines = users.map((u) => `${u.email}\t${u.role}${u.disabled ? '\tdisabled' : ''}`);
        print(opts, { users }, lines.length ? lines.join('\n') : `no users in workspace ${opts.workspace}`);
      }),
    );
}
