// Curated tools over REST on every engine: definitions are checked before they are stored,
// edits make versions, parameters are typed and bound by the driver (never spliced), caller
// values cannot be overridden, the guard still decides for a read-only caller, and history
// names the tool and version.
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EngineName } from '../src/engines/engine.ts';
import { createApiKey } from '../src/workspaces/api-keys.ts';
import { closeAllEngines, mysqlConfig, openEngine, postgresConfig, run, uniqueName } from './support/engines.ts';
import { createHarness, MYSQL_URL, PG_URL, workspaceSqliteDir, type Harness } from './support/harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await closeAllEngines();
  await h?.close();
});

interface Setup {
  table: string;
  connection: string;
  count(): Promise<number>;
  drop(): Promise<void>;
}

const ROWS = [
  [1, 'admin@acme.test', 'open', 10.5, '2025-01-10', 'first'],
  [2, 'reader@acme.test', 'open', 20, '2025-02-10', "' OR 1=1 --"],
  [3, 'reader@acme.test', 'closed', 30, '2025-03-10', '1; DROP TABLE x'],
  [4, 'admin@acme.test', 'closed', 40, '2025-04-10', 'last'],
] as const;

function ddl(engine: EngineName, table: string): string {
  const dateType = engine === 'sqlite' ? 'TEXT' : 'DATE';
  return `CREATE TABLE ${table} (id INTEGER PRIMARY KEY, owner VARCHAR(100) NOT NULL, status VARCHAR(20) NOT NULL, amount NUMERIC(10,2) NOT NULL, placed_on ${dateType} NOT NULL, note VARCHAR(100) NOT NULL)`;
}

function inserts(table: string): string[] {
  return ROWS.map((r) => `INSERT INTO ${table} VALUES (${r[0]}, '${r[1]}', '${r[2]}', ${r[3]}, '${r[4]}', '${r[5].replace(/'/g, "''")}')`);
}

async function setUp(engine: EngineName): Promise<Setup> {
  const table = uniqueName('tools');
  if (engine === 'sqlite') {
    const file = path.join(workspaceSqliteDir(h, 'default'), `${table}.db`);
    const db = new Database(file);
    db.exec(ddl(engine, table));
    for (const s of inserts(table)) db.exec(s);
    db.close();
    const res = await h.call('POST', '/api/connections', h.adminKey, { name: `lite_${table}`, url: `sqlite:${table}.db` });
    expect(res.status).toBe(201);
    return {
      table,
      connection: res.body.data.connection.id,
      async count() {
        const d = new Database(file, { readonly: true });
        try {
          return (d.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
        } finally {
          d.close();
        }
      },
      async drop() {},
    };
  }
  const admin = openEngine(engine === 'postgres' ? postgresConfig() : mysqlConfig());
  await run(admin, ddl(engine, table));
  for (const s of inserts(table)) await run(admin, s);
  const res = await h.call('POST', '/api/connections', h.adminKey, {
    name: `${engine}_${table}`,
    url: engine === 'postgres' ? PG_URL : MYSQL_URL,
  });
  expect(res.status).toBe(201);
  return {
    table,
    connection: res.body.data.connection.id,
    async count() {
      return Number((await run(admin, `SELECT count(*) FROM ${table}`)).rows[0][0]);
    },
    async drop() {
      await run(admin, `DROP TABLE IF EXISTS ${table}`);
    },
  };
}

const ENGINE_NAMES: EngineName[] = ['postgres', 'mysql', 'sqlite'];

describe.each(ENGINE_NAMES)('curated tools on %s', (engine) => {
  let s: Setup;
  const t = (name: string) => `${name}_${engine}`;
  const historyOf = async (tool: string) => {
    const res = await h.call('GET', '/api/query/history?limit=100', h.adminKey);
    return (res.body.data.entries as any[]).filter((e) => e.tool?.name === tool);
  };

  beforeAll(async () => {
    s = await setUp(engine);
  });
  afterAll(async () => {
    await s?.drop();
  });

  it('creates, lists, gets, edits into version 2 and deletes; a new create continues the numbers', async () => {
    const name = t('by_status');
    const created = await h.call('POST', '/api/tools', h.adminKey, {
      name,
      description: 'Orders with one status',
      connectionId: s.connection,
      sql: `SELECT id FROM ${s.table} WHERE status = :status ORDER BY id`,
      parameters: [{ name: 'status', type: 'enum', values: ['open', 'closed'], required: true }],
      maxRows: 10,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.data.tool).toMatchObject({ name, version: 1, connectionId: s.connection, maxRows: 10 });
    const listed = await h.call('GET', '/api/tools', h.readerKey);
    const mine = listed.body.data.tools.find((x: any) => x.name === name);
    expect(mine).toMatchObject({ version: 1, description: 'Orders with one status' });
    expect(mine.sql).toBeUndefined(); // readers see what a tool does, not its SQL
    expect((await h.call('GET', `/api/tools/${name}`, h.adminKey)).body.data.tool.sql).toMatch(/:status/);

    const v1 = await h.call('POST', `/api/tools/${name}/run`, h.readerKey, { params: { status: 'closed' } });
    expect(v1.status, JSON.stringify(v1.body)).toBe(200);
    expect(v1.body.data.rows.map((r: any[]) => Number(r[0]))).toEqual([3, 4]);
    expect(v1.body.data.tool).toEqual({ name, version: 1 });

    const patched = await h.call('PATCH', `/api/tools/${name}`, h.adminKey, { maxRows: 1 });
    expect(patched.status).toBe(200);
    expect(patched.body.data.tool).toMatchObject({ version: 2, maxRows: 1, description: 'Orders with one status' });
    const v2 = await h.call('POST', `/api/tools/${name}/run`, h.readerKey, { params: { status: 'open' } });
    expect(v2.body.data).toMatchObject({ rowCount: 1, truncated: true, tool: { name, version: 2 } });
    expect((await historyOf(name)).map((e) => e.tool.version)).toEqual([2, 1]);

    expect((await h.call('PATCH', `/api/tools/${name}`, h.readerKey, { maxRows: 5 })).status).toBe(403);
    const deleted = await h.call('DELETE', `/api/tools/${name}`, h.adminKey);
    expect(deleted.body.data).toMatchObject({ deleted: true, tool: { name, version: 2 } });
    expect((await h.call('GET', `/api/tools/${name}`, h.adminKey)).body.code).toBe('tool_not_found');
    expect((await h.call('POST', `/api/tools/${name}/run`, h.readerKey, { params: { status: 'open' } })).status).toBe(404);
    const again = await h.call('POST', '/api/tools', h.adminKey, {
      name,
      description: 'Back again',
      connectionId: s.connection,
      sql: `SELECT count(*) AS n FROM ${s.table}`,
    });
    expect(again.body.data.tool.version).toBe(3);

    const audit = await h.svc.db.selectFrom('audit_log').selectAll().where('target_name', '=', name).orderBy('id').execute();
    expect(audit.map((a) => a.action)).toEqual(['tool.created', 'tool.updated', 'tool.deleted', 'tool.created']);
    expect(JSON.parse(audit[1].changes!)).toMatchObject({ fields: ['maxRows'], version: 2 });
  });

  it('refuses definitions that do not add up, before storing them', async () => {
    const base = { description: 'x', connectionId: s.connection };
    const cases: [Record<string, unknown>, number, RegExp][] = [
      [{ name: t('undeclared'), sql: `SELECT id FROM ${s.table} WHERE id = :id` }, 400, /:id is not a declared parameter/],
      [{ name: t('unused'), sql: `SELECT id FROM ${s.table}`, parameters: [{ name: 'id', type: 'integer' }] }, 400, /not used/],
      [{ name: t('bad_caller'), sql: `SELECT id FROM ${s.table} WHERE owner = :caller.password` }, 400, /caller/],
      [{ name: 'execute_query', sql: 'SELECT 1' }, 409, /built-in/],
      [{ name: t('syntax'), sql: `SELEC id FROM ${s.table}` }, engine === 'postgres' ? 422 : 0, /./],
      [{ name: t('two'), sql: 'SELECT 1; SELECT 2' }, 400, /statement/i],
      [
        { name: t('bad_enum'), sql: `SELECT id FROM ${s.table} WHERE status = :st`, parameters: [{ name: 'st', type: 'enum' }] },
        400,
        /values/,
      ],
      [
        {
          name: t('bad_default'),
          sql: `SELECT id FROM ${s.table} WHERE id = :id`,
          parameters: [{ name: 'id', type: 'integer', default: 'x' }],
        },
        400,
        /default/,
      ],
      [
        {
          name: t('native'),
          sql: engine === 'postgres' ? `SELECT id FROM ${s.table} WHERE id = $1` : `SELECT id FROM ${s.table} WHERE id = ?`,
        },
        400,
        /:name placeholders/,
      ],
    ];
    for (const [body, status, message] of cases) {
      const res = await h.call('POST', '/api/tools', h.adminKey, { ...base, ...body });
      if (status === 0) expect([400, 422], JSON.stringify(body)).toContain(res.status);
      else expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body.error).toMatch(message);
    }
    const names = (await h.call('GET', '/api/tools', h.adminKey)).body.data.tools.map((x: any) => x.name);
    expect(names.filter((n: string) => /undeclared|unused|bad_|syntax|two|native/.test(n))).toEqual([]);
    // A reader cannot define one at all.
    const reader = await h.call('POST', '/api/tools', h.readerKey, { ...base, name: t('by_reader'), sql: 'SELECT 1' });
    expect(reader.status).toBe(403);
  });

  it('checks every typed parameter and constraint, naming the parameter, and runs nothing when one fails', async () => {
    const name = t('search');
    const created = await h.call('POST', '/api/tools', h.adminKey, {
      name,
      description: 'Orders by several typed filters',
      connectionId: s.connection,
      // ':not_a_param' in a string and a comment is text, not a placeholder.
      sql: `SELECT id, ':not_a_param' AS lit FROM ${s.table} /* :nor_this */ WHERE id >= :min_id AND status = :status AND amount >= :amount AND placed_on >= :since AND note LIKE :note ORDER BY id`,
      parameters: [
        { name: 'min_id', type: 'integer', required: true, min: 1, max: 100 },
        { name: 'status', type: 'enum', values: ['open', 'closed'], default: 'open' },
        { name: 'amount', type: 'number', min: 0, default: 0 },
        { name: 'since', type: 'date', default: '2025-01-01', min: '2020-01-01' },
        { name: 'note', type: 'string', maxLength: 10, pattern: '^[a-z%]*$', default: '%' },
      ],
      maxRows: 100,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const okRun = await h.call('POST', `/api/tools/${name}/run`, h.readerKey, {
      params: { min_id: 1, status: 'closed', amount: 35.5, since: '2025-01-01' },
    });
    expect(okRun.status, JSON.stringify(okRun.body)).toBe(200);
    expect(okRun.body.data.rows.map((r: any[]) => [Number(r[0]), r[1]])).toEqual([[4, ':not_a_param']]);
    const defaults = await h.call('POST', `/api/tools/${name}/run`, h.readerKey, { params: { min_id: 2 } });
    expect(defaults.body.data.rows.map((r: any[]) => Number(r[0]))).toEqual([2]);

    const before = (await historyOf(name)).length;
    const bad: [Record<string, unknown>, string][] = [
      [{}, 'params.min_id'],
      [{ min_id: '1' }, 'params.min_id'],
      [{ min_id: 1.5 }, 'params.min_id'],
      [{ min_id: 0 }, 'params.min_id'],
      [{ min_id: 101 }, 'params.min_id'],
      [{ min_id: 1, status: 'pending' }, 'params.status'],
      [{ min_id: 1, amount: -1 }, 'params.amount'],
      [{ min_id: 1, amount: 'lots' }, 'params.amount'],
      [{ min_id: 1, since: '2025-02-30' }, 'params.since'],
      [{ min_id: 1, since: '10/01/2025' }, 'params.since'],
      [{ min_id: 1, since: '2019-12-31' }, 'params.since'],
      [{ min_id: 1, note: 'abcdefghijk' }, 'params.note'],
      [{ min_id: 1, note: "x' OR '1'='1" }, 'params.note'],
      [{ min_id: 1, nope: 1 }, 'params.nope'],
      [{ min_id: 1, 'caller.email': 'admin@acme.test' }, 'params.caller.email'],
    ];
    for (const [params, field] of bad) {
      const res = await h.call('POST', `/api/tools/${name}/run`, h.readerKey, { params });
      expect(res.status, JSON.stringify(params)).toBe(400);
      expect(res.body).toMatchObject({ code: 'invalid_request', details: { field } });
      expect(res.body.error).toContain(field);
    }
    expect((await historyOf(name)).length).toBe(before);
    expect(await s.count()).toBe(4);
  });

  it('binds array parameters (ANY on PostgreSQL, IN expanded elsewhere) and booleans', async () => {
    const name = t('by_ids');
    const sql =
      engine === 'postgres'
        ? `SELECT id FROM ${s.table} WHERE id = ANY(:ids) AND (:big OR amount < 35) ORDER BY id`
        : `SELECT id FROM ${s.table} WHERE id IN (:ids) AND (:big OR amount < 35) ORDER BY id`;
    const created = await h.call('POST', '/api/tools', h.adminKey, {
      name,
      description: 'Orders by id',
      connectionId: s.connection,
      sql,
      parameters: [
        { name: 'ids', type: 'array', items: { type: 'integer', min: 1 }, required: true, min: 1, max: 3 },
        { name: 'big', type: 'boolean', default: false },
      ],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const res = await h.call('POST', `/api/tools/${name}/run`, h.readerKey, { params: { ids: [1, 3, 4] } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.rows.map((r: any[]) => Number(r[0]))).toEqual([1, 3]);
    const all = await h.call('POST', `/api/tools/${name}/run`, h.readerKey, { params: { ids: [1, 3, 4], big: true } });
    expect(all.body.data.rows.map((r: any[]) => Number(r[0]))).toEqual([1, 3, 4]);
    for (const ids of [[], [1, 2, 3, 4], [0], ['1'], '1']) {
      const bad = await h.call('POST', `/api/tools/${name}/run`, h.readerKey, { params: { ids } });
      expect(bad.status, JSON.stringify(ids)).toBe(400);
      expect(bad.body.details.field).toBe('params.ids');
    }
  });

  it('binds injection attempts as values: the table is intact and only the literal match comes back', async () => {
    const name = t('by_note');
    await h.call('POST', '/api/tools', h.adminKey, {
      name,
      description: 'Orders with one note',
      connectionId: s.connection,
      sql: `SELECT id FROM ${s.table} WHERE note = :note`,
      parameters: [{ name: 'note', type: 'string', required: true }],
    });
    for (const [note, ids] of [
      ["' OR 1=1 --", [2]],
      ['1; DROP TABLE x', [3]],
      [`x'; DROP TABLE ${s.table}; --`, []],
      ['" OR ""="', []],
    ] as const) {
      const res = await h.call('POST', `/api/tools/${name}/run`, h.readerKey, { params: { note } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data.rows.map((r: any[]) => Number(r[0]))).toEqual(ids);
    }
    expect(await s.count()).toBe(4);
  });

  it('binds :caller.email from the caller: each caller gets only their own rows, and cannot pass another', async () => {
    const name = t('my_orders');
    const created = await h.call('POST', '/api/tools', h.adminKey, {
      name,
      description: 'My orders',
      connectionId: s.connection,
      sql: `SELECT id, owner FROM ${s.table} WHERE owner = :caller.email ORDER BY id`,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const reader = await h.call('POST', `/api/tools/${name}/run`, h.readerKey, { params: {} });
    expect(reader.body.data.rows.map((r: any[]) => Number(r[0]))).toEqual([2, 3]);
    const admin = await h.call('POST', `/api/tools/${name}/run`, h.adminKey, {});
    expect(admin.body.data.rows.map((r: any[]) => Number(r[0]))).toEqual([1, 4]);
    for (const params of [{ 'caller.email': 'admin@acme.test' }, { caller: { email: 'admin@acme.test' } }]) {
      const res = await h.call('POST', `/api/tools/${name}/run`, h.readerKey, { params });
      expect(res.status).toBe(400);
      expect(res.body.details.field).toMatch(/^params\.caller/);
    }
  });

  it('runs a writing tool for an admin only: a read-only caller is refused by the guard and nothing changes', async () => {
    const name = t('set_note');
    const created = await h.call('POST', '/api/tools', h.adminKey, {
      name,
      description: 'Change a note',
      connectionId: s.connection,
      sql: `UPDATE ${s.table} SET note = :note WHERE id = :id`,
      parameters: [
        { name: 'note', type: 'string', required: true },
        { name: 'id', type: 'integer', required: true },
      ],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const refused = await h.call('POST', `/api/tools/${name}/run`, h.readerKey, { params: { note: 'hacked', id: 1 } });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('insufficient_permissions');
    const readOnlyKey = (
      await createApiKey(h.svc.db, { workspace: 'default', email: 'admin@acme.test', name: `ro-${engine}`, scope: { readOnly: true } })
    ).secret;
    expect((await h.call('POST', `/api/tools/${name}/run`, readOnlyKey, { params: { note: 'hacked', id: 1 } })).status).toBe(403);
    const note = t('by_note');
    const check = await h.call('POST', `/api/tools/${note}/run`, h.adminKey, { params: { note: 'hacked' } });
    expect(check.body.data.rowCount).toBe(0);
    const ok = await h.call('POST', `/api/tools/${name}/run`, h.adminKey, { params: { note: 'first', id: 1 } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.data.affectedRows).toBe(1);
    const entries = await historyOf(name);
    expect(entries.map((e) => e.status)).toEqual(['succeeded', 'rejected', 'rejected']);
  });
});

describe('curated tools and key scopes', () => {
  it('are described in OpenAPI', async () => {
    const res = await h.call('GET', '/api/openapi.json', null);
    const paths = Object.keys(res.body.paths);
    expect(paths).toEqual(expect.arrayContaining(['/api/tools', '/api/tools/{name}', '/api/tools/{name}/run']));
  });

  it('a key limited to some tools lists and runs only those; a tools-only key runs tools but no raw SQL', async () => {
    const lite = path.join(workspaceSqliteDir(h, 'default'), 'scope.db');
    const db = new Database(lite);
    db.exec('CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY); INSERT OR IGNORE INTO t VALUES (1), (2)');
    db.close();
    const conn = await h.call('POST', '/api/connections', h.adminKey, { name: 'scope_lite', url: 'sqlite:scope.db' });
    for (const name of ['scope_a', 'scope_b']) {
      const res = await h.call('POST', '/api/tools', h.adminKey, {
        name,
        description: name,
        connectionId: conn.body.data.connection.id,
        sql: 'SELECT count(*) AS n FROM t',
      });
      expect(res.status).toBe(201);
    }
    const onlyA = (
      await createApiKey(h.svc.db, { workspace: 'default', email: 'reader@acme.test', name: 'only-a', scope: { tools: ['scope_a'] } })
    ).secret;
    const names = (await h.call('GET', '/api/tools', onlyA)).body.data.tools.map((x: any) => x.name);
    expect(names).toContain('scope_a');
    expect(names).not.toContain('scope_b');
    expect((await h.call('POST', '/api/tools/scope_a/run', onlyA, {})).status).toBe(200);
    const refused = await h.call('POST', '/api/tools/scope_b/run', onlyA, {});
    expect(refused.status).toBe(403);
    expect(refused.body.details.reason).toMatch(/scope_b/);

    const toolsOnly = (
      await createApiKey(h.svc.db, { workspace: 'default', email: 'admin@acme.test', name: 'tools-only', scope: { toolsOnly: true } })
    ).secret;
    expect((await h.call('POST', '/api/tools/scope_b/run', toolsOnly, {})).status).toBe(200);
    expect((await h.call('POST', '/api/query', toolsOnly, { connectionId: 'scope_lite', sql: 'SELECT 1' })).status).toBe(403);
    // Defining a tool is writing SQL: not for a tools-only key, even an admin's.
    const define = await h.call('POST', '/api/tools', toolsOnly, {
      name: 'scope_c',
      description: 'c',
      connectionId: 'scope_lite',
      sql: 'SELECT 1',
    });
    expect(define.status).toBe(403);
  });

  it('a tool on a connection the reader is not granted is absent from the list and 404 to run', async () => {
    const lite = path.join(workspaceSqliteDir(h, 'default'), 'granted.db');
    new Database(lite).close();
    const conn = await h.call('POST', '/api/connections', h.adminKey, { name: 'granted_lite', url: 'sqlite:granted.db' });
    const id = conn.body.data.connection.id;
    await h.call('POST', '/api/tools', h.adminKey, { name: 'hidden_tool', description: 'h', connectionId: id, sql: 'SELECT 1 AS one' });
    await h.svc.db.updateTable('connections').set({ grants_everyone: 0 }).where('id', '=', id).execute();
    const names = (await h.call('GET', '/api/tools', h.readerKey)).body.data.tools.map((x: any) => x.name);
    expect(names).not.toContain('hidden_tool');
    const res = await h.call('POST', '/api/tools/hidden_tool/run', h.readerKey, {});
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('tool_not_found');
    expect((await h.call('POST', '/api/tools/hidden_tool/run', h.adminKey, {})).status).toBe(200);
  });
});
