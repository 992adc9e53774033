// The envelope's remaining edges ("A newcomer's first hour"): before, a wrong method on a known
// path answered 404, 401s carried no WWW-Authenticate (MCP Inspector then went looking for
// OAuth), a browser asking for an unknown page got raw JSON, and /favicon.ico was a JSON 404.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './support/harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h.close();
});

describe('wrong method on a known path', () => {
  for (const [method, url, allow] of [
    ['GET', '/api/query', 'POST'],
    ['DELETE', '/api/query/export', 'GET, HEAD, POST'],
    ['POST', '/healthz', 'GET, HEAD'],
    ['PUT', '/w/default/api/connections', 'GET, HEAD, POST'],
    ['POST', '/api/connections/conn_abc/', 'DELETE, PATCH'],
  ] as const) {
    it(`${method} ${url} → 405 with Allow`, async () => {
      const res = await h.call(method, url, h.adminKey);
      expect(res.status, JSON.stringify(res.body)).toBe(405);
      expect(res.body).toMatchObject({ success: false, code: 'method_not_allowed', error: 'Method not allowed' });
      expect(res.headers.allow).toBe(allow);
    });
  }

  it('an unknown path stays 404', async () => {
    const res = await h.call('POST', '/api/nope', h.adminKey);
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
  });
});

describe('401 says how to authenticate', () => {
  for (const [method, url] of [
    ['POST', '/api/query'],
    ['GET', '/api/connections'],
    ['POST', '/mcp'],
    ['GET', '/sse'],
    ['GET', '/ui/api/history'],
  ] as const) {
    it(`${method} ${url}`, async () => {
      const res = await h.call(method, url, method === 'POST' ? 'dbq_bogus' : null, method === 'POST' ? {} : undefined);
      expect(res.status, JSON.stringify(res.body)).toBe(401);
      // /api and MCP also name their OAuth resource metadata (RFC 9728; test/oauth-flow.test.ts).
      const resource = url.startsWith('/api') ? 'api' : url.startsWith('/ui/') ? null : 'mcp';
      const expected = resource
        ? `Bearer realm="dbq"${method === 'POST' ? ', error="invalid_token"' : ''}, resource_metadata="http://localhost/.well-known/oauth-protected-resource/${resource}"`
        : 'Bearer realm="dbq"';
      expect(res.headers['www-authenticate']).toBe(expected);
    });
  }
});

describe('browsers and unknown pages', () => {
  it('an HTML request for an unknown page gets the web app 404 page', async () => {
    for (const url of ['/no-such-page', '/w/default/settings/nope']) {
      const res = await h.app.inject({ method: 'GET', url, headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.body).toMatch(/<html/i);
    }
  });

  it('API paths and non-HTML clients still get the JSON envelope', async () => {
    const api = await h.app.inject({ method: 'GET', url: '/api/nope', headers: { accept: 'text/html' } });
    expect(api.statusCode).toBe(404);
    expect(api.json()).toMatchObject({ code: 'not_found' });
    const curl = await h.app.inject({ method: 'GET', url: '/no-such-page', headers: { accept: '*/*' } });
    expect(curl.json()).toMatchObject({ code: 'not_found' });
  });

  it('serves /favicon.ico', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/favicon.ico' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('image/x-icon');
    expect(res.rawPayload.subarray(0, 4)).toEqual(Buffer.from([0, 0, 1, 0]));
  });
});
