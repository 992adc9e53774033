// A real OpenID Connect identity provider for the single sign-on tests: oidc-provider on a
// free loopback port, plain http (dbq accepts http issuers only with SsoClients'
// insecureHttpForTests, which tests set in code). Its development login page takes any login
// name; the accounts below say which email and email_verified each name gets.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TestAccount {
  email: string;
  emailVerified: boolean;
}

export interface TestIdp {
  issuer: string;
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
}

export async function startTestIdp(opts: { redirectUris: string[]; accounts: Record<string, TestAccount> }): Promise<TestIdp> {
  // No type declarations ship with oidc-provider; its configuration is checked when built.
  const name = 'oidc-provider';
  const { default: Provider } = (await import(name)) as { default: new (issuer: string, config: Record<string, unknown>) => any };
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = 'dbq-test';
  const clientSecret = 'a test client secret that is long enough';
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: opts.redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    async findAccount(_ctx: unknown, sub: string) {
      const account = opts.accounts[sub];
      if (!account) return undefined;
      return { accountId: sub, claims: async () => ({ sub, email: account.email, email_verified: account.emailVerified }) };
    },
    features: { devInteractions: { enabled: true } },
    pkce: { required: () => true },
    cookies: { keys: ['dbq test idp cookie key'] },
  });
  server.on('request', provider.callback());
  return {
    issuer,
    clientId,
    clientSecret,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
