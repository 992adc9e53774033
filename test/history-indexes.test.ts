// GET history stays an index walk however long the history grows. On a
// PostgreSQL store with 50,000 entries, the statement listHistory runs for the first page,
// every filter, a time window, a reader's own entries and a keyset page is planned (EXPLAIN
// (FORMAT JSON), the planner's free choice) without a sequential scan of query_history.
// bench/history-scale.ts times the same pages on 10 million entries.
import pg from 'pg';
import { Kysely, PostgresDialect, type CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliActor } from '../src/audit/audit.ts';
import { listHistory, type HistoryQuery } from '../src/history/history.ts';
import type { Database } from '../src/store/schema.ts';
import { openStore, type Store } from '../src/store/store.ts';
import { authenticateKey, createApiKey, type Principal } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { createWorkspace, getWorkspace } from '../src/workspaces/workspaces.ts';
import { freshPostgresDatabase, tempDir } from './support/databases.ts';

const ROWS = 50_000;
let fresh: { url: string; drop(): Promise<void> };
let store: Store;
let client: pg.Client;
let pool: pg.Pool;
let captured: CompiledQuery[] = [];
let capturing: Kysely<Database>;
let admin: Principal;
let reader: Principal;

beforeAll(async () => {
  fresh = await freshPostgresDatabase();
  store = await openStore({ dataDir: tempDir(), storeUrl: fresh.url });
  await createWorkspace(store.db, { slug: 'h', plan: 'enterprise' });
  await createUser(store.db, { workspace: 'h', email: 'admin@h.test', role: 'admin' }, cliActor());
  await createUser(store.db, { workspace: 'h', email: 'reader@h.test', role: 'read_only' }, cliActor());
  admin = await authenticateKey(store.db, (await createApiKey(store.db, { workspace: 'h', email: 'admin@h.test', name: 'a' })).secret);
  reader = await authenticateKey(store.db, (await createApiKey(store.db, { workspace: 'h', email: 'reader@h.test', name: 'r' })).secret);
  const ws = await getWorkspace(store.db, 'h');
  client = new pg.Client({ connectionString: fresh.url });
  await client.connect();
  // Ids sort by g as real ids sort by time; created_at follows them.
  await client.query(
    `insert into query_history (id, workspace_id, query_id, connection_id, connection_name, sql, statement_type, status, row_count, affected_rows,
       duration_ms, error, source, api_key_id, api_key_name, user_id, user_email, created_at)
     select 'h_' || lpad(g::text, 26, '0'), $1, 'q_' || g,
       case when g % 1000 = 7 then 'conn_legacy' else 'conn_main' end,
       case when g % 1000 = 7 then 'legacy' else 'main' end,
       case when g % 5003 = 3 then 'SELECT * FROM rare_audit_trail' else 'SELECT * FROM orders WHERE id = ' || g end,
       'SELECT',
       case when g % 997 = 2 then 'rejected' when g % 50 = 1 then 'failed' else 'succeeded' end,
       1, null, 1, null,
       case when g % 200 = 3 then 'ui' when g % 50 = 4 then 'ai' else 'api' end,
       null, null,
       case when g % 10 = 0 then $2 else $3 end,
       'x@h.test',
       to_char(timestamp '2026-01-01' + g * interval '1 minute', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
     from generate_series(1, ${ROWS}) g`,
    [ws.id, reader.user.id, admin.user.id],
  );
  await client.query('analyze query_history');
  // The same statements listHistory sends, captured instead of guessed.
  pool = new pg.Pool({ connectionString: fresh.url, max: 1 });
  capturing = new Kysely<Database>({
    dialect: new PostgresDialect({ pool }),
    log: (event) => {
      if (event.level === 'query') captured.push(event.query);
    },
  });
}, 120_000);

afterAll(async () => {
  await capturing?.destroy();
  await client?.end();
  await store?.close();
  await fresh?.drop();
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function nodes(n: PlanNode): PlanNode[] {
  return [n, ...(n.Plans ?? []).flatMap(nodes)];
}

async function planOf(principal: Principal, query: Partial<HistoryQuery>): Promise<PlanNode[]> {
  captured = [];
  await listHistory(capturing, principal, { limit: 50, ...query } as HistoryQuery);
  expect(captured).toHaveLength(1);
  const { rows } = await client.query(`explain (format json) ${captured[0].sql}`, captured[0].parameters as unknown[]);
  return nodes((rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0].Plan);
}

const cursor = (g: number) => Buffer.from(JSON.stringify({ id: `h_${String(g).padStart(26, '0')}` })).toString('base64url');

describe('GET history on 50,000 entries (PostgreSQL store)', () => {
  const cases: Array<[string, 'admin' | 'reader', Partial<HistoryQuery>]> = [
    ['first page', 'admin', {}],
    ['connectionId by name, rare', 'admin', { connectionId: 'legacy' }],
    ['connectionId by id, rare', 'admin', { connectionId: 'conn_legacy' }],
    ['connectionId by name, common', 'admin', { connectionId: 'main' }],
    ['status, rare', 'admin', { status: 'rejected' }],
    ['status, 2%', 'admin', { status: 'failed' }],
    ['source, rare', 'admin', { source: 'ui' }],
    ['search, rare', 'admin', { search: 'rare_audit_trail' }],
    ['search, common', 'admin', { search: 'orders' }],
    ['since/until window', 'admin', { since: '2026-01-10T00:00:00Z', until: '2026-01-11T00:00:00Z' }],
    ["a reader's own entries", 'reader', {}],
    ['keyset page deep in the history', 'admin', { cursor: cursor(5_000) }],
    ['keyset page with a filter', 'admin', { cursor: cursor(25_000), status: 'failed' }],
  ];
  for (const [label, who, query] of cases) {
    it(`${label}: an index, no Seq Scan on query_history`, async () => {
      const plan = await planOf(who === 'admin' ? admin : reader, query);
      const summary = plan.map(
        (n) =>
          `${n['Node Type']}${n['Relation Name'] ? ` on ${n['Relation Name']}` : ''}${n['Index Name'] ? ` using ${n['Index Name']}` : ''}`,
      );
      expect(
        summary.filter((s) => s.startsWith('Seq Scan on query_history')),
        summary.join(' / '),
      ).toEqual([]);
      expect(
        plan.some((n) => n['Index Name']?.startsWith('query_history')),
        summary.join(' / '),
      ).toBe(true);
    });
  }
});

describe('search on the PostgreSQL store', () => {
  it('finds a rare text through the trigram index, with `_` in it', async () => {
    const plan = await planOf(admin, { search: 'rare_audit_trail' });
    expect(plan.some((n) => n['Index Name'] === 'query_history_sql_trgm')).toBe(true);
  });

  it('is an exact, case-insensitive substring test: `%`, `_` and `\\` are plain characters', async () => {
    const texts = [
      'SELECT 1 -- 100%_done',
      'SELECT 1 -- 100x_done',
      'SELECT 1 -- 100%xdone',
      'SELECT 1 -- path a\\b',
      'SELECT 1 -- path ab',
      'SELECT 1 -- Under_Score',
    ];
    await client.query(
      `insert into query_history (id, workspace_id, query_id, connection_id, connection_name, sql, statement_type, status, duration_ms, source, user_id, user_email, created_at)
       select 'h_' || lpad((90000 + i)::text, 26, '0'), $1, 'q', 'conn_main', 'main', t, 'SELECT', 'succeeded', 1, 'api', $2, 'x@h.test', '2026-06-01T00:00:00.000Z'
       from unnest($3::text[]) with ordinality as u(t, i)`,
      [admin.workspace.id, admin.user.id, texts],
    );
    for (const [search, expected] of [
      ['100%_d', ['SELECT 1 -- 100%_done']],
      ['%', ['SELECT 1 -- 100%_done', 'SELECT 1 -- 100%xdone']],
      ['0_d', []],
      ['x_d', ['SELECT 1 -- 100x_done']],
      ['a\\b', ['SELECT 1 -- path a\\b']],
      ['UNDER_score', ['SELECT 1 -- Under_Score']],
    ] as const) {
      const page = await listHistory(store.db, admin, { limit: 50, search } as HistoryQuery);
      expect(page.entries.map((e) => e.sql).sort(), search).toEqual([...expected].sort());
    }
  });
});
