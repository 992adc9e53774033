// dbq workspace set-sso|show-sso|remove-sso: a workspace's single sign-on, audited as the
// local operator. The client secret comes on standard input only (never argv: shell history,
// `ps`). Also the way back in when the identity provider is down and passwords were turned off:
// `set-sso … ` without --no-password-sign-in, or `remove-sso`.
import { type Command, Option } from 'commander';
import { cliActor } from '../../audit/audit.ts';
import { InvalidRequestError } from '../../errors.ts';
import type { Services } from '../../services.ts';
import { CALLBACK_PATH } from '../../sso/redirect-uri.ts';
import { deleteSsoSettings, getSsoSettings, setSsoSettings, type SsoSettings } from '../../sso/sso-settings.ts';
import { ROLES } from '../../workspaces/users.ts';
import { type CliContext, type JsonOpt, print, withCore } from '../core.ts';
import { readPasswordFromStdin } from '../password-input.ts';
import { workspaceWebUrl } from '../workspace-url.ts';

interface SetSsoOptions extends JsonOpt {
  workspace: string;
  issuer: string;
  clientId: string;
  clientSecretStdin?: boolean;
  allowedDomain: string[];
  defaultRole: string;
  passwordSignIn: boolean;
}

const collect = (value: string, previous: string[]) => [...previous, value];

function view(svc: Services, slug: string, sso: SsoSettings) {
  return { ...sso, redirectUri: `${workspaceWebUrl(svc.config, slug)}${CALLBACK_PATH}` };
}

function describe(s: ReturnType<typeof view>, slug: string): string {
  if (!s.configured) return `Single sign-on is off for ${slug}; passwords sign in. Redirect URI to register: ${s.redirectUri}`;
  return [
    `Single sign-on of ${slug}: ${s.issuer} (client ${s.clientId}, secret set)`,
    `  allowed domains: ${s.allowedDomains.join(', ')}`,
    `  new users: ${s.defaultRole}`,
    `  password sign-in: ${s.passwordSignIn ? 'on' : 'off'}`,
    `  redirect URI to register at the provider: ${s.redirectUri}`,
  ].join('\n');
}

export function workspaceSsoCommands(workspace: Command, ctx: CliContext): void {
  workspace
    .command('set-sso')
    .description('set single sign-on (OpenID Connect) for a workspace; see docs/sso.md')
    .requiredOption('--workspace <slug>', 'the workspace')
    .requiredOption('--issuer <url>', "the identity provider's issuer URL (https)")
    .requiredOption('--client-id <id>', 'the client id registered at the provider')
    .option(
      '--client-secret-stdin',
      'read the client secret from standard input (required the first time; omitted, the stored one is kept)',
    )
    .option('--allowed-domain <domain>', 'an email domain that may sign in (repeat for more)', collect, [])
    .addOption(
      new Option('--default-role <role>', 'role of a user created by their first sign-in').choices(ROLES as string[]).default('read_only'),
    )
    .option('--no-password-sign-in', 'refuse password sign-in in this workspace (SSO only)')
    .option('--json', 'print JSON')
    .action((opts: SetSsoOptions) =>
      withCore(ctx, async (svc) => {
        let clientSecret: string | undefined;
        if (opts.clientSecretStdin) {
          clientSecret = (await readPasswordFromStdin()).trim();
          if (!clientSecret) throw new InvalidRequestError('no client secret on standard input', { field: 'clientSecret' });
        }
        const sso = await setSsoSettings(
          svc.db,
          svc.secretBox,
          opts.workspace,
          {
            issuer: opts.issuer,
            clientId: opts.clientId,
            ...(clientSecret !== undefined ? { clientSecret } : {}),
            allowedDomains: opts.allowedDomain,
            defaultRole: opts.defaultRole,
            passwordSignIn: opts.passwordSignIn,
          },
          cliActor(),
          { allowHttp: svc.sso.allowHttp },
        );
        const shown = view(svc, opts.workspace.toLowerCase(), sso);
        print(opts, shown, describe(shown, opts.workspace.toLowerCase()));
      }),
    );
  workspace
    .command('show-sso <slug>')
    .description("show a workspace's single sign-on (never the secret) and the redirect URI to register")
    .option('--json', 'print JSON')
    .action((slug: string, opts: JsonOpt) =>
      withCore(ctx, async (svc) => {
        const shown = view(svc, slug.toLowerCase(), await getSsoSettings(svc.db, slug));
        print(opts, shown, describe(shown, slug.toLowerCase()));
      }),
    );
  workspace
    .command('remove-sso <slug>')
    .description('turn single sign-on off for a workspace; password sign-in works again')
    .option('--json', 'print JSON')
    .action((slug: string, opts: JsonOpt) =>
      withCore(ctx, async (svc) => {
        const shown = view(svc, slug.toLowerCase(), await deleteSsoSettings(svc.db, slug, cliActor()));
        print(opts, shown, describe(shown, slug.toLowerCase()));
      }),
    );
}
