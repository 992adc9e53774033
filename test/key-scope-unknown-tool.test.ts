// A key's `tools` scope used to take any name (`dbq key create --tool no_such`, POST
// /keys with tools: ["no_such"]) and store a key that could run nothing, while an unknown
// connection was refused with 400. Both are refused alike now, on every door that creates keys
// (REST, CLI, the web form): 400 naming every unknown tool, and no key is stored. A deleted tool
// and one on a connection the user may not use read exactly like one that never existed.
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, workspaceSqliteDir, type Harness } from './support/harness.ts';
import { runDbq } from './support/cli.ts';

let h: Harness;
let idHidden: string;

async function keyCount(): Promise<number> {
  return Number(
    (
      await h.svc.db
        .selectFrom('api_keys')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
}

async function tool(name: string, connectionId: string) {
  const res = await h.call('POST', '/api/tools', h.adminKey, { name, description: name, connectionId, sql: 'SELECT count(*) AS n FROM t' });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
}

beforeAll(async () => {
  h = await createHarness();
  const dir = workspaceSqliteDir(h, 'default');
  for (const f of ['tools-open.db', 'tools-hidden.db']) {
    const db = new Database(path.join(dir, f));
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY); INSERT INTO t VALUES (1);');
    db.close();
  }
  const open = (await h.call('POST', '/api/connections', h.adminKey, { name: 'open', url: 'sqlite:tools-open.db' })).body.data.connection
    .id;
  idHidden = (await h.call('POST', '/api/connections', h.adminKey, { name: 'hidden', url: 'sqlite:tools-hidden.db' })).body.data.connection
    .id;
  await tool('daily_total', open);
  await tool('weekly_total', open);
  await tool('gone_tool', open);
  expect((await h.call('DELETE', '/api/tools/gone_tool', h.adminKey)).status).toBe(200);
  await tool('secret_total', idHidden);
  await h.call('PUT', `/api/connections/${idHidden}/grants`, h.adminKey, { everyone: false, users: [] });
});

afterAll(async () => {
  await h?.close();
});

describe('POST /keys with tools', () => {
  it('accepts live tools the user may use (duplicates once)', async () => {
    const res = await h.call('POST', '/api/keys', h.adminKey, {
      name: 'ok',
      user: 'reader@acme.test',
      tools: ['daily_total', 'weekly_total', 'daily_total'],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data.apiKey.scope).toEqual({ tools: ['daily_total', 'weekly_total'] });
  });

  it('refuses an unknown tool with 400 naming it, and stores no key', async () => {
    const before = await keyCount();
    const res = await h.call('POST', '/api/keys', h.adminKey, { name: 'x', user: 'reader@acme.test', tools: ['daily_total', 'no_such'] });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'invalid_request',
      error: 'tools: unknown tool "no_such"',
      details: { field: 'tools', tool: 'no_such', tools: ['no_such'] },
    });
    expect(await keyCount()).toBe(before);
  });

  it('names every unknown tool at once', async () => {
    const res = await h.call('POST', '/api/keys', h.adminKey, { name: 'x', tools: ['no_such', 'daily_total', 'also_missing'] });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('tools: unknown tools "no_such", "also_missing"');
    expect(res.body.details.tools).toEqual(['no_such', 'also_missing']);
  });

  it('refuses a deleted tool, and a tool on a connection the user may not use, exactly like an unknown one', async () => {
    const deleted = await h.call('POST', '/api/keys', h.adminKey, { name: 'x', user: 'reader@acme.test', tools: ['gone_tool'] });
    expect(deleted.status).toBe(400);
    expect(deleted.body.error).toBe('tools: unknown tool "gone_tool"');
    const hidden = await h.call('POST', '/api/keys', h.adminKey, { name: 'x', user: 'reader@acme.test', tools: ['secret_total'] });
    expect(hidden.status).toBe(400);
    expect(hidden.body.error).toBe('tools: unknown tool "secret_total"');
    // An admin may use every connection, so for the admin's own key it is a tool like any other.
    const forAdmin = await h.call('POST', '/api/keys', h.adminKey, { name: 'x', tools: ['secret_total'] });
    expect(forAdmin.status, JSON.stringify(forAdmin.body)).toBe(201);
  });

  it('answers unknown before wider when a key creates a key, as for connections', async () => {
    const parent = await h.call('POST', '/api/keys', h.adminKey, { name: 'parent', tools: ['daily_total'] });
    expect(parent.status).toBe(201);
    const unknown = await h.call('POST', '/api/keys', parent.body.data.secret, { name: 'child', tools: ['no_such'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toBe('tools: unknown tool "no_such"');
    const wider = await h.call('POST', '/api/keys', parent.body.data.secret, { name: 'child', tools: ['weekly_total'] });
    expect(wider.status).toBe(403);
  });
});

describe('the CLI and the web form', () => {
  it('`dbq key create --tool no_such` fails naming the tool and stores no key', async () => {
    const before = await keyCount();
    const bad = await runDbq(h.dataDir, [
      'key',
      'create',
      '--workspace',
      'default',
      '--user',
      'reader@acme.test',
      '--name',
      'x',
      '--tool',
      'daily_total',
      '--tool',
      'no_such',
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('tools: unknown tool "no_such"');
    expect(await keyCount()).toBe(before);
    const good = await runDbq(h.dataDir, [
      'key',
      'create',
      '--workspace',
      'default',
      '--user',
      'reader@acme.test',
      '--name',
      'cli-tools',
      '--tool',
      'daily_total',
      '--json',
    ]);
    expect(good.code, good.stderr).toBe(0);
    expect(JSON.parse(good.stdout).apiKey.scope).toEqual({ tools: ['daily_total'] });
  }, 60_000);

  it('the web key form (/ui/api/keys) answers 400 naming the tool', async () => {
    const login = await h.app.inject({
      method: 'POST',
      url: '/ui/api/login',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ email: 'admin@acme.test', password: 'correct horse' }),
    });
    expect(login.statusCode, login.body).toBe(200);
    const cookie = /dbq_session=[^;]+/.exec(String(login.headers['set-cookie']))![0];
    const csrf = JSON.parse(login.body).data.csrfToken as string;
    const post = (tools: string[]) =>
      h.app.inject({
        method: 'POST',
        url: '/ui/api/keys',
        headers: { cookie, 'x-csrf-token': csrf, 'content-type': 'application/json' },
        payload: JSON.stringify({ name: 'web-key', tools }),
      });
    const bad = await post(['no_such']);
    expect(bad.statusCode).toBe(400);
    expect(JSON.parse(bad.body)).toMatchObject({
      code: 'invalid_request',
      error: 'tools: unknown tool "no_such"',
      details: { field: 'tools' },
    });
    const good = await post(['weekly_total']);
    expect(good.statusCode, good.body).toBe(201);
  });
});
