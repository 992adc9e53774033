// The nginx example of docs/tls.md, run as written (its ```nginx block, with ports and file
// paths replaced) by Debian's nginx in front of a real `dbq serve` with DBQ_TRUST_PROXY: HTTPS
// with a certificate from a CA this test makes, the plain-HTTP redirect, MCP over SSE and
// Streamable HTTP through the proxy, the client's address (not the proxy's) in the audit log,
// and the web app's cookie marked Secure.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './support/harness.ts';
import { freePort, startDbq, type DbqProcess } from './support/processes.ts';

const run = promisify(execFile);
const NGINX = '/usr/sbin/nginx';

let h: Harness;
let dbq: DbqProcess;
let nginx: ChildProcess;
let dir: string;
let httpsPort: number;
let httpPort: number;
let ca: string;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One HTTPS request to the proxy, from `localAddress` (127.0.0.2 stands for a remote client). */
function request(
  method: string,
  url: string,
  opts: { headers?: Record<string, string>; body?: string; localAddress?: string; firstChunk?: boolean } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      `https://localhost:${httpsPort}${url}`,
      {
        method,
        ca,
        headers: opts.headers,
        localAddress: opts.localAddress ?? '127.0.0.1',
        lookup: (_h, o, cb) => cb(null, o.all ? [{ address: '127.0.0.1', family: 4 }] : '127.0.0.1', 4),
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
          // An SSE stream stays open: the first event is the answer.
          if (opts.firstChunk && body.includes('\n\n')) {
            resolve({ status: res.statusCode!, headers: res.headers, body });
            req.destroy();
          }
        });
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('no answer through the proxy in 10 s')));
    req.end(opts.body);
  });
}

/** The docs' nginx block, pointed at this test's dbq, ports and certificate. */
function configFromDocs(dbqPort: number): string {
  const doc = fs.readFileSync(path.resolve(import.meta.dirname, '../docs/tls.md'), 'utf8');
  const block = /```nginx\n([\s\S]*?)```/.exec(doc)?.[1];
  if (!block) throw new Error('docs/tls.md has no ```nginx block');
  const replaced = block
    .replace('server 127.0.0.1:8080;', `server 127.0.0.1:${dbqPort};`)
    .replace('listen 80;', `listen 127.0.0.1:${httpPort};`)
    .replace('listen 443 ssl http2;', `listen 127.0.0.1:${httpsPort} ssl http2;`)
    .replace(/server_name dbq\.example\.com;/g, 'server_name localhost;')
    .replace('return 301 https://$host$request_uri;', `return 301 https://$host:${httpsPort}$request_uri;`)
    .replace('/etc/ssl/dbq/fullchain.pem', path.join(dir, 'server.crt'))
    .replace('/etc/ssl/dbq/privkey.pem', path.join(dir, 'server.key'));
  for (const kept of [`server 127.0.0.1:${dbqPort}`, `${httpsPort} ssl`, 'server.crt', 'server.key', `127.0.0.1:${httpPort}`]) {
    if (!replaced.includes(kept)) throw new Error(`docs/tls.md's nginx block changed shape: ${kept} not placed`);
  }
  const temp = (name: string) => `${name}_temp_path ${path.join(dir, name)};`;
  return `daemon off;
user root;
worker_processes 1;
pid ${path.join(dir, 'nginx.pid')};
error_log ${path.join(dir, 'error.log')} warn;
events { worker_connections 256; }
http {
  access_log ${path.join(dir, 'access.log')};
  ${['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(temp).join('\n  ')}
${replaced}
}
`;
}

beforeAll(async () => {
  if (!fs.existsSync(NGINX))
    throw new Error(`${NGINX} is missing: install Debian's nginx (apt-get install nginx); this test starts its own`);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dbq-nginx-'));
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await run(
    'openssl',
    [
      'req',
      '-x509',
      ...ec,
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '2',
      '-subj',
      '/CN=dbq test proxy ca',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    { cwd: dir },
  );
  fs.writeFileSync(path.join(dir, 'server.ext'), 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n');
  await run('openssl', ['req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost'], { cwd: dir });
  await run(
    'openssl',
    [
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '2',
      '-out',
      'server.crt',
      '-extfile',
      'server.ext',
    ],
    { cwd: dir },
  );
  ca = fs.readFileSync(path.join(dir, 'ca.crt'), 'utf8');

  h = await createHarness();
  dbq = await startDbq({ DBQ_DATA_DIR: h.dataDir, DBQ_TRUST_PROXY: 'loopback', DBQ_LOG_LEVEL: 'warn' });
  [httpsPort, httpPort] = [await freePort(), await freePort()];
  const conf = path.join(dir, 'nginx.conf');
  fs.writeFileSync(conf, configFromDocs(Number(new URL(dbq.url).port)));
  await run(NGINX, ['-t', '-q', '-p', dir, '-c', conf]);
  nginx = spawn(NGINX, ['-p', dir, '-c', conf], { stdio: 'ignore' });
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      if ((await request('GET', '/healthz')).status === 200) break;
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}, 120_000);

afterAll(async () => {
  if (nginx?.pid) {
    nginx.kill('SIGQUIT');
    await new Promise((r) => nginx.once('exit', r));
  }
  await dbq?.stop();
  await h?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('dbq behind the nginx of docs/tls.md', { timeout: 60_000 }, () => {
  it('serves HTTPS with the certificate, and sends plain HTTP to it', async () => {
    const health = await request('GET', '/healthz');
    expect(health.status).toBe(200);
    expect(health.headers['strict-transport-security']).toBe('max-age=31536000');
    const plain = await new Promise<http.IncomingMessage>((resolve, reject) =>
      http.get(`http://127.0.0.1:${httpPort}/api/connections`, { headers: { host: 'localhost' } }, resolve).on('error', reject),
    );
    plain.resume();
    expect(plain.statusCode).toBe(301);
    expect(plain.headers.location).toBe(`https://localhost:${httpsPort}/api/connections`);
  });

  it('answers the API through the proxy with an API key', async () => {
    const res = await request('GET', '/api/connections', { headers: { authorization: `Bearer ${h.adminKey}` } });
    expect(res.status, res.body).toBe(200);
    expect(JSON.parse(res.body).success).toBe(true);
  });

  it("records the client's address from X-Forwarded-For, not the proxy's", async () => {
    const tried = `nobody-${Date.now()}@acme.test`;
    const res = await request('POST', '/ui/api/login', {
      localAddress: '127.0.0.2',
      headers: { 'content-type': 'application/json', origin: `https://localhost:${httpsPort}` },
      body: JSON.stringify({ email: tried, password: 'wrong' }),
    });
    expect(res.status, res.body).toBe(401);
    const audit = JSON.parse(
      (await request('GET', '/api/audit?action=session.sign_in_failed', { headers: { authorization: `Bearer ${h.adminKey}` } })).body,
    );
    const entry = audit.data.entries.find((e: { target: { name: string } }) => e.target.name === tried);
    expect(entry.actor.ip ?? entry.ip).toBe('127.0.0.2');
  });

  it('marks the web session cookie Secure (X-Forwarded-Proto)', async () => {
    const res = await request('POST', '/ui/api/login', {
      headers: { 'content-type': 'application/json', origin: `https://localhost:${httpsPort}` },
      body: JSON.stringify({ email: 'admin@acme.test', password: 'correct horse' }),
    });
    expect(res.status, res.body).toBe(200);
    const cookies = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
    expect(cookies.length).toBeGreaterThan(0);
    for (const c of cookies) expect(c).toMatch(/;\s*Secure/i);
  });

  it('passes MCP over SSE through at once: the endpoint event arrives while the stream stays open', async () => {
    const started = Date.now();
    const res = await request('GET', `/sse?api_key=${h.adminKey}`, { firstChunk: true });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toContain('text/event-stream');
    expect(res.body).toContain('event: endpoint');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('passes MCP Streamable HTTP through: initialize answers with a session', async () => {
    const res = await request('POST', '/mcp', {
      headers: {
        authorization: `Bearer ${h.adminKey}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'proxy-test', version: '1' } },
      }),
      firstChunk: true,
    });
    expect(res.status, res.body).toBe(200);
    expect(res.headers['mcp-session-id']).toBeTruthy();
    expect(res.body).toContain('"serverInfo"');
  });
});
