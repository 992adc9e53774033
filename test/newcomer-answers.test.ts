// Answers a newcomer reads, through the real server (in-process) and the real ./bin/dbq: an
// expired key's 401 says so, /mcp without Accept is dbq's envelope, /api/docs renders the
// Markdown of its summaries, /settings/tools finds the Tools page, and the CLI prints links to
// DBQ_PUBLIC_URL and connection names beside their ids.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ensureSample } from '../src/cli/serve.ts';
import { createApiKey } from '../src/workspaces/api-keys.ts';
import { runDbq } from './support/cli.ts';
import { createHarness, type Harness } from './support/harness.ts';

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
  await ensureSample(h.svc);
});
afterAll(async () => {
  await h?.close();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('HTTP answers', () => {
  it('an expired key answers 401 with details.reason "expired"; an unknown key without it', async () => {
    const { apiKey, secret } = await createApiKey(h.svc.db, {
      workspace: 'default',
      email: 'reader@acme.test',
      name: 'brief',
      expiresAt: new Date(Date.now() + 300).toISOString(),
    });
    // Expiry is read from Date.now(): a fake clock (running on) is moved past it instead of the
    // test waiting it out.
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    vi.setSystemTime(Date.parse(apiKey.expiresAt!) + 100);
    const expired = await h.call('GET', '/api/connections', secret);
    expect(expired.status).toBe(401);
    expect(expired.body).toEqual({
      success: false,
      error: 'Invalid or missing API key',
      code: 'invalid_api_key',
      details: { reason: 'expired' },
    });
    const typo = await h.call('GET', '/api/connections', `${secret.slice(0, -1)}x`);
    expect(typo.status).toBe(401);
    expect(typo.body.details).toBeUndefined();
  });

  it('POST /mcp without Accept is a 406 envelope naming the header, not a JSON-RPC body', async () => {
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '1' } },
    };
    const res = await h.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { authorization: `Bearer ${h.adminKey}`, 'content-type': 'application/json' },
      payload: init,
    });
    expect(res.statusCode).toBe(406);
    const body = res.json();
    expect(body).toMatchObject({ success: false, code: 'not_acceptable', details: { accept: '' } });
    expect(body.error).toContain('Accept: application/json, text/event-stream');
    expect(body.jsonrpc).toBeUndefined();
  });

  it('serves the docs page at /api/docs too, rendering `code` in summaries', async () => {
    for (const url of ['/docs', '/api/docs', '/w/default/api/docs']) {
      const res = await h.app.inject({ url });
      expect(res.statusCode, url).toBe(200);
      expect(res.body).toContain("'<code>$1</code>'");
      // The page finds openapi.json from either address.
      expect(res.body).toContain('(\\/api)?\\/docs');
    }
  });

  it('/settings/tools redirects to the Tools page', async () => {
    const res = await h.app.inject({ url: '/settings/tools' });
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe('/tools');
  });
});

describe('CLI text', () => {
  it('user create prints its link at DBQ_PUBLIC_URL', async () => {
    const res = await runDbq(
      h.dataDir,
      ['user', 'create', '--workspace', 'default', '--email', 'linked@example.com', '--role', 'read_only'],
      {
        env: { DBQ_PUBLIC_URL: 'https://dbq.example.com' },
      },
    );
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/https:\/\/dbq\.example\.com\/set-password\?token=/);
  });

  it('key list names a connection beside its id', async () => {
    const made = await runDbq(h.dataDir, [
      'key',
      'create',
      '--workspace',
      'default',
      '--user',
      'admin@acme.test',
      '--name',
      'shop-only',
      '--connection',
      'sample',
    ]);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(/connections sample \(conn_[0-9a-z]+\)/);
    const listed = await runDbq(h.dataDir, ['key', 'list', '--workspace', 'default']);
    expect(listed.stdout).toMatch(/shop-only.*connections sample \(conn_[0-9a-z]+\)/);
    // The audit entry of that key's creation names the connection in its changes.
    const audit = await runDbq(h.dataDir, ['audit', 'list', '--workspace', 'default', '--action', 'key.created', '--limit', '1']);
    expect(audit.stdout).toMatch(/"sample \(conn_[0-9a-z]+\)"/);
  });

  it('tool create and tool list name the connection', async () => {
    const file = path.join(h.dataDir, 'tool.json');
    fs.writeFileSync(
      file,
      JSON.stringify({
        name: 'countries',
        description: 'Customers per country',
        connectionId: 'sample',
        sql: 'SELECT country, COUNT(*) AS n FROM customers GROUP BY country',
      }),
    );
    const made = await runDbq(h.dataDir, ['tool', 'create', '--workspace', 'default', '--file', file]);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(/on sample \(conn_[0-9a-z]+\)/);
    const listed = await runDbq(h.dataDir, ['tool', 'list', '--workspace', 'default']);
    expect(listed.stdout).toMatch(/countries\tv1\tsample \(conn_[0-9a-z]+\)/);
  });
});
