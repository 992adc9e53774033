// An identity provider that never answers cannot stall dbq: /sso/start gives up after the
// discovery timeout and sends the browser back to the sign-in page with a reason; the failure
// is remembered, so the next sign-ins (and other requests meanwhile) do not wait again; a
// provider answering more than the size bound is refused too. The silent provider is a
// loopback socket that accepts and never writes.
import net from 'node:net';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SsoClients } from '../src/sso/sso-clients.ts';
import { createHarness, type Harness } from './support/harness.ts';

let h: Harness;
const logs: string[] = [];
let silent: net.Server;
let huge: http.Server;
const sockets: net.Socket[] = [];
/** Requests the silent provider was sent (HTTP request lines). */
let requests = 0;

async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  h = await createHarness({}, { logs });
  silent = net.createServer((s) => {
    sockets.push(s);
    s.on('data', (d) => {
      requests += d.toString('latin1').match(/^GET /gm)?.length ?? 0;
    });
  });
  huge = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    // No content-length: the bound must hold while reading, not only from the header.
    res.write('{"issuer":"');
    const chunk = 'x'.repeat(64 * 1024);
    let sent = 0;
    const more = () => {
      while (sent < 64) {
        sent++;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      res.end('"}');
    };
    more();
  });
  h.svc.sso = new SsoClients({ insecureHttpForTests: true, timeoutMs: 600, failureMs: 60_000, maxResponseBytes: 256 * 1024 });
}, 60_000);

afterAll(async () => {
  for (const s of sockets) s.destroy();
  silent?.close();
  huge?.closeAllConnections();
  huge?.close();
  await h?.close();
});

async function configure(issuer: string) {
  const res = await h.call('PUT', '/api/workspace/sso', h.adminKey, {
    issuer,
    clientId: 'dbq',
    clientSecret: 'secret',
    allowedDomains: ['acme.test'],
  });
  expect(res.status).toBe(200);
}

describe('discovery of the issuer is bounded', () => {
  it('a provider that never answers costs one timeout, then nothing', async () => {
    await configure(`http://127.0.0.1:${await listen(silent)}`);
    let t = Date.now();
    const first = await h.call('GET', '/sso/start', null);
    const firstMs = Date.now() - t;
    expect(first.status).toBe(302);
    expect(first.headers.location).toBe('/login?sso_error=unreachable');
    expect(firstMs).toBeGreaterThanOrEqual(500);
    expect(firstMs).toBeLessThan(3_000);
    // Remembered: the next sign-in does not wait for the dead provider again.
    t = Date.now();
    const second = await h.call('GET', '/sso/start', null);
    expect(second.headers.location).toBe('/login?sso_error=unreachable');
    expect(Date.now() - t).toBeLessThan(300);
    // Nothing else waited meanwhile, and no flow cookie was handed out.
    expect(first.headers['set-cookie']).toBeUndefined();
    expect((await h.call('GET', '/api/workspace', h.adminKey)).status).toBe(200);
  });

  it('sign-ins that start together share one discovery', async () => {
    await configure(`http://127.0.0.1:${(silent.address() as AddressInfo).port}/other`);
    const before = requests;
    const t = Date.now();
    const all = await Promise.all(Array.from({ length: 5 }, () => h.call('GET', '/sso/start', null)));
    expect(all.every((r) => r.headers.location === '/login?sso_error=unreachable')).toBe(true);
    expect(Date.now() - t).toBeLessThan(3_000);
    expect(requests - before).toBe(1);
  });

  it('a provider answering past the size bound is refused', async () => {
    await configure(`http://127.0.0.1:${await listen(huge)}`);
    const res = await h.call('GET', '/sso/start', null);
    expect(res.headers.location).toBe('/login?sso_error=unreachable');
    expect(logs.some((l) => l.includes('larger than 262144 bytes'))).toBe(true);
  });

  it('production refuses an http issuer outright', async () => {
    h.svc.sso = new SsoClients();
    const res = await h.call('PUT', '/api/workspace/sso', h.adminKey, {
      issuer: 'http://127.0.0.1:9/',
      clientId: 'dbq',
      allowedDomains: ['acme.test'],
    });
    expect(res.status).toBe(400);
    expect(res.body.details.field).toBe('issuer');
  });
});
