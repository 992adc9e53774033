// The effective permission is the user's current role ∩ the key's scope ∩ the connection's
// grants, on every front door. One server, one table of expectations, every cell of
// role (admin, read_only) × key scope (none, readOnly, connections:[A], toolsOnly)
// × door (REST /query, MCP SSE and Streamable HTTP execute_query, AI /ai/generate with
// execute, /query/export, async /query) × operation (read A, write A, read B, read C — C is
// granted to nobody, so only admins may use it), plus the web console (a session, no key:
// role × grants). Each cell asserts the answer (code and details.reason) and, for a refusal,
// that nothing ran: no rows came back and the write target's file is unchanged.
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliActor } from '../src/audit/audit.ts';
import type { KeyScopeRequest } from '../src/access/key-scope-input.ts';
import { createApiKey } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { workspaceSqliteDir } from './support/harness.ts';
import { createMcpHarness, type McpHarness } from './support/mcp-harness.ts';

type Role = 'admin' | 'read_only';
type Scope = 'none' | 'readOnly' | 'connA' | 'toolsOnly';
type Door = 'rest' | 'mcp-sse' | 'mcp-streamable' | 'ai' | 'export' | 'async' | 'console';
type Op = 'readA' | 'writeA' | 'readB' | 'readC';

const ROLES: Role[] = ['admin', 'read_only'];
const SCOPES: Scope[] = ['none', 'readOnly', 'connA', 'toolsOnly'];
const KEY_DOORS: Door[] = ['rest', 'mcp-sse', 'mcp-streamable', 'ai', 'export', 'async'];
const OPS: Op[] = ['readA', 'writeA', 'readB', 'readC'];
const CONN: Record<Op, string> = { readA: 'ma', writeA: 'ma', readB: 'mb', readC: 'mc' };
const SQL: Record<Op, string> = {
  readA: 'SELECT body FROM notes',
  writeA: "INSERT INTO notes (body) VALUES ('written')",
  readB: 'SELECT body FROM notes',
  readC: 'SELECT body FROM notes',
};
const SCOPE_INPUT: Record<Scope, KeyScopeRequest> = {
  none: {},
  readOnly: { readOnly: true },
  connA: { connections: ['ma'] },
  toolsOnly: { toolsOnly: true },
};
const PASSWORD: Record<Role, string> = { admin: 'matrix admin pw', read_only: 'matrix reader pw' };
const EMAIL: Record<Role, string> = { admin: 'matrix-admin@acme.test', read_only: 'matrix-reader@acme.test' };

type Outcome = { ok: true } | { ok: false; code: string; reason?: string };

/** The rules, written once: what every door must answer. The console signs a person in with no
 * key, so its write refusal names their role instead of a key. */
function expected(role: Role, scope: Scope, op: Op, door?: Door): Outcome {
  if (scope === 'toolsOnly') return { ok: false, code: 'insufficient_permissions', reason: 'this key may run curated tools only' };
  if (op === 'readC' && role !== 'admin') return { ok: false, code: 'connection_not_found' };
  if (scope === 'connA' && op !== 'readA' && op !== 'writeA') {
    return { ok: false, code: 'insufficient_permissions', reason: `this key may not use connection "${CONN[op]}"` };
  }
  if (op === 'writeA' && (role !== 'admin' || scope === 'readOnly')) {
    const reason =
      door === 'console' ? 'your role (read-only) may run read statements only' : 'a read-only key may run read statements only';
    return { ok: false, code: 'insufficient_permissions', reason };
  }
  return { ok: true };
}

interface Answer {
  ok: boolean;
  code?: string;
  reason?: string;
  /** Rows that came back, null when none could. */
  rows: number | null;
  raw: unknown;
}

let m: McpHarness;
const keys = new Map<string, string>();
const clients = new Map<string, Client>();
const sessions = new Map<Role, { cookie: string; csrf: string }>();
let fileA: string;

function notesIn(file: string): number {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM notes').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

function fromEnvelope(status: number, body: any): Answer {
  if (status >= 200 && status < 300) return { ok: true, rows: body.data?.rows?.length ?? null, raw: body };
  return { ok: false, code: body.code, reason: body.details?.reason, rows: null, raw: body };
}

function fromTool(result: unknown): Answer {
  const r = result as CallToolResult;
  if (!r.isError) return { ok: true, rows: (r.structuredContent as any).rows.length, raw: r };
  const env = JSON.parse((r.content[1] as { text: string }).text);
  return { ok: false, code: env.code, reason: env.details?.reason, rows: null, raw: env };
}

async function ask(door: Door, role: Role, scope: Scope, op: Op): Promise<Answer> {
  const h = m.h;
  const key = keys.get(`${role}:${scope}`)!;
  const body = { connectionId: CONN[op], sql: SQL[op] };
  switch (door) {
    case 'rest': {
      const res = await h.call('POST', '/api/query', key, body);
      return fromEnvelope(res.status, res.body);
    }
    case 'mcp-sse':
    case 'mcp-streamable': {
      const client = clients.get(`${door}:${role}:${scope}`)!;
      return fromTool(await client.callTool({ name: 'execute_query', arguments: body }));
    }
    case 'ai': {
      const res = await h.call('POST', '/api/ai/generate', key, { connectionId: CONN[op], prompt: 'list all notes', execute: true });
      if (res.status !== 200) return fromEnvelope(res.status, res.body);
      return { ok: true, rows: res.body.data.result?.rows.length ?? null, raw: res.body };
    }
    case 'export': {
      const res = await h.app.inject({
        method: 'POST',
        url: '/api/query/export',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ ...body, format: 'ndjson' }),
      });
      if (res.statusCode !== 200) return fromEnvelope(res.statusCode, JSON.parse(res.body));
      return { ok: true, rows: res.body.trim().split('\n').length - 1, raw: res.body };
    }
    case 'async': {
      const res = await h.call('POST', '/api/query', key, { ...body, async: true });
      if (res.status !== 202) return fromEnvelope(res.status, res.body);
      for (;;) {
        const state = await h.call('GET', `/api/query/${res.body.data.queryId}`, key);
        const data = state.body.data;
        if (data.status === 'succeeded') return { ok: true, rows: data.result.rows.length, raw: data };
        if (data.status !== 'running')
          return { ok: false, code: data.error.code, reason: data.error.details?.reason, rows: null, raw: data };
        await new Promise((r) => setTimeout(r, 10));
      }
    }
    case 'console': {
      const s = sessions.get(role)!;
      const res = await h.app.inject({
        method: 'POST',
        url: '/ui/api/query',
        headers: { cookie: s.cookie, 'x-csrf-token': s.csrf, 'content-type': 'application/json' },
        payload: JSON.stringify(body),
      });
      return fromEnvelope(res.statusCode, JSON.parse(res.body));
    }
  }
}

interface Cell {
  name: string;
  door: Door;
  role: Role;
  scope: Scope;
  op: Op;
}

const CELLS: Cell[] = [];
for (const role of ROLES) {
  for (const scope of SCOPES) {
    for (const door of KEY_DOORS) {
      for (const op of OPS) {
        // The builtin generator writes reads only: the AI door has no write to ask for.
        if (door === 'ai' && op === 'writeA') continue;
        CELLS.push({ name: `${door} ${role} key:${scope} ${op}`, door, role, scope, op });
      }
    }
  }
  for (const op of OPS) CELLS.push({ name: `console ${role} session ${op}`, door: 'console', role, scope: 'none', op });
}

beforeAll(async () => {
  m = await createMcpHarness();
  const db = m.h.svc.db;
  const dir = workspaceSqliteDir(m.h, 'default');
  for (const f of ['matrix-a.db', 'matrix-b.db', 'matrix-c.db']) {
    const lite = new Database(path.join(dir, f));
    lite.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('first'), ('second');");
    lite.close();
  }
  fileA = path.join(dir, 'matrix-a.db');
  const ids: Record<string, string> = {};
  for (const [name, file] of [
    ['ma', 'matrix-a.db'],
    ['mb', 'matrix-b.db'],
    ['mc', 'matrix-c.db'],
  ]) {
    const res = await m.h.call('POST', '/api/connections', m.h.adminKey, { name, url: `sqlite:${file}` });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    ids[name] = res.body.data.connection.id;
  }
  expect((await m.h.call('PUT', `/api/connections/${ids.mc}/grants`, m.h.adminKey, { everyone: false, users: [] })).status).toBe(200);

  for (const role of ROLES) {
    await createUser(db, { workspace: 'default', email: EMAIL[role], role, password: PASSWORD[role] }, cliActor());
    for (const scope of SCOPES) {
      const { secret } = await createApiKey(db, {
        workspace: 'default',
        email: EMAIL[role],
        name: `${role}-${scope}`,
        scope: SCOPE_INPUT[scope],
      });
      keys.set(`${role}:${scope}`, secret);
      clients.set(`mcp-sse:${role}:${scope}`, await m.connect('sse', secret));
      clients.set(`mcp-streamable:${role}:${scope}`, await m.connect('streamable', secret));
    }
    const login = await m.h.app.inject({
      method: 'POST',
      url: '/ui/api/login',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ email: EMAIL[role], password: PASSWORD[role] }),
    });
    expect(login.statusCode, login.body).toBe(200);
    sessions.set(role, {
      cookie: `dbq_session=${/dbq_session=([^;]+)/.exec(String(login.headers['set-cookie']))![1]}`,
      csrf: JSON.parse(login.body).data.csrfToken,
    });
  }
});

afterAll(async () => {
  await m?.close();
});

describe('role × key scope × front door × operation', () => {
  it.each(CELLS)('$name', async ({ door, role, scope, op }) => {
    const want = expected(role, scope, op, door);
    const before = notesIn(fileA);
    const got = await ask(door, role, scope, op);
    const after = notesIn(fileA);
    if (want.ok) {
      expect(got.ok, JSON.stringify(got.raw)).toBe(true);
      if (op === 'writeA') expect(after).toBe(before + 1);
      else {
        expect(got.rows).toBeGreaterThanOrEqual(2);
        expect(after).toBe(before);
      }
    } else {
      expect(got.ok, JSON.stringify(got.raw)).toBe(false);
      expect(got.code).toBe(want.code);
      expect(got.reason).toBe(want.reason);
      if (want.code === 'connection_not_found') expect((got.raw as any).error).toBe('Connection not found');
      expect(got.rows).toBeNull();
      expect(after).toBe(before);
    }
  });

  it('left no statement running', async () => {
    expect(m.h.svc.running.size).toBe(0);
  });
});
