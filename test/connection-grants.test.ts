// Connection grants hide a connection from a user who may not use it on every door — REST
// (list, query, export, async, AI, objects, test), MCP over both transports (list_connections,
// execute_query, list_tables), the web console — as 404 `Connection not found`, the very answer
// an unknown name gets (never a 403 that would confirm it), and nothing runs. Admins always see
// all; a granted user gets it back; every change is audited; the CLI and the web app manage it.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliActor } from '../src/audit/audit.ts';
import { createApiKey } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { createMcpHarness, dataOf, TRANSPORTS, type McpHarness, type McpTransportName } from './support/mcp-harness.ts';

const run = promisify(execFile);
const NOT_FOUND = { success: false, error: 'Connection not found', code: 'connection_not_found' };
const HIDDEN_PASSWORD = 'hidden reader pw';

let m: McpHarness;
let liteId: string;
let hiddenKey: string;
let grantedKey: string;
const clients = new Map<string, Client>();

function envelopeOf(result: unknown): any {
  const r = result as CallToolResult;
  expect(r.isError).toBe(true);
  return JSON.parse((r.content[1] as { text: string }).text);
}

async function itemsCount(): Promise<number> {
  const res = await m.h.call('POST', '/api/query', m.h.adminKey, { connectionId: 'lite', sql: 'SELECT count(*) AS n FROM items' });
  return res.body.data.rows[0][0];
}

async function historyOf(email: string): Promise<number> {
  return (await m.h.svc.db.selectFrom('query_history').select('id').where('user_email', '=', email).execute()).length;
}

async function webSignIn(email: string, password: string): Promise<{ cookie: string; csrf: string }> {
  const res = await m.h.app.inject({
    method: 'POST',
    url: '/ui/api/login',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ email, password }),
  });
  expect(res.statusCode, res.body).toBe(200);
  const cookie = /dbq_session=([^;]+)/.exec(String(res.headers['set-cookie']))![1];
  return { cookie: `dbq_session=${cookie}`, csrf: JSON.parse(res.body).data.csrfToken };
}

async function web(method: string, url: string, s: { cookie: string; csrf: string }, body?: unknown) {
  const res = await m.h.app.inject({
    method: method as any,
    url,
    headers: { cookie: s.cookie, 'x-csrf-token': s.csrf, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    payload: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.statusCode, body: JSON.parse(res.body) };
}

beforeAll(async () => {
  m = await createMcpHarness();
  const db = m.h.svc.db;
  await createUser(db, { workspace: 'default', email: 'hidden@acme.test', role: 'read_only', password: HIDDEN_PASSWORD }, cliActor());
  await createUser(db, { workspace: 'default', email: 'granted@acme.test', role: 'read_only' }, cliActor());
  hiddenKey = (await createApiKey(db, { workspace: 'default', email: 'hidden@acme.test', name: 'hidden' })).secret;
  grantedKey = (await createApiKey(db, { workspace: 'default', email: 'granted@acme.test', name: 'granted' })).secret;
  const list = (await m.h.call('GET', '/api/connections', m.h.adminKey)).body.data.connections;
  liteId = list.find((c: any) => c.name === 'lite').id;
  const put = await m.h.call('PUT', `/api/connections/${liteId}/grants`, m.h.adminKey, { everyone: false, users: ['granted@acme.test'] });
  expect(put.status, JSON.stringify(put.body)).toBe(200);
  for (const t of TRANSPORTS) {
    clients.set(`${t}:hidden`, await m.connect(t, hiddenKey));
    clients.set(`${t}:admin`, await m.connect(t, m.h.adminKey));
  }
});

afterAll(async () => {
  await m?.close();
});

describe('managing grants', () => {
  it('reads and writes grants (admin only), names an unknown user, and audits from/to', async () => {
    const got = await m.h.call('GET', `/api/connections/${liteId}/grants`, m.h.adminKey);
    expect(got.body.data).toEqual({ everyone: false, users: [{ id: expect.stringMatching(/^usr_/), email: 'granted@acme.test' }] });
    expect((await m.h.call('GET', `/api/connections/${liteId}/grants`, m.h.readerKey)).status).toBe(403);
    expect((await m.h.call('PUT', `/api/connections/${liteId}/grants`, m.h.readerKey, { everyone: true })).status).toBe(403);
    const unknown = await m.h.call('PUT', `/api/connections/${liteId}/grants`, m.h.adminKey, {
      everyone: false,
      users: ['ghost@acme.test'],
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toContain('ghost@acme.test');
    const entries = await m.h.svc.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'connection.grants_changed')
      .where('target_id', '=', liteId)
      .execute();
    expect(entries).toHaveLength(1);
    expect(JSON.parse(entries[0].changes!)).toEqual({ from: { everyone: true }, to: { everyone: false, users: ['granted@acme.test'] } });
    // Unchanged after the refused attempts.
    expect((await m.h.call('GET', `/api/connections/${liteId}/grants`, m.h.adminKey)).body.data.users).toHaveLength(1);
  });
});

describe('a connection the caller may not use', () => {
  it('is absent from GET /connections, but listed for admins and granted users', async () => {
    const names = async (key: string) => (await m.h.call('GET', '/api/connections', key)).body.data.connections.map((c: any) => c.name);
    expect(await names(hiddenKey)).toEqual(['pg']);
    expect(await names(m.h.adminKey)).toEqual(['lite', 'pg']);
    expect(await names(grantedKey)).toEqual(['lite', 'pg']);
  });

  it('answers 404 Connection not found on every REST door, exactly as an unknown name does, and runs nothing', async () => {
    const before = await itemsCount();
    const doors: [string, string, unknown?][] = [
      ['POST', '/api/query', { connectionId: '$', sql: 'SELECT * FROM items' }],
      ['POST', '/api/query', { connectionId: '$', sql: 'SELECT * FROM items', async: true }],
      ['POST', '/api/query/export', { connectionId: '$', sql: 'SELECT * FROM items', format: 'ndjson' }],
      ['POST', '/api/ai/generate', { connectionId: '$', prompt: 'all items', execute: true }],
      ['GET', '/api/connections/$/objects?pattern=items'],
      ['POST', '/api/connections/test', { connectionId: '$' }],
    ];
    for (const [method, url, body] of doors) {
      for (const ref of ['lite', liteId]) {
        const res = await m.h.call(
          method,
          url.replace('$', ref),
          hiddenKey,
          body && JSON.parse(JSON.stringify(body).replace('"$"', JSON.stringify(ref))),
        );
        expect(res.status, `${method} ${url} ${ref}`).toBe(404);
        expect(res.body).toEqual(NOT_FOUND);
      }
      const unknown = await m.h.call(
        method,
        url.replace('$', 'nosuch'),
        hiddenKey,
        body && JSON.parse(JSON.stringify(body).replace('"$"', '"nosuch"')),
      );
      expect(unknown.body).toEqual(NOT_FOUND);
    }
    expect(await itemsCount()).toBe(before);
    expect((await m.h.call('GET', '/api/query/running', hiddenKey)).body.data.queries).toEqual([]);
    // The granted user and the admin do reach it.
    expect((await m.h.call('POST', '/api/query', grantedKey, { connectionId: 'lite', sql: 'SELECT count(*) FROM items' })).status).toBe(
      200,
    );
  });

  it.each(TRANSPORTS)('is absent from MCP list_connections and 404 for execute_query and list_tables (%s)', async (t: McpTransportName) => {
    const hidden = clients.get(`${t}:hidden`)!;
    const listed = dataOf(await hidden.callTool({ name: 'list_connections', arguments: {} }));
    expect(listed.connections.map((c: any) => c.name)).toEqual(['pg']);
    const asAdmin = dataOf(await clients.get(`${t}:admin`)!.callTool({ name: 'list_connections', arguments: {} }));
    expect(asAdmin.connections.map((c: any) => c.name)).toEqual(['lite', 'pg']);
    const historyBefore = await historyOf('hidden@acme.test');
    for (const [name, args] of [
      ['execute_query', { connectionId: 'lite', sql: 'SELECT * FROM items' }],
      ['execute_query', { connectionId: liteId, sql: 'DELETE FROM items' }],
      ['list_tables', { connectionId: 'lite' }],
      ['describe_table', { connectionId: 'lite', table: 'items' }],
    ] as const) {
      const env = envelopeOf(await hidden.callTool({ name, arguments: args }));
      expect(env, `${name} ${JSON.stringify(args)}`).toEqual(NOT_FOUND);
    }
    expect(await historyOf('hidden@acme.test')).toBe(historyBefore);
    expect(await itemsCount()).toBe(3);
  });

  it('is absent from the web console and 404 for its query and schema', async () => {
    const s = await webSignIn('hidden@acme.test', HIDDEN_PASSWORD);
    const list = await web('GET', '/ui/api/connections', s);
    expect(list.body.data.connections.map((c: any) => c.name)).toEqual(['pg']);
    const q = await web('POST', '/ui/api/query', s, { connectionId: 'lite', sql: 'SELECT * FROM items' });
    expect(q.status).toBe(404);
    expect(q.body).toEqual(NOT_FOUND);
    expect((await web('GET', `/ui/api/connections/${liteId}/schema`, s)).status).toBe(404);
    expect((await web('GET', `/ui/api/connections/${liteId}/grants`, s)).status).toBe(403);
  });

  it('comes back once granted, through the web Access control and the CLI, and goes again on revoke', async () => {
    const admin = await webSignIn('admin@acme.test', 'correct horse');
    const put = await web('PUT', `/ui/api/connections/${liteId}/grants`, admin, {
      everyone: false,
      users: ['granted@acme.test', 'hidden@acme.test'],
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.data.users.map((u: any) => u.email)).toEqual(['granted@acme.test', 'hidden@acme.test']);
    expect((await m.h.call('POST', '/api/query', hiddenKey, { connectionId: 'lite', sql: 'SELECT 1' })).status).toBe(200);
    const [ui] = await m.h.svc.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'connection.grants_changed')
      .where('source', '=', 'ui')
      .execute();
    expect(ui.actor_email).toBe('admin@acme.test');

    const env = { ...process.env, DBQ_DATA_DIR: m.h.dataDir };
    const revoked = await run(
      './bin/dbq',
      ['connection', 'revoke', '--workspace', 'default', '--connection', 'lite', '--user', 'hidden@acme.test', '--json'],
      { env },
    );
    expect(JSON.parse(revoked.stdout).users.map((u: any) => u.email)).toEqual(['granted@acme.test']);
    expect((await m.h.call('POST', '/api/query', hiddenKey, { connectionId: 'lite', sql: 'SELECT 1' })).status).toBe(404);
    const shown = await run('./bin/dbq', ['connection', 'grants', '--workspace', 'default', '--connection', 'lite'], { env });
    expect(shown.stdout).toContain('granted@acme.test');
    await run('./bin/dbq', ['connection', 'grant', '--workspace', 'default', '--connection', 'lite', '--user', 'hidden@acme.test'], {
      env,
    });
    expect((await m.h.call('POST', '/api/query', hiddenKey, { connectionId: 'lite', sql: 'SELECT 1' })).status).toBe(200);
    const cli = await m.h.svc.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'connection.grants_changed')
      .where('source', '=', 'cli')
      .execute();
    expect(cli).toHaveLength(2);

    // Back to everyone: the reader of the harness sees it again.
    expect((await m.h.call('PUT', `/api/connections/${liteId}/grants`, m.h.adminKey, { everyone: true })).body.data).toEqual({
      everyone: true,
    });
    expect((await m.h.call('GET', '/api/connections', m.h.readerKey)).body.data.connections.map((c: any) => c.name)).toEqual([
      'lite',
      'pg',
    ]);
  }, 120_000);
});
