// Several processes serve one deployment: a token issued through one works on another, and a
// grant revoked through one is refused by the other within a second (the store's change
// notification: SQLite's data_version, PostgreSQL's LISTEN/NOTIFY), with DBQ_PUBLIC_URL every
// process names the same issuer. On the SQLite store and on a PostgreSQL store.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, createPgStoreHarness, type Harness } from './support/harness.ts';
import { freePort, startDbq, type DbqProcess } from './support/processes.ts';
import { discover, listenOn, obtainTokens, register, signIn } from './support/oauth-client.ts';

const REDIRECT = 'http://127.0.0.1:41999/callback';

// Both processes name A's address as the public one (DBQ_PUBLIC_URL), as a deployment behind
// one balancer does: one issuer, whichever process answers.
const STORES = [
  ['SQLite store', (env: Record<string, string>) => createHarness(env)],
  ['PostgreSQL store', (env: Record<string, string>) => createPgStoreHarness(env)],
] as const;

describe.each(STORES)('OAuth across processes on the %s', (_name, make) => {
  let h: Harness;
  let a: string;
  let b: DbqProcess;

  beforeAll(async () => {
    const port = await freePort();
    a = `http://127.0.0.1:${port}`;
    h = await make({ DBQ_PUBLIC_URL: a });
    await h.app.listen({ port, host: '127.0.0.1' });
    b = await startDbq({
      DBQ_PUBLIC_URL: a,
      DBQ_DATA_DIR: h.dataDir,
      ...(h.config.storeUrl ? { DBQ_STORE_URL: h.config.storeUrl } : {}),
      DBQ_LOG_LEVEL: 'warn',
    });
  }, 60_000);
  afterAll(async () => {
    await b?.stop();
    await h?.close();
  });

  it('a token from one process works on the other; a revocation through one is refused by the other within 1 s', async () => {
    const { as } = await discover(`${a}/mcp`);
    const clientId = (await register(as, { client_name: 'Two-process agent', redirect_uris: [REDIRECT] })).client_id;
    const session = await signIn(a, 'admin@acme.test', 'correct horse');
    const tokens = await obtainTokens({ as, clientId, redirectUri: REDIRECT, resource: `${a}/api`, workspaceUrl: a, session });
    const onB = () => fetch(`${b.url}/api/connections`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    // Warm B's cache of the token, so the revocation has to reach it.
    for (let i = 0; i < 3; i++) expect((await onB()).status).toBe(200);
    const grants = await h.call('GET', '/api/oauth/grants', h.adminKey);
    const id = grants.body.data.grants[0].id;
    const revoked = await h.call('POST', `/api/oauth/grants/${id}/revoke`, h.adminKey);
    expect(revoked.status).toBe(200);
    const t0 = Date.now();
    let status = 200;
    while (Date.now() - t0 < 3_000) {
      status = (await onB()).status;
      if (status === 401) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(status).toBe(401);
    expect(Date.now() - t0).toBeLessThanOrEqual(1_000);
  });

  it('a refresh token is redeemed on the other process, once', async () => {
    const { as } = await discover(`${a}/mcp`);
    const clientId = (await register(as, { client_name: 'Refresh agent', redirect_uris: [REDIRECT] })).client_id;
    const session = await signIn(a, 'admin@acme.test', 'correct horse');
    const tokens = await obtainTokens({ as, clientId, redirectUri: REDIRECT, workspaceUrl: a, session });
    // B's own token endpoint (its metadata names the public one, A's).
    const refresh = () =>
      fetch(`${b.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: clientId }).toString(),
      });
    expect((await refresh()).status).toBe(200);
    expect((await refresh()).status).toBe(400);
  });
});

describe('DBQ_PUBLIC_URL', () => {
  let h: Harness;
  let b: DbqProcess;
  beforeAll(async () => {
    h = await createHarness({ DBQ_PUBLIC_URL: 'https://dbq.example.test' });
    await listenOn(h.app);
    b = await startDbq({ DBQ_DATA_DIR: h.dataDir, DBQ_LOG_LEVEL: 'warn', DBQ_PUBLIC_URL: 'https://dbq.example.test' });
  }, 60_000);
  afterAll(async () => {
    await b?.stop();
    await h?.close();
  });

  it('every process names the same issuer and resources, whatever Host the request had', async () => {
    for (const origin of [`http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`, b.url]) {
      const res = await fetch(`${origin}/.well-known/oauth-authorization-server/w/other`, { headers: { 'x-forwarded-host': 'evil.test' } });
      const meta = (await res.json()) as any;
      expect(meta.issuer).toBe('https://dbq.example.test/w/other');
      expect(meta.token_endpoint).toBe('https://dbq.example.test/w/other/oauth/token');
      const unauth = await fetch(`${origin}/w/other/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(unauth.headers.get('www-authenticate')).toContain(
        'resource_metadata="https://dbq.example.test/.well-known/oauth-protected-resource/w/other/mcp"',
      );
      const prm = (await (await fetch(`${origin}/.well-known/oauth-protected-resource/w/other/mcp`)).json()) as any;
      expect(prm).toMatchObject({
        resource: 'https://dbq.example.test/w/other/mcp',
        authorization_servers: ['https://dbq.example.test/w/other'],
      });
    }
  });
});
