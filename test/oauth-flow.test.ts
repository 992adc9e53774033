// The OAuth 2.1 authorization code flow against a real dbq over HTTP, as an agent drives it:
// a 401 on /mcp names the resource metadata, discovery leads to the workspace's authorization
// server, the client registers (RFC 7591), the user consents through the console's API, the
// code is exchanged with PKCE for a token bound to /mcp, which then works on /mcp and nowhere
// else; refresh tokens rotate and a reused one revokes the grant; PKCE missing or plain is
// refused. On the SQLite store and on a PostgreSQL store.
import Database from 'better-sqlite3';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliActor } from '../src/audit/audit.ts';
import { createConnection } from '../src/connections/connections.ts';
import { getWorkspace } from '../src/workspaces/workspaces.ts';
import { createHarness, createPgStoreHarness, workspaceSqliteDir, type Harness } from './support/harness.ts';
import {
  authorize,
  discover,
  register,
  signIn,
  startAuthorization,
  tokenRequest,
  type Metadata,
  type Session,
} from './support/oauth-client.ts';

const ADMIN = { email: 'admin@acme.test', password: 'correct horse' };
const REDIRECT = 'http://127.0.0.1:41999/callback';

const STORES = [
  ['SQLite store', () => createHarness()],
  ['PostgreSQL store', () => createPgStoreHarness()],
] as const;

describe.each(STORES)('OAuth flow on the %s', (_name, make) => {
  let h: Harness;
  let base: string;
  let as: Metadata;
  let clientId: string;
  let session: Session;

  beforeAll(async () => {
    h = await make();
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const address = h.app.server.address();
    if (!address || typeof address === 'string') throw new Error('no address');
    base = `http://127.0.0.1:${address.port}`;
    const file = path.join(workspaceSqliteDir(h, 'default'), 'oauth.db');
    const lite = new Database(file);
    lite.exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL); INSERT INTO items (name) VALUES ('apple'), ('pear');`);
    lite.close();
    const ws = await getWorkspace(h.svc.db, 'default');
    await createConnection(
      { db: h.svc.db, secretBox: h.svc.secretBox, sqliteDir: h.config.sqliteDir },
      ws.id,
      { name: 'lite', url: 'sqlite:oauth.db' },
      cliActor(),
    );
    session = await signIn(base, ADMIN.email, ADMIN.password);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('a 401 on /mcp and on /api names the resource metadata; discovery finds the workspace as issuer', async () => {
    const found = await discover(`${base}/mcp`);
    expect(found.challenge).toContain(`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`);
    expect(found.prm).toMatchObject({ resource: `${base}/mcp`, authorization_servers: [base] });
    as = found.as;
    expect(as.issuer).toBe(base);
    expect(as.code_challenge_methods_supported).toEqual(['S256']);
    expect(as.scopes_supported).toEqual(expect.arrayContaining(['dbq:read', 'dbq:write', 'offline_access']));
    expect(as.authorization_response_iss_parameter_supported).toBe(true);
    expect(as.client_id_metadata_document_supported).toBe(true);
    // Nothing is advertised that dbq does not serve: no pushed requests, no DPoP-bound tokens.
    expect(as.pushed_authorization_request_endpoint).toBeUndefined();
    expect(as.dpop_signing_alg_values_supported).toBeUndefined();
    expect(as.grant_types_supported).toEqual(['authorization_code', 'refresh_token']);
    const api = await fetch(`${base}/api/connections`);
    expect(api.status).toBe(401);
    expect(api.headers.get('www-authenticate')).toContain(`resource_metadata="${base}/.well-known/oauth-protected-resource/api"`);
    const pathForm = await discover(`${base}/w/other/mcp`);
    expect(pathForm.challenge).toContain(`resource_metadata="${base}/.well-known/oauth-protected-resource/w/other/mcp"`);
    expect(pathForm.prm).toMatchObject({ resource: `${base}/w/other/mcp`, authorization_servers: [`${base}/w/other`] });
    expect(pathForm.as.issuer).toBe(`${base}/w/other`);
    expect(pathForm.as.token_endpoint).toBe(`${base}/w/other/oauth/token`);
  });

  it('the host form names its own origin; forged forwarding headers are ignored without DBQ_TRUST_PROXY', async () => {
    const hostForm = await createHarness({ DBQ_BASE_DOMAIN: 'dbq.test' });
    try {
      const meta = await hostForm.app.inject({
        method: 'GET',
        url: '/.well-known/oauth-authorization-server',
        headers: { host: 'other.dbq.test' },
      });
      expect(meta.json()).toMatchObject({ issuer: 'http://other.dbq.test', token_endpoint: 'http://other.dbq.test/oauth/token' });
      const unauth = await hostForm.app.inject({
        method: 'POST',
        url: '/mcp',
        headers: { host: 'other.dbq.test', 'content-type': 'application/json' },
        payload: '{}',
      });
      expect(unauth.statusCode).toBe(401);
      expect(unauth.headers['www-authenticate']).toContain(
        'resource_metadata="http://other.dbq.test/.well-known/oauth-protected-resource/mcp"',
      );
      const prm = await hostForm.app.inject({
        method: 'GET',
        url: '/.well-known/oauth-protected-resource/mcp',
        headers: { host: 'other.dbq.test' },
      });
      expect(prm.json()).toMatchObject({ resource: 'http://other.dbq.test/mcp', authorization_servers: ['http://other.dbq.test'] });
      const unknown = await hostForm.app.inject({
        method: 'GET',
        url: '/.well-known/oauth-authorization-server',
        headers: { host: 'nosuch.dbq.test' },
      });
      expect(unknown.statusCode).toBe(404);
    } finally {
      await hostForm.close();
    }
    const forged = await fetch(`${base}/.well-known/oauth-authorization-server/w/other`, {
      headers: { 'x-forwarded-host': 'evil.test', 'x-forwarded-proto': 'https' },
    });
    expect(((await forged.json()) as any).issuer).toBe(`${base}/w/other`);
  });

  it('registers a client (RFC 7591), consents, exchanges the code with PKCE; the token works on /mcp only', async () => {
    // As the MCP SDKs register: naming the scopes they will ask for.
    const client = await register(as, { client_name: 'Test agent', redirect_uris: [REDIRECT], scope: 'dbq:read dbq:write offline_access' });
    clientId = client.client_id;
    const { code, verifier, callback, details } = await authorize({
      as,
      clientId,
      redirectUri: REDIRECT,
      resource: `${base}/mcp`,
      workspaceUrl: base,
      session,
    });
    expect(details).toMatchObject({
      client: { id: clientId, name: 'Test agent', redirectHost: '127.0.0.1:41999' },
      resource: `${base}/mcp`,
      userRole: 'admin',
      defaultLifetimeDays: 30,
      maxLifetimeDays: null,
    });
    expect(details.scopes).toEqual(['dbq:read', 'dbq:write', 'offline_access']);
    expect(details.connections.map((c: { name: string }) => c.name)).toContain('lite');
    expect(callback.searchParams.get('iss')).toBe(base);
    const token = await tokenRequest(as, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      client_id: clientId,
      code_verifier: verifier,
    });
    expect(token.status).toBe(200);
    expect(token.body).toMatchObject({ token_type: 'Bearer', scope: expect.stringContaining('dbq:write') });
    expect(token.body.refresh_token).toBeTruthy();
    const mcp = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token.body.access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    });
    expect(mcp.status).toBe(200);
    const api = await fetch(`${base}/api/connections`, { headers: { authorization: `Bearer ${token.body.access_token}` } });
    expect(api.status).toBe(401);
    expect(api.headers.get('www-authenticate')).toContain('error="invalid_token"');
    const other = await fetch(`${base}/w/other/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token.body.access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: '{}',
    });
    expect(other.status).toBe(401);
  });

  it('refuses an authorization without PKCE or with the plain method, and a redirect URI not registered exactly', async () => {
    for (const challengeMethod of [null, 'plain']) {
      const started = await startAuthorization({ as, clientId, redirectUri: REDIRECT, challengeMethod });
      // An error the client is told of at its (registered) redirect URI, never the consent page.
      expect(started.status).toBe(303);
      const to = new URL(started.location!);
      expect(`${to.origin}${to.pathname}`).toBe(REDIRECT);
      expect(to.searchParams.get('error')).toBe('invalid_request');
    }
    // Plain http to a host on the network is refused at registration (OAuth 2.1 §2.3.1).
    const plain = await fetch(as.registration_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Plain', redirect_uris: ['http://agent.example.test/cb'], token_endpoint_auth_method: 'none' }),
    });
    expect(plain.status).toBe(400);
    expect(await plain.json()).toMatchObject({
      error: 'invalid_redirect_uri',
      error_description: 'redirect_uris must use https, or http on a loopback address',
    });
    for (const redirectUri of [
      'http://127.0.0.1:41999/callback/',
      'http://127.0.0.1:41999/other',
      'http://evil.test:41999/callback',
      'https://evil.test/callback',
    ]) {
      const started = await startAuthorization({ as, clientId, redirectUri });
      expect(started.status).toBe(400);
      expect(started.location).toBeNull();
      expect(started.body).toContain('redirect_uri');
    }
  });

  it('a loopback redirect may use any port (RFC 8252), for a native client and for one that registered only loopback redirects; nothing else', async () => {
    const anyPort = await authorize({ as, clientId, redirectUri: 'http://127.0.0.1:53118/callback', workspaceUrl: base, session });
    expect(anyPort.callback.port).toBe('53118');
    const native = await register(as, {
      client_name: 'CLI agent',
      application_type: 'native',
      redirect_uris: ['http://127.0.0.1/callback'],
    });
    const ok = await authorize({
      as,
      clientId: native.client_id,
      redirectUri: 'http://127.0.0.1:53117/callback',
      workspaceUrl: base,
      session,
    });
    expect(ok.callback.port).toBe('53117');
    const wrongPath = await startAuthorization({ as, clientId: native.client_id, redirectUri: 'http://127.0.0.1:53117/other' });
    expect(wrongPath.status).toBe(400);
  });

  it('rotates refresh tokens; presenting a used one revokes the whole grant (audited)', async () => {
    const { code, verifier } = await authorize({ as, clientId, redirectUri: REDIRECT, workspaceUrl: base, session });
    const first = await tokenRequest(as, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      client_id: clientId,
      code_verifier: verifier,
    });
    expect(first.status).toBe(200);
    // The code is single-use.
    const again = await tokenRequest(as, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      client_id: clientId,
      code_verifier: verifier,
    });
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_grant');

    const { code: code2, verifier: verifier2 } = await authorize({ as, clientId, redirectUri: REDIRECT, workspaceUrl: base, session });
    const issued = await tokenRequest(as, {
      grant_type: 'authorization_code',
      code: code2,
      redirect_uri: REDIRECT,
      client_id: clientId,
      code_verifier: verifier2,
    });
    const rotated = await tokenRequest(as, { grant_type: 'refresh_token', refresh_token: issued.body.refresh_token, client_id: clientId });
    expect(rotated.status).toBe(200);
    expect(rotated.body.refresh_token).not.toBe(issued.body.refresh_token);
    const mcpCall = (token: string) =>
      fetch(`${base}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
        }),
      });
    expect((await mcpCall(rotated.body.access_token)).status).toBe(200);

    const reused = await tokenRequest(as, { grant_type: 'refresh_token', refresh_token: issued.body.refresh_token, client_id: clientId });
    expect(reused.status).toBe(400);
    expect(reused.body.error).toBe('invalid_grant');
    // The whole grant is gone: the newest refresh token and the access token too.
    const after = await tokenRequest(as, { grant_type: 'refresh_token', refresh_token: rotated.body.refresh_token, client_id: clientId });
    expect(after.status).toBe(400);
    expect((await mcpCall(rotated.body.access_token)).status).toBe(401);
    const audit = await h.svc.db.selectFrom('audit_log').select(['action', 'target_id']).where('action', 'like', 'oauth.%').execute();
    expect(audit.map((a) => a.action)).toEqual(
      expect.arrayContaining(['oauth.client_registered', 'oauth.authorized', 'oauth.refresh_reuse_detected']),
    );
  });

  it('RFC 7009: the client revokes its refresh token and the grant ends', async () => {
    const { code, verifier } = await authorize({ as, clientId, redirectUri: REDIRECT, workspaceUrl: base, session });
    const issued = await tokenRequest(as, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      client_id: clientId,
      code_verifier: verifier,
    });
    const res = await fetch(as.revocation_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: issued.body.refresh_token, client_id: clientId }).toString(),
    });
    expect(res.status).toBe(200);
    const refreshed = await tokenRequest(as, {
      grant_type: 'refresh_token',
      refresh_token: issued.body.refresh_token,
      client_id: clientId,
    });
    expect(refreshed.status).toBe(400);
    const mcp = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${issued.body.access_token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(mcp.status).toBe(401);
  });

  it("a token asked for another resource than the grant's is refused at the token endpoint", async () => {
    const { code, verifier } = await authorize({
      as,
      clientId,
      redirectUri: REDIRECT,
      resource: `${base}/mcp`,
      workspaceUrl: base,
      session,
    });
    const res = await tokenRequest(as, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      client_id: clientId,
      code_verifier: verifier,
      resource: `${base}/api`,
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_target');
  });

  // Last: it spends this address's budget.
  it('registrations from one address share its failed-authentication budget: past it, 429', async () => {
    let status = 201;
    for (let i = 0; i < 25 && status === 201; i++) {
      const res = await fetch(as.registration_endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: `Flood ${i}`, redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }),
      });
      status = res.status;
      await res.body?.cancel();
    }
    expect(status).toBe(429);
  });
});
