// bench/history-scale: GET history on a store holding millions of entries.
// For each store kind (SQLite, PostgreSQL): a fresh store with the app's migrations, --rows
// entries generated in the store itself (PostgreSQL: INSERT … SELECT from generate_series;
// SQLite: INSERT … SELECT from a recursive CTE, 1M rows a transaction), with the secondary
// indexes dropped during the load and rebuilt after (their definitions read back from the
// store, so the bench measures exactly the migrations' indexes). Then:
//   - SQLite: the search index (migration 0009) built over them by the indexer's own batches,
//     as a store upgraded with that history gets it; then its cost per new entry;
//   - listHistory (the function GET history runs) for the first page, each filter, a time
//     window, a reader's own entries and a deep keyset page: median of --runs runs;
//   - the first page and one filter through HTTP (an in-process server, a real key);
//   - searches through HTTP, the server's own path (on SQLite, a worker thread), and in-thread
//     (listHistory on the event loop, the path before it), index on and off: latency beside the event loop's longest hold while they run and /healthz polled;
//   - history retention (pruneHistory, batches by id range) over the oldest ~10%, while one
//     client writes history entries one after another: their latency p50/p99 during the run,
//     against the same loop without retention.
// Entries span 100 days ending now: connections main 80%, reporting ~20%, legacy 0.1%; status
// failed 2%, rejected 0.1%, timed_out 0.01%; source mcp 10%, ai 2%, ui 0.5%; a tenth are the
// reader's; 'orders' is in a third of the statements, 'rare_audit_trail' in 1 in 10,007.
// Usage: node --import tsx bench/history-scale.ts [--rows 10000000] [--runs 7] [--stores sqlite,postgres]
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import SqliteDatabase from 'better-sqlite3';
import { sql } from 'kysely';
import pg from 'pg';
import { cliActor } from '../src/audit/audit.ts';
import { loadConfig } from '../src/config.ts';
import { listHistory, postgresSearchConditions, pruneHistory, type HistoryQuery } from '../src/history/history.ts';
import { indexHistoryBatch, startSearchIndexer, type SearchIndexer } from '../src/history/search-index.ts';
import { buildApp } from '../src/server/app.ts';
import { frontDoors } from '../src/server/front-doors.ts';
import { createLogger } from '../src/logger.ts';
import { closeServices, createServices, type Services } from '../src/services.ts';
import { authenticateKey, createApiKey, type Principal } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { createWorkspace, getWorkspace } from '../src/workspaces/workspaces.ts';
import { freshPostgresDatabase, tempDir } from '../test/support/databases.ts';
import { option } from './support/args.ts';
import { percentile } from './support/load.ts';
import { watchLoop } from './support/loop-hold.ts';

const ROWS = Number(option('rows', '10000000'));
const RUNS = Number(option('runs', '7'));
const STORES = option('stores', 'sqlite,postgres').split(',');
const CHUNK = 1_000_000;
const DAY = 86_400_000;
const SPAN_DAYS = 100;
// 89 of 100 days: the oldest 11%, just over the SQLite search index's first partition (2^20
// entries of 10M), so the run drops one whole.
const RETENTION_DAYS = 89;
const B32 = '0123456789abcdefghjkmnpqrstvwxyz';

type Kind = 'sqlite' | 'postgres';

interface Setup {
  svc: Services;
  admin: Principal;
  reader: Principal;
  adminKey: string;
  wsId: string;
  t0: number;
  step: number;
}

/** The generated rows' SELECT list, in one dialect: `g` is the row number (1..ROWS). */
function selectList(kind: Kind, s: { wsId: string; adminId: string; readerId: string; keyId: string; t0: number; step: number }): string {
  const t = `(${s.t0} + g * ${s.step})`;
  const digit = (k: number) =>
    kind === 'postgres'
      ? `substr('${B32}', (((${t}) >> ${5 * k}) & 31)::int + 1, 1)`
      : `substr('${B32}', (((${t}) >> ${5 * k}) & 31) + 1, 1)`;
  const time = Array.from({ length: 10 }, (_, i) => digit(9 - i)).join(' || ');
  const pad16 = kind === 'postgres' ? `lpad(g::text, 16, '0')` : `substr('0000000000000000' || g, -16, 16)`;
  const created =
    kind === 'postgres'
      ? `to_char(to_timestamp(${t} / 1000.0) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
      : `strftime('%Y-%m-%dT%H:%M:%fZ', ${t} / 1000.0, 'unixepoch')`;
  return `
    'h_' || ${time} || ${pad16},
    '${s.wsId}',
    'q_' || g,
    case when g % 1000 = 7 then 'conn_legacy' when g % 5 = 0 then 'conn_reporting' else 'conn_main' end,
    case when g % 1000 = 7 then 'legacy' when g % 5 = 0 then 'reporting' else 'main' end,
    case when g % 10007 = 3 then 'SELECT * FROM rare_audit_trail WHERE id = ' || g
         when g % 3 = 0 then 'SELECT * FROM orders WHERE id = ' || g
         else 'SELECT count(*) FROM customers WHERE region = ' || (g % 50) end,
    'SELECT',
    case when g % 10009 = 5 then 'timed_out' when g % 997 = 2 then 'rejected' when g % 50 = 1 then 'failed' else 'succeeded' end,
    g % 100,
    null,
    g % 500,
    case when g % 50 = 1 then 'relation does not exist' else null end,
    case when g % 200 = 3 then 'ui' when g % 50 = 4 then 'ai' when g % 10 = 5 then 'mcp' else 'api' end,
    '${s.keyId}',
    'bench',
    case when g % 10 = 0 then '${s.readerId}' else '${s.adminId}' end,
    case when g % 10 = 0 then 'reader@bench.test' else 'admin@bench.test' end,
    ${created}`;
}

const COLUMNS =
  'id, workspace_id, query_id, connection_id, connection_name, sql, statement_type, status, row_count, affected_rows, duration_ms, error, source, api_key_id, api_key_name, user_id, user_email, created_at';

async function setup(kind: Kind): Promise<{ setup: Setup; cleanup(): Promise<void>; storeUrl: string | null; dataDir: string }> {
  const dataDir = tempDir('dbq-history-bench-');
  const fresh = kind === 'postgres' ? await freshPostgresDatabase() : null;
  const env: Record<string, string> = { DBQ_DATA_DIR: dataDir, DBQ_LOG_LEVEL: 'warn', DBQ_SECRET_KEY: 'ab'.repeat(32) };
  if (fresh) env.DBQ_STORE_URL = fresh.url;
  const svc = await createServices(loadConfig(env), { logger: createLogger('warn') });
  await createWorkspace(svc.db, { slug: 'bench', plan: 'enterprise' });
  await createUser(svc.db, { workspace: 'bench', email: 'admin@bench.test', role: 'admin' }, cliActor());
  await createUser(svc.db, { workspace: 'bench', email: 'reader@bench.test', role: 'read_only' }, cliActor());
  const adminKey = await createApiKey(svc.db, { workspace: 'bench', email: 'admin@bench.test', name: 'bench' });
  const readerKey = await createApiKey(svc.db, { workspace: 'bench', email: 'reader@bench.test', name: 'bench' });
  const admin = await authenticateKey(svc.db, adminKey.secret);
  const reader = await authenticateKey(svc.db, readerKey.secret);
  const ws = await getWorkspace(svc.db, 'bench');
  const t0 = Date.now() - SPAN_DAYS * DAY;
  const step = Math.max(1, Math.floor((SPAN_DAYS * DAY - 60_000) / ROWS));
  return {
    setup: { svc, admin, reader, adminKey: adminKey.secret, wsId: ws.id, t0, step },
    storeUrl: fresh?.url ?? null,
    dataDir,
    async cleanup() {
      await closeServices(svc).catch(() => {});
      await fresh?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function generate(
  kind: Kind,
  s: Setup,
  storeUrl: string | null,
  dataDir: string,
): Promise<{ loadSeconds: number; indexSeconds: number }> {
  const ids = { wsId: s.wsId, adminId: s.admin.user.id, readerId: s.reader.user.id, keyId: s.admin.apiKey!.id, t0: s.t0, step: s.step };
  const select = selectList(kind, ids);
  if (kind === 'postgres') {
    const c = new pg.Client({ connectionString: storeUrl! });
    await c.connect();
    try {
      const { rows: defs } = await c.query<{ name: string; def: string }>(
        "select indexname as name, indexdef as def from pg_indexes where tablename = 'query_history' and indexname <> 'query_history_pkey'",
      );
      for (const d of defs) await c.query(`drop index ${d.name}`);
      // Bulk load only: no per-row foreign-key check (the workspace exists).
      await c.query("set session_replication_role = 'replica'");
      const t = performance.now();
      for (let from = 1; from <= ROWS; from += CHUNK) {
        const to = Math.min(ROWS, from + CHUNK - 1);
        await c.query(`insert into query_history (${COLUMNS}) select ${select} from generate_series(${from}::bigint, ${to}::bigint) g`);
        process.stderr.write(`  postgres: ${to} rows\r`);
      }
      const loadSeconds = (performance.now() - t) / 1000;
      const ti = performance.now();
      await c.query("set maintenance_work_mem = '512MB'");
      for (const d of defs) await c.query(d.def);
      // VACUUM as well: a store that grew to 10M entries has been vacuumed by autovacuum
      // (visibility map, hint bits); without it autovacuum starts on the fresh table while
      // the cases run and they measure it.
      await c.query('vacuum (analyze) query_history');
      return { loadSeconds, indexSeconds: (performance.now() - ti) / 1000 };
    } finally {
      await c.end();
    }
  }
  const handle = new SqliteDatabase(path.join(dataDir, 'dbq.sqlite'));
  try {
    handle.pragma('busy_timeout = 5000');
    handle.pragma('foreign_keys = OFF');
    handle.pragma('cache_size = -262144');
    const defs = handle
      .prepare("select name, sql from sqlite_master where type = 'index' and tbl_name = 'query_history' and sql is not null")
      .all() as Array<{ name: string; sql: string }>;
    for (const d of defs) handle.exec(`drop index ${d.name}`);
    const t = performance.now();
    for (let from = 1; from <= ROWS; from += CHUNK) {
      const to = Math.min(ROWS, from + CHUNK - 1);
      handle.exec(
        `begin; insert into query_history (${COLUMNS}) with recursive s(g) as (select ${from} union all select g + 1 from s where g < ${to}) select ${select} from s; commit;`,
      );
      process.stderr.write(`  sqlite: ${to} rows\r`);
    }
    const loadSeconds = (performance.now() - t) / 1000;
    const ti = performance.now();
    for (const d of defs) handle.exec(d.sql);
    handle.exec('analyze');
    return { loadSeconds, indexSeconds: (performance.now() - ti) / 1000 };
  } finally {
    handle.close();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const cursorFor = (id: string) => Buffer.from(JSON.stringify({ id })).toString('base64url');

/** An entry id at `fraction` of the generated range (0 oldest, 1 newest). */
function idAt(s: Setup, fraction: number): string {
  const g = Math.max(1, Math.floor(ROWS * fraction));
  const t = s.t0 + g * s.step;
  let time = '';
  for (let k = 9; k >= 0; k--) time += B32[Math.floor(t / 2 ** (5 * k)) % 32];
  return `h_${time}${String(g).padStart(16, '0')}`;
}

async function timeCases(s: Setup): Promise<Array<{ label: string; ms: number; entries: number }>> {
  const windowFrom = new Date(s.t0 + 50 * DAY).toISOString();
  const windowTo = new Date(s.t0 + 51 * DAY).toISOString();
  const cases: Array<[string, Principal, Partial<HistoryQuery>]> = [
    ['first page', s.admin, {}],
    ['connectionId=main (80%)', s.admin, { connectionId: 'main' }],
    ['connectionId=legacy (0.1%)', s.admin, { connectionId: 'legacy' }],
    ['connectionId=conn_legacy (by id)', s.admin, { connectionId: 'conn_legacy' }],
    ['status=failed (2%)', s.admin, { status: 'failed' }],
    ['status=timed_out (0.01%)', s.admin, { status: 'timed_out' }],
    ['source=ai (2%)', s.admin, { source: 'ai' }],
    ['source=ui (0.5%)', s.admin, { source: 'ui' }],
    ['search=orders (33%)', s.admin, { search: 'orders' }],
    ['search=rare_audit_trail (0.01%)', s.admin, { search: 'rare_audit_trail' }],
    // Rare as a whole, made of trigrams most statements hold ('id ', ' = ', '999'…).
    ["search='id = 99999' (rare, common trigrams)", s.admin, { search: 'id = 99999' }],
    ['search=zz_nowhere (no entry)', s.admin, { search: 'zz_nowhere' }],
    ['since/until, one day', s.admin, { since: windowFrom, until: windowTo }],
    ["reader's own, first page", s.reader, {}],
    ['deep keyset page (cursor at 10%)', s.admin, { cursor: cursorFor(idAt(s, 0.1)) }],
    ['deep keyset page, status=failed', s.admin, { cursor: cursorFor(idAt(s, 0.1)), status: 'failed' }],
  ];
  const out: Array<{ label: string; ms: number; entries: number }> = [];
  for (const [label, principal, q] of cases) {
    const query = { limit: 50, ...q } as HistoryQuery;
    let entries = 0;
    const times: number[] = [];
    for (let i = 0; i <= RUNS; i++) {
      const t = performance.now();
      const page = await listHistory(s.svc.db, principal, query);
      const ms = performance.now() - t;
      entries = page.entries.length;
      if (i > 0) times.push(ms); // the first run warms the cache
    }
    out.push({ label, ms: median(times), entries });
  }
  return out;
}

async function timeHttp(s: Setup): Promise<Array<{ label: string; ms: number }>> {
  const app = await buildApp(s.svc, frontDoors());
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const out: Array<{ label: string; ms: number }> = [];
    for (const [label, qs] of [
      ['HTTP GET history, first page', ''],
      ['HTTP GET history, status=failed', '&status=failed'],
      ['HTTP GET history, search=rare_audit_trail', '&search=rare_audit_trail'],
    ] as const) {
      const times: number[] = [];
      for (let i = 0; i <= RUNS; i++) {
        const t = performance.now();
        const res = await fetch(`${base}/w/bench/api/query/history?limit=50${qs}`, { headers: { authorization: `Bearer ${s.adminKey}` } });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`${label}: ${res.status}`);
        if (i > 0) times.push(performance.now() - t);
      }
      out.push({ label, ms: median(times) });
    }
    return out;
  } finally {
    await app.close();
  }
}

interface HoldRow {
  search: string;
  index: string;
  path: string;
  runs: number;
  ms: number;
  entries: number;
  /** The page ended at the walk's budget, with a cursor to go on (history-walk.ts). */
  partial: boolean;
  wallMs: number;
  heldMs: number | null;
  healthzMs: number;
}

/** `runs` searches one after another while the event loop is watched and /healthz polled. */
async function measureHold(
  base: string,
  runs: number,
  search: () => Promise<{ entries: number; partial: boolean }>,
): Promise<Omit<HoldRow, 'search' | 'index' | 'path'>> {
  let done = false;
  let healthzMs = 0;
  const poll = (async () => {
    while (!done) {
      const t = performance.now();
      await (await fetch(`${base}/healthz`)).arrayBuffer();
      healthzMs = Math.max(healthzMs, performance.now() - t);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  const stop = watchLoop();
  const times: number[] = [];
  let last = { entries: 0, partial: false };
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    last = await search();
    times.push(performance.now() - t);
    // A tick of the watch after each search, so that a search that held the loop is counted.
    await new Promise((r) => setTimeout(r, 5));
  }
  const hold = stop();
  done = true;
  await poll;
  return { runs, ms: median(times), ...last, ...hold, healthzMs };
}

/** The SQLite search index as if off (or far behind): every entry past its watermark. */
async function indexAsIfOff(s: Setup): Promise<() => Promise<void>> {
  const { rows } = await sql<{
    indexed_rowid: number;
    indexed_id: string | null;
  }>`select indexed_rowid, indexed_id from query_history_search_state where id = 1`.execute(s.svc.db);
  await sql`update query_history_search_state set indexed_rowid = 0, indexed_id = null where id = 1`.execute(s.svc.db);
  return async () => {
    await sql`update query_history_search_state set indexed_rowid = ${rows[0].indexed_rowid}, indexed_id = ${rows[0].indexed_id} where id = 1`.execute(
      s.svc.db,
    );
  };
}

/** Searches over HTTP (the server's path) and in-thread (the path before searches moved to worker threads),
 * with the longest event-loop hold while each runs. In-thread with the index off walks the
 * whole history on the loop: one run each. */
async function searchHolds(s: Setup): Promise<HoldRow[]> {
  const app = await buildApp(s.svc, frontDoors());
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  const out: HoldRow[] = [];
  try {
    await s.svc.historyReader?.warm();
    const modes = s.svc.store.kind === 'sqlite' ? ['on', 'off'] : ['pg_trgm'];
    for (const index of modes) {
      const restore = index === 'off' ? await indexAsIfOff(s) : null;
      try {
        for (const search of ['rare_audit_trail', 'id = 99999', 'zz_nowhere']) {
          const http = await measureHold(base, RUNS, async () => {
            const res = await fetch(`${base}/w/bench/api/query/history?limit=50&search=${encodeURIComponent(search)}`, {
              headers: { authorization: `Bearer ${s.adminKey}` },
            });
            const body = (await res.json()) as { data: { entries: unknown[]; nextCursor: string | null } };
            if (res.status !== 200) throw new Error(`search ${search}: ${res.status}`);
            return { entries: body.data.entries.length, partial: body.data.entries.length < 50 && body.data.nextCursor !== null };
          });
          out.push({ search, index, path: s.svc.historyReader ? 'HTTP, worker thread' : 'HTTP', ...http });
          if (!s.svc.historyReader) continue;
          const inThread = await measureHold(base, index === 'off' ? 1 : RUNS, async () => {
            const page = await listHistory(s.svc.db, s.admin, { limit: 50, search } as HistoryQuery);
            return { entries: page.entries.length, partial: false };
          });
          out.push({ search, index, path: 'in-thread (before)', ...inThread });
        }
      } finally {
        await restore?.();
      }
    }
  } finally {
    await app.close();
  }
  return out;
}

/** One writer appending history entries one after another until `until` resolves. */
async function insertLatencies(s: Setup, until: Promise<unknown>): Promise<number[]> {
  let done = false;
  void until.finally(() => (done = true));
  const times: number[] = [];
  while (!done) {
    const t = performance.now();
    await s.svc.history.write({
      principal: s.admin,
      queryId: 'q_bench',
      connection: { id: 'conn_main', name: 'main' },
      sql: 'SELECT 1',
      statementType: 'SELECT',
      status: 'succeeded',
      rowCount: 1,
      affectedRows: null,
      durationMs: 1,
      error: null,
      source: 'api',
    });
    times.push(performance.now() - t);
  }
  return times.sort((a, b) => a - b);
}

async function retention(
  s: Setup,
): Promise<{ baseline: number[]; during: number[]; deleted: number; seconds: number; indexer: SearchIndexer['stats'] | null }> {
  // As in `dbq serve`: on SQLite the search indexer runs beside the writes and retention (it
  // indexes the writer's entries and drops the partitions retention empties).
  const indexer = s.svc.store.kind === 'sqlite' ? startSearchIndexer(s.svc.db) : null;
  const baseline = await insertLatencies(s, new Promise((r) => setTimeout(r, 3000)));
  const t = performance.now();
  let deleted = 0;
  const prune = pruneHistory(s.svc.db, RETENTION_DAYS).then((n) => (deleted = n));
  const during = await insertLatencies(s, prune);
  await prune;
  await indexer?.catchUp();
  await indexer?.stop();
  if (indexer) process.stderr.write(`search indexer beside the writer and retention: ${JSON.stringify(indexer.stats)}\n`);
  return { baseline, during, deleted, seconds: (performance.now() - t) / 1000, indexer: indexer?.stats ?? null };
}

/** The SQLite search index's cost per entry as the server pays it: entries written by
 * svc.history.write, then indexed in the background indexer's batches (indexHistoryBatch). */
async function searchIndexCost(s: Setup): Promise<{ entries: number; usPerEntry: number; batch: number }> {
  const entries = 20_000;
  const batch = 200;
  const writes: Promise<unknown>[] = [];
  for (let i = 0; i < entries; i++) {
    writes.push(
      s.svc.history.write({
        principal: s.admin,
        queryId: `q_idx${i}`,
        connection: { id: 'conn_main', name: 'main' },
        sql: `SELECT * FROM orders WHERE customer_id = ${i} AND status = 'open'`,
        statementType: 'SELECT',
        status: 'succeeded',
        rowCount: 1,
        affectedRows: null,
        durationMs: 1,
        error: null,
        source: 'api',
      }),
    );
    if (writes.length === 200) await Promise.all(writes.splice(0));
  }
  await Promise.all(writes);
  const t = performance.now();
  let n = 0;
  for (let k; (k = await indexHistoryBatch(s.svc.db, batch)) > 0;) n += k;
  return { entries: n, usPerEntry: ((performance.now() - t) * 1000) / Math.max(1, n), batch };
}

/** EXPLAIN (ANALYZE, BUFFERS) of the statement a rare-substring search sends. */
async function explainRare(s: Setup, storeUrl: string): Promise<string[]> {
  const compiled = s.svc.db
    .selectFrom('query_history')
    .selectAll()
    .where('workspace_id', '=', s.wsId)
    .where((eb) => eb.and(postgresSearchConditions('rare_audit_trail')))
    .orderBy('id', 'desc')
    .limit(51)
    .compile();
  const c = new pg.Client({ connectionString: storeUrl });
  await c.connect();
  try {
    const { rows } = await c.query(`explain (analyze, buffers) ${compiled.sql}`, [...compiled.parameters]);
    return rows.map((r: Record<string, string>) => `    ${r['QUERY PLAN']}`);
  } finally {
    await c.end();
  }
}

async function main(): Promise<void> {
  const lines: string[] = [`history-scale: ${ROWS.toLocaleString('en')} entries, median of ${RUNS} runs, limit 50`];
  for (const kind of STORES as Kind[]) {
    process.stderr.write(`${kind}: generating ${ROWS} entries\n`);
    const env = await setup(kind);
    try {
      const gen = await generate(kind, env.setup, env.storeUrl, env.dataDir);
      // SQLite: the search index built the way a store upgraded with 10M entries gets it, by
      // the background indexer's own batches (bulk-building one partition per transaction left
      // a huge level-0 segment, whose merge with the next small ones stalled a write 1.5 s).
      let searchIndex = '';
      if (kind === 'sqlite') {
        const t = performance.now();
        let n = 0;
        let longest = 0;
        for (let k = 1; k > 0;) {
          const b = performance.now();
          k = await indexHistoryBatch(env.setup.svc.db, 2000);
          longest = Math.max(longest, performance.now() - b);
          n += k;
          if (n % 1_000_000 < 2000) process.stderr.write(`  sqlite: ${n} entries indexed for search\r`);
        }
        const secs = (performance.now() - t) / 1000;
        searchIndex = `, search index ${secs.toFixed(0)} s (${((secs * 1e6) / n).toFixed(1)} µs per entry in batches of 2,000, longest batch ${longest.toFixed(0)} ms)`;
      }
      process.stderr.write(`\n${kind}: loaded in ${gen.loadSeconds.toFixed(0)} s, indexes in ${gen.indexSeconds.toFixed(0)} s\n`);
      const cases = await timeCases(env.setup);
      const overHttp = await timeHttp(env.setup);
      const holds = await searchHolds(env.setup);
      const plan = kind === 'postgres' ? await explainRare(env.setup, env.storeUrl!) : [];
      const indexCost = kind === 'sqlite' ? await searchIndexCost(env.setup) : null;
      const r = await retention(env.setup);
      const section = [
        '',
        `${kind} store: load ${gen.loadSeconds.toFixed(0)} s, index build ${gen.indexSeconds.toFixed(0)} s${searchIndex}`,
        '',
        '| case | ms (median) | entries | < 20 ms |',
        '|---|---:|---:|:-:|',
        ...cases.map((c) => `| ${c.label} | ${c.ms.toFixed(2)} | ${c.entries} | ${c.ms < 20 ? 'yes' : '**no**'} |`),
        ...overHttp.map((c) => `| ${c.label} | ${c.ms.toFixed(2)} | 50 | ${c.ms < 20 ? 'yes' : '**no**'} |`),
        '',
        'Searches and the event loop: latency, and the longest the loop went without turning while they ran, beside /healthz polled every 5 ms.',
        '"held": the gap less the main thread\'s waits for a core (Linux schedstat); "wall" includes them (other load on shared cores).',
        '',
        '| search | index | path | runs | ms (median) | entries | loop held max ms | loop wall max ms | /healthz max ms |',
        '|---|---|---|---:|---:|---:|---:|---:|---:|',
        ...holds.map(
          (h) =>
            `| ${h.search} | ${h.index} | ${h.path} | ${h.runs} | ${h.ms.toFixed(1)} | ${h.entries}${h.partial ? ' (budget, cursor)' : ''} | ${h.heldMs?.toFixed(1) ?? '-'} | ${h.wallMs.toFixed(1)} | ${h.healthzMs.toFixed(1)} |`,
        ),
        '',
        ...(indexCost
          ? [
              `Search index (SQLite): ${indexCost.entries.toLocaleString('en')} new entries indexed in batches of ${indexCost.batch}: ${indexCost.usPerEntry.toFixed(1)} µs per entry.`,
              '',
            ]
          : []),
        ...(plan.length ? ['Plan of search=rare_audit_trail:', '', ...plan, ''] : []),
        `Retention (older than ${RETENTION_DAYS} of ${SPAN_DAYS} days): ${r.deleted.toLocaleString('en')} entries deleted in ${r.seconds.toFixed(1)} s, ${kind === 'sqlite' ? 'batches by id range sized to ~10 ms a statement' : 'batches of 10,000 by id range'}.`,
        'History insert latency, one writer, entries one after another:',
        '',
        '| | inserts | p50 ms | p99 ms | max ms |',
        '|---|---:|---:|---:|---:|',
        `| without retention | ${r.baseline.length} | ${percentile(r.baseline, 50).toFixed(2)} | ${percentile(r.baseline, 99).toFixed(2)} | ${r.baseline[r.baseline.length - 1].toFixed(2)} |`,
        `| during retention | ${r.during.length} | ${percentile(r.during, 50).toFixed(2)} | ${percentile(r.during, 99).toFixed(2)} | ${r.during[r.during.length - 1]?.toFixed(2)} |`,
        ...(r.indexer
          ? [
              '',
              `Search indexer beside them, on the event loop (batches aimed at 5 ms): ${r.indexer.batches} batches, ${r.indexer.entries.toLocaleString('en')} entries, longest batch ${r.indexer.maxBatchMs.toFixed(1)} ms.`,
            ]
          : []),
      ];
      lines.push(...section);
      process.stderr.write(`${section.join('\n')}\n`);
    } finally {
      await env.cleanup();
    }
  }
  process.stdout.write(`\n${lines.join('\n')}\n`);
}

await main();
