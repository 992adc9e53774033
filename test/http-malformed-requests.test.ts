// Requests Node's HTTP parser refuses (a bare LF or a control character inside a header value,
// an invalid header name, headers past the size limit, a broken request line) never become a
// Fastify request, and a URL find-my-way cannot decode never reaches a route: both were
// answered by Fastify's own bodies (`{"error":"Bad Request","message":"Client Error",…}`,
// `{"code":"FST_ERR_BAD_URL",…}`), not dbq's envelope. Every response is the envelope, these
// too, with an X-Request-Id; and the raw bytes of a refused request (its Authorization header
// among them) never reach the log.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './support/harness.ts';

const logs: string[] = [];
let h: Harness;
let port: number;

beforeAll(async () => {
  h = await createHarness({}, { logs });
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  port = (h.app.server.address() as net.AddressInfo).port;
});
afterAll(async () => {
  await h?.close();
});

/** Writes `raw` on a fresh socket and reads until the server closes it. */
function rawRequest(raw: string | Buffer): Promise<{ status: number; headers: Record<string, string>; body: string; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', (err) => ((err as NodeJS.ErrnoException).code === 'ECONNRESET' && chunks.length > 0 ? undefined : reject(err)));
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head, ...rest] = text.split('\r\n\r\n');
      const [statusLine, ...headerLines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of headerLines) {
        const i = line.indexOf(':');
        if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n'), text });
    });
    socket.setTimeout(5000, () => socket.destroy(new Error('no answer in time')));
    socket.end(raw);
  });
}

const SECRET = 'dbq_malformedRequestSecret0000000000000000';

describe('requests the HTTP parser refuses', () => {
  it.each([
    [
      'a bare LF inside the Authorization value',
      `GET /api/connections HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${SECRET}\nX: y\r\n\r\n`,
    ],
    ['a NUL inside a header value', `GET /api/connections HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${SECRET}\0\r\n\r\n`],
    [
      'an invalid header name',
      `GET /api/connections HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${SECRET}\r\nBad Header(): x\r\n\r\n`,
    ],
    ['a broken request line', `GET /api/connections HTTP/9.Z\r\nHost: localhost\r\nAuthorization: Bearer ${SECRET}\r\n\r\n`],
    ['not HTTP at all', `\x16\x03\x01\x02\x00 hello ${SECRET}\r\n\r\n`],
  ])('%s: 400 invalid_request envelope', async (_label, raw) => {
    const res = await rawRequest(raw);
    expect(res.status, res.text).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.body));
    expect(JSON.parse(res.body)).toEqual({ success: false, error: 'Invalid request: malformed HTTP request', code: 'invalid_request' });
  });

  it('headers past the size limit: 431 headers_too_large envelope', async () => {
    const res = await rawRequest(
      `GET /api/connections HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${SECRET}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(res.status, res.text).toBe(431);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['x-request-id']).toBeTruthy();
    expect(JSON.parse(res.body)).toEqual({ success: false, error: 'Request headers too large', code: 'headers_too_large' });
  });

  it('a malformed request after a good one on a keep-alive socket is answered after the first response', async () => {
    const res = await rawRequest(
      `GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\nGET /healthz HTTP/1.1\r\nHost: localhost\r\nX: a\0b\r\n\r\n`,
    );
    expect(res.status).toBe(200);
    const second = res.text.slice(res.text.indexOf('HTTP/1.1', 5));
    expect(second).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(second).toContain('"code":"invalid_request"');
  });

  it('logs the refusal at info without the bytes it refused', () => {
    const lines = logs.filter((l) => l.includes('malformed HTTP request'));
    expect(lines.length).toBeGreaterThan(0);
    expect(JSON.parse(lines[0])).toMatchObject({ level: 30, code: 'invalid_request' });
    expect(logs.join('\n')).not.toContain(SECRET);
  });
});

describe('URLs the router cannot decode', () => {
  it.each(['/api/%E0%A4%A', '/w/%E0%A4%A/api/connections', '/ui/assets/%C0'])(
    '%s: 400 invalid_request envelope with X-Request-Id',
    async (url) => {
      const res = await h.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${h.adminKey}` } });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.headers['x-request-id']).toBeTruthy();
      expect(res.json()).toEqual({ success: false, error: 'Invalid request: malformed URL', code: 'invalid_request' });
    },
  );

  it('the same over a real socket', async () => {
    const res = await rawRequest('GET /api/%E0%A4%A HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ success: false, code: 'invalid_request' });
  });
});
