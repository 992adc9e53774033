// The plan's per-workspace budget covers every front door that runs work. The web console's
// query (and Ask, connection test, schema) endpoints used to skip it: with the free plan's 60
// requests spent over REST, console queries still answered 200. Now they take from the same
// count and answer past it with the API's 429 envelope and headers; and what the console
// spends, REST and MCP no longer have.
import { cliActor } from '../src/audit/audit.ts';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../src/workspaces/passwords.ts';
import { setWorkspacePlan } from '../src/workspaces/workspaces.ts';
import { createHarness, workspaceSqliteDir, type Harness } from './support/harness.ts';

let h: Harness;

const RATE_LIMITED = { success: false, error: 'Rate limit exceeded', code: 'rate_limited' };

async function signIn(base: string, email: string): Promise<{ cookie: string; csrf: string }> {
  const res = await h.app.inject({
    method: 'POST',
    url: `${base}/ui/api/login`,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ email, password: 'correct horse' }),
  });
  expect(res.statusCode, res.body).toBe(200);
  return { cookie: /dbq_session=[^;]+/.exec(String(res.headers['set-cookie']))![0], csrf: JSON.parse(res.body).data.csrfToken };
}

async function ui(method: 'GET' | 'POST', url: string, who: { cookie: string; csrf: string }, body?: unknown) {
  const res = await h.app.inject({
    method,
    url,
    headers: { cookie: who.cookie, 'x-csrf-token': who.csrf, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    payload: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.statusCode, headers: res.headers, body: JSON.parse(res.body) };
}

beforeAll(async () => {
  h = await createHarness();
  await h.svc.db
    .updateTable('users')
    .set({ password_hash: await hashPassword('correct horse') })
    .where('email', '=', 'admin@other.test')
    .execute();
  for (const slug of ['default', 'other']) fs.writeFileSync(path.join(workspaceSqliteDir(h, slug), 'limit.db'), '');
  // Both workspaces get a SQLite connection while still unlimited, then move to the free plan.
  for (const [key, prefix] of [
    [h.adminKey, ''],
    [h.otherKey, '/w/other'],
  ] as const) {
    const res = await h.call('POST', `${prefix}/api/connections`, key, { name: 'lite', engine: 'sqlite', database: 'limit.db' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  await setWorkspacePlan(h.svc.db, 'default', 'free', cliActor());
  await setWorkspacePlan(h.svc.db, 'other', 'free', cliActor());
});
afterAll(async () => {
  await h?.close();
});

describe('free plan (60 requests per minute)', () => {
  it("a console query is refused with the API's 429 once REST has spent the budget", async () => {
    const admin = await signIn('', 'admin@acme.test');
    const first = await ui('POST', '/ui/api/query', admin, { connectionId: 'lite', sql: 'SELECT 1 AS one' });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.headers['ratelimit-limit']).toBe('60');
    const left = Number(first.headers['ratelimit-remaining']);
    expect(left).toBe(59);
    for (let i = 0; i < left; i++) expect((await h.call('GET', '/api/connections', h.adminKey)).status).toBe(200);
    expect((await h.call('GET', '/api/connections', h.adminKey)).status).toBe(429);

    for (const [url, body] of [
      ['/ui/api/query', { connectionId: 'lite', sql: 'SELECT 1 AS one' }],
      ['/ui/api/ai/generate', { connectionId: 'lite', prompt: 'how many rows' }],
      ['/ui/api/connections/test', { connectionId: 'lite' }],
    ] as const) {
      const refused = await ui('POST', url, admin, body);
      expect(refused.status, url).toBe(429);
      expect(refused.body).toEqual(RATE_LIMITED);
      expect(refused.headers['ratelimit-limit']).toBe('60');
      expect(refused.headers['ratelimit-remaining']).toBe('0');
      expect(Number(refused.headers['ratelimit-reset'])).toBeGreaterThan(0);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    }
    const schema = await ui('GET', '/ui/api/connections/lite/schema', admin);
    expect(schema.status).toBe(429);
    expect(schema.body).toEqual(RATE_LIMITED);
    // Nothing ran: a refused console query leaves no history entry.
    const history = await h.svc.db.selectFrom('query_history').select('sql').where('sql', '=', 'SELECT 1 AS one').execute();
    expect(history).toHaveLength(1);
    // Managing keys and users is not work on a database: the settings pages stay usable.
    expect((await ui('GET', '/ui/api/keys', admin)).status).toBe(200);
    expect((await ui('GET', '/ui/api/session', admin)).status).toBe(200);
  });

  it("the console's own queries count: they spend the one budget REST draws on too", async () => {
    const admin = await signIn('/w/other', 'admin@other.test');
    // `other` spent one request (creating its connection) before it moved to the free plan;
    // the count survives a plan change.
    let remaining = Number((await h.call('GET', '/w/other/api/connections', h.otherKey)).headers['ratelimit-remaining']);
    expect(remaining).toBe(58);
    while (remaining > 0) {
      const res = await ui('POST', '/w/other/ui/api/query', admin, { connectionId: 'lite', sql: `SELECT ${remaining} AS n` });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(Number(res.headers['ratelimit-remaining'])).toBe(remaining - 1);
      remaining--;
    }
    const console61 = await ui('POST', '/w/other/ui/api/query', admin, { connectionId: 'lite', sql: 'SELECT 61 AS n' });
    expect(console61.status).toBe(429);
    const rest = await h.call('GET', '/w/other/api/connections', h.otherKey);
    expect(rest.status).toBe(429);
    expect(rest.body).toEqual(RATE_LIMITED);
    expect(rest.headers['retry-after']).toBeDefined();
  });
});
