// Client ID Metadata Documents: a client whose client_id is an HTTPS URL is known by fetching
// that document. Served here by a local HTTPS server (its certificate trusted by the dbq child
// through NODE_EXTRA_CA_CERTS): with DBQ_OAUTH_ALLOW_PRIVATE_CLIENT_URLS=true the flow works end
// to end; with the default (false) the same URL, resolving to loopback, is refused before any
// byte is fetched. A document that never arrives gives up within the library's 2.5 s while the
// server keeps answering others, and a document past 5 KiB is refused.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, tempDir, type Harness } from './support/harness.ts';
import { startDbq, type DbqProcess } from './support/processes.ts';
import { discover, obtainTokens, signIn, startAuthorization } from './support/oauth-client.ts';

const REDIRECT = 'http://127.0.0.1:41999/callback';

let h: Harness;
let docs: https.Server;
let docsOrigin: string;
let allowed: DbqProcess;
let refused: DbqProcess;
let fetched: string[] = [];
const held: import('node:http').ServerResponse[] = [];

function selfSignedCert(dir: string): { key: string; cert: string } {
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  return { key, cert };
}

const clientUrl = () => `${docsOrigin}/client.json`;

beforeAll(async () => {
  h = await createHarness();
  const dir = tempDir('dbq-cimd-');
  const { key, cert } = selfSignedCert(dir);
  docs = https.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, (req, res) => {
    fetched.push(req.url ?? '');
    if (req.url === '/client.json') {
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          client_id: clientUrl(),
          client_name: 'Metadata agent',
          redirect_uris: [REDIRECT],
          token_endpoint_auth_method: 'none',
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
        }),
      );
    } else if (req.url === '/slow.json') {
      held.push(res); // never answered
    } else if (req.url === '/huge.json') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ client_id: `${docsOrigin}/huge.json`, client_name: 'x'.repeat(64 * 1024), redirect_uris: [REDIRECT] }));
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise<void>((resolve) => docs.listen(0, '127.0.0.1', resolve));
  docsOrigin = `https://localhost:${(docs.address() as { port: number }).port}`;
  const env = { DBQ_DATA_DIR: h.dataDir, DBQ_LOG_LEVEL: 'warn', NODE_EXTRA_CA_CERTS: cert };
  [allowed, refused] = await Promise.all([
    startDbq({ ...env, DBQ_OAUTH_ALLOW_PRIVATE_CLIENT_URLS: 'true' }),
    startDbq({ ...env, DBQ_OAUTH_ALLOW_PRIVATE_CLIENT_URLS: 'false' }),
  ]);
}, 60_000);

afterAll(async () => {
  for (const res of held) res.destroy();
  await Promise.all([allowed?.stop(), refused?.stop()]);
  docs?.close();
  await h?.close();
});

describe('Client ID Metadata Documents', () => {
  it('with DBQ_OAUTH_ALLOW_PRIVATE_CLIENT_URLS=true a client known by its document completes the flow', async () => {
    const base = allowed.url;
    const { as } = await discover(`${base}/mcp`);
    const session = await signIn(base, 'admin@acme.test', 'correct horse');
    const tokens = await obtainTokens({ as, clientId: clientUrl(), redirectUri: REDIRECT, workspaceUrl: base, session });
    expect(tokens.access_token).toBeTruthy();
    const grants = await fetch(`${base}/ui/api/oauth/grants`, { headers: { cookie: session.cookie } });
    const body = (await grants.json()) as any;
    expect(body.data.grants[0].client).toEqual({ id: clientUrl(), name: 'Metadata agent', redirectHost: '127.0.0.1:41999' });
    // Only the redirect URI the document lists.
    const other = await startAuthorization({ as, clientId: clientUrl(), redirectUri: 'http://127.0.0.1:41999/elsewhere' });
    expect(other.status).toBe(400);
  });

  it('by default a client_id URL resolving to loopback is refused, and never fetched', async () => {
    const base = refused.url;
    const { as } = await discover(`${base}/mcp`);
    fetched = [];
    const started = await startAuthorization({ as, clientId: `${docsOrigin}/client.json?refused`, redirectUri: REDIRECT });
    expect(started.status).toBe(400);
    expect(JSON.parse(started.body).error).toBe('invalid_client');
    expect(started.location).toBeNull();
    expect(fetched).toEqual([]);
  });

  it('a document that never arrives is given up within seconds while the server keeps answering', async () => {
    const base = allowed.url;
    const { as } = await discover(`${base}/mcp`);
    const t0 = Date.now();
    const slow = startAuthorization({ as, clientId: `${docsOrigin}/slow.json`, redirectUri: REDIRECT });
    // Meanwhile another request is answered at once.
    const t1 = Date.now();
    const health = await fetch(`${base}/.well-known/oauth-protected-resource/mcp`);
    expect(health.status).toBe(200);
    expect(Date.now() - t1).toBeLessThan(1_000);
    const started = await slow;
    expect(started.status).toBe(400);
    expect(JSON.parse(started.body).error).toBe('invalid_client');
    expect(Date.now() - t0).toBeLessThan(4_000);
  });

  it('a document past the size limit is refused', async () => {
    const { as } = await discover(`${allowed.url}/mcp`);
    const started = await startAuthorization({ as, clientId: `${docsOrigin}/huge.json`, redirectUri: REDIRECT });
    expect(started.status).toBe(400);
    expect(JSON.parse(started.body).error).toBe('invalid_client');
  });
});
