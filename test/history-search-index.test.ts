// On the SQLite store, `search=` is answered through a trigram index
// (migration 0009, src/history/search-index.ts) that is filled behind the writes. It only
// narrows the walk: every page must hold exactly the entries, in exactly the order, that the
// plain walk (`lower(sql) like '%…%'`, newest first) gives — with the index caught up, half
// built, after deletes that reuse rowids, after a VACUUM renumbered them, and under filters,
// cursors, readers and other workspaces. bench/history-scale.ts times it on 10M entries.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliActor } from '../src/audit/audit.ts';
import { listHistory, pruneHistory, type HistoryEntry, type HistoryQuery } from '../src/history/history.ts';
import { HistoryLog } from '../src/history/history-log.ts';
import { indexHistoryBatch, searchIndexApplies, searchWithIndex, startSearchIndexer } from '../src/history/search-index.ts';
import { openStore, type Store } from '../src/store/store.ts';
import { authenticateKey, createApiKey, type Principal } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { createWorkspace } from '../src/workspaces/workspaces.ts';
import { startServer } from '../src/server/server.ts';
import { tempDir } from './support/databases.ts';
import { createHarness, PG_URL } from './support/harness.ts';
import { sleep, until } from './support/wait.ts';

let store: Store;
let history: HistoryLog;
let admin: Principal;
let reader: Principal;
let other: Principal;

const TEXTS = [
  'SELECT * FROM orders WHERE id = {g}',
  'select count(*) from Customers where region = {g}',
  'SELECT * FROM rare_audit_trail WHERE id = {g}',
  'SELECT \'100%_done\' AS "quoted" -- {g}',
  "SELECT name FROM café WHERE note = 'Ünïcode' AND n = {g}",
  'SELECT 1',
];

async function write(p: Principal, n: number, pick: (i: number) => number, conn = 'main'): Promise<void> {
  const writes: Promise<unknown>[] = [];
  for (let i = 0; i < n; i++) {
    const text = TEXTS[pick(i)].replace('{g}', String(i));
    writes.push(
      history.write({
        principal: p,
        queryId: `q_${i}`,
        connection: { id: `conn_${conn}`, name: conn },
        sql: text,
        statementType: 'SELECT',
        status: i % 7 === 0 ? 'failed' : 'succeeded',
        rowCount: 1,
        affectedRows: null,
        durationMs: 1,
        error: null,
        source: i % 5 === 0 ? 'mcp' : 'api',
      }),
    );
  }
  await Promise.all(writes);
}

/** The whole result, page by page, as GET history returns it. */
async function allPages(p: Principal, q: Partial<HistoryQuery>): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 1000; pages++) {
    const page = await listHistory(store.db, p, { limit: 7, ...q, cursor } as HistoryQuery);
    ids.push(...page.entries.map((e: HistoryEntry) => e.id));
    if (!page.nextCursor) return ids;
    cursor = page.nextCursor;
  }
  throw new Error('paging did not end');
}

/** The reference: the walk without the index (SQLite's lower() folds ASCII only). */
async function reference(p: Principal, search: string, filter: (e: HistoryEntry) => boolean = () => true): Promise<string[]> {
  const all: HistoryEntry[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await listHistory(store.db, p, { limit: 200, cursor } as HistoryQuery);
    all.push(...page.entries);
    if (!page.nextCursor) break;
    cursor = page.nextCursor;
  }
  const needle = search.toLowerCase();
  const asciiLower = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());
  return all.filter((e) => asciiLower(e.sql).includes(needle) && filter(e)).map((e) => e.id);
}

const indexedUpTo = async () =>
  Number((await sql<{ r: number }>`select indexed_rowid as r from query_history_search_state`.execute(store.db)).rows[0].r);
const partitionCount = async () =>
  (await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(store.db)).rows.filter((r) =>
    /^query_history_search_\d+$/.test(r.name),
  ).length;
const maxRowid = async () =>
  Number((await sql<{ r: number }>`select coalesce(max(rowid), 0) as r from query_history`.execute(store.db)).rows[0].r);

const SEARCHES = [
  'orders',
  'ORDERS',
  'rare_audit',
  'Customers where',
  '100%_',
  '%_d',
  '"quoted"',
  'café',
  'Ünïcode',
  'ünïcode',
  'id = 1',
  '= 12',
  'nowhere at all',
];

beforeAll(async () => {
  store = await openStore({ dataDir: tempDir(), storeUrl: null });
  history = new HistoryLog(store);
  await createWorkspace(store.db, { slug: 'h', plan: 'enterprise' });
  await createWorkspace(store.db, { slug: 'o', plan: 'enterprise' });
  await createUser(store.db, { workspace: 'h', email: 'admin@h.test', role: 'admin' }, cliActor());
  await createUser(store.db, { workspace: 'h', email: 'reader@h.test', role: 'read_only' }, cliActor());
  await createUser(store.db, { workspace: 'o', email: 'admin@o.test', role: 'admin' }, cliActor());
  admin = await authenticateKey(store.db, (await createApiKey(store.db, { workspace: 'h', email: 'admin@h.test', name: 'a' })).secret);
  reader = await authenticateKey(store.db, (await createApiKey(store.db, { workspace: 'h', email: 'reader@h.test', name: 'r' })).secret);
  other = await authenticateKey(store.db, (await createApiKey(store.db, { workspace: 'o', email: 'admin@o.test', name: 'o' })).secret);
  // Partitions of 500 rowids instead of 2^20, so that searches cross many of them.
  await sql`update query_history_search_state set partition_rows = 500`.execute(store.db);
  // Interleaved workspaces and users; 'rare_audit_trail' in 1 of 97.
  for (let round = 0; round < 6; round++) {
    await write(admin, 300, (i) => (i % 97 === 3 ? 2 : i % 6));
    await write(reader, 60, (i) => (i % 3) * 2);
    await write(other, 100, (i) => (i % 97 === 5 ? 2 : i % 2));
  }
});

afterAll(async () => {
  await store?.close();
});

describe('history search through the SQLite trigram index', () => {
  it('answers exactly what the walk answers, page by page, for every kind of text, once indexed', async () => {
    while ((await indexHistoryBatch(store.db, 500)) > 0);
    expect(await indexedUpTo()).toBe(await maxRowid());
    for (const search of SEARCHES) {
      const expected = await reference(admin, search);
      expect(await allPages(admin, { search }), search).toEqual(expected);
    }
    // The index is really used: a search of 3+ characters is served by it, not the fallback.
    expect(searchIndexApplies(store.db, 'orders')).toBe(true);
    expect(searchIndexApplies(store.db, 'or')).toBe(false);
    const q = store.db.selectFrom('query_history').selectAll().where('workspace_id', '=', admin.workspace.id);
    const rows = await searchWithIndex(store.db, q, {
      search: 'rare_audit',
      matches: sql<boolean>`lower(sql) like '%rare_audit%'`,
      limit: 5,
    });
    expect(rows).not.toBeNull();
    expect(rows!.map((r) => r.id)).toEqual((await reference(admin, 'rare_audit')).slice(0, 6));
  });

  it('applies every filter, the reader scope and the workspace with the index', async () => {
    const cases: Array<[Principal, Partial<HistoryQuery>, (e: HistoryEntry) => boolean]> = [
      [admin, { status: 'failed' }, (e) => e.status === 'failed'],
      [admin, { source: 'mcp' }, (e) => e.source === 'mcp'],
      [admin, { connectionId: 'main' }, (e) => e.connectionName === 'main'],
      [reader, {}, () => true],
      [other, {}, () => true],
    ];
    for (const [p, q, f] of cases) {
      for (const search of ['orders', 'rare_audit', 'customers']) {
        expect(await allPages(p, { ...q, search }), `${search} ${JSON.stringify(q)}`).toEqual(await reference(p, search, f));
      }
    }
  });

  it('answers the same while the index is half built and while new entries are not yet in it', async () => {
    await write(admin, 500, (i) => (i % 13 === 1 ? 2 : i % 6));
    const before = await indexedUpTo();
    await indexHistoryBatch(store.db, 120);
    expect(await indexedUpTo()).toBeGreaterThan(before);
    expect(await indexedUpTo()).toBeLessThan(await maxRowid());
    for (const search of ['orders', 'rare_audit', 'café', '= 12']) {
      expect(await allPages(admin, { search }), search).toEqual(await reference(admin, search));
    }
  });

  it('keeps deletes in step: rowids reused after the newest entries go, and partitions dropped once retention empties them', async () => {
    while ((await indexHistoryBatch(store.db, 500)) > 0);
    // The newest entries are the other workspace's, all holding 'rare_audit': deleting the
    // workspace frees the top rowids, and the next entries (none holding it) reuse them.
    await write(other, 50, () => 2);
    while ((await indexHistoryBatch(store.db, 500)) > 0);
    const top = await maxRowid();
    // dbq has no workspace delete yet; the store's ON DELETE CASCADE is what one would run.
    await store.db.deleteFrom('workspaces').where('slug', '=', 'o').execute();
    expect(await maxRowid()).toBeLessThan(top);
    expect(await indexedUpTo()).toBe(await maxRowid());
    await write(admin, 80, () => 0);
    expect(await maxRowid()).toBeGreaterThanOrEqual(top);
    // Found before they are indexed (checked one by one) and after.
    expect(await allPages(admin, { search: 'orders' })).toEqual(await reference(admin, 'orders'));
    while ((await indexHistoryBatch(store.db, 500)) > 0);
    expect(await allPages(admin, { search: 'orders' })).toEqual(await reference(admin, 'orders'));
    expect(await allPages(admin, { search: 'rare_audit' })).toEqual(await reference(admin, 'rare_audit'));
    // The reused rowids' old index entries are gone, not merely rejected by the check: no live
    // entry is a 'rare_audit' candidate unless its statement holds it.
    const size = 500;
    const { rows: live } = await sql<{
      rowid: number;
      sql: string;
    }>`select rowid, sql from query_history where rowid > ${top - 200}`.execute(store.db);
    for (const k of new Set(live.map((r) => Math.floor((Number(r.rowid) - 1) / size)))) {
      const table = sql.table(`query_history_search_${k}`);
      const { rows: cands } = await sql<{ rowid: number }>`select rowid from ${table} where ${table} match '"rare_audit"'`.execute(
        store.db,
      );
      const claimed = new Set(cands.map((c) => Number(c.rowid)));
      for (const r of live) if (claimed.has(Number(r.rowid))) expect(r.sql).toContain('rare_audit');
    }
    // Every partition is tuned so that no delete rewrites a segment inside its statement.
    const { rows: config } = await sql<{ k: string; v: number }>`select k, v from query_history_search_0_config`.execute(store.db);
    expect(Object.fromEntries(config.map((c) => [c.k, Number(c.v)]))).toMatchObject({ deletemerge: 0, automerge: 8 });
    // Retention: half the history, then all of it. Partitions whose entries are all gone are
    // dropped; searches stay exact in between.
    const before = await partitionCount();
    expect(before).toBeGreaterThan(5);
    const { rows: mid } = await sql<{ id: string }>`select id from query_history order by id limit 1 offset 2600`.execute(store.db);
    await store.db.deleteFrom('query_history').where('id', '<', mid[0].id).execute();
    expect(await allPages(admin, { search: 'rare_audit' })).toEqual(await reference(admin, 'rare_audit'));
    await indexHistoryBatch(store.db, 500);
    const min = Number((await sql<{ r: number }>`select min(rowid) as r from query_history`.execute(store.db)).rows[0].r);
    const names = (await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(store.db)).rows.map(
      (r) => r.name,
    );
    const left = names.flatMap((n) => /^query_history_search_(\d+)$/.exec(n)?.[1] ?? []).map(Number);
    expect(left.length).toBeLessThan(before);
    expect(Math.min(...left)).toBe(Math.floor((min - 1) / size));
    expect(await allPages(admin, { search: 'rare_audit' })).toEqual(await reference(admin, 'rare_audit'));
    const n = await pruneHistory(store.db, 0, { pauseMs: 0 });
    expect(n).toBeGreaterThan(0);
    await indexHistoryBatch(store.db, 500);
    expect(await partitionCount()).toBe(0);
    expect(await indexedUpTo()).toBe(0);
  });

  it('notices rowids renumbered by VACUUM and starts over rather than answer from a stale index', async () => {
    for (let i = 0; i < 3; i++) await write(admin, 300, (k) => (k % 11 === 0 ? 2 : k % 6));
    while ((await indexHistoryBatch(store.db, 500)) > 0);
    // Holes in the middle, then VACUUM: rows after the holes move to lower rowids.
    await sql`delete from query_history where rowid % 3 = 0 and rowid < ${(await maxRowid()) - 10}`.execute(store.db);
    await sql`vacuum`.execute(store.db);
    const expected = await reference(admin, 'rare_audit');
    expect(await allPages(admin, { search: 'rare_audit' })).toEqual(expected);
    while ((await indexHistoryBatch(store.db, 500)) > 0);
    expect(await indexedUpTo()).toBe(await maxRowid());
    expect(await allPages(admin, { search: 'rare_audit' })).toEqual(expected);
    const q = store.db.selectFrom('query_history').selectAll().where('workspace_id', '=', admin.workspace.id);
    expect(
      await searchWithIndex(store.db, q, { search: 'rare_audit', matches: sql<boolean>`lower(sql) like '%rare_audit%'`, limit: 5 }),
    ).not.toBeNull();
  });

  it('is kept caught up by the background indexer', async () => {
    const indexer = startSearchIndexer(store.db, { intervalMs: 20 });
    try {
      await write(admin, 400, (i) => i % 6);
      await until('the indexer to catch up', async () => (await indexedUpTo()) >= (await maxRowid()), 5000);
      expect(await indexedUpTo()).toBe(await maxRowid());
      expect(await allPages(admin, { search: 'customers' })).toEqual(await reference(admin, 'customers'));
    } finally {
      await indexer.stop();
    }
  });
});

describe('history search index in a running server', () => {
  async function serve(env: Record<string, string>) {
    const h = await createHarness(env);
    await h.call('POST', '/api/connections', h.adminKey, { name: 'pg', url: PG_URL });
    const server = await startServer(h.svc, h.app, { host: '127.0.0.1', port: 0 });
    const call = (method: string, url: string, body?: unknown) =>
      fetch(`${server.url}${url}`, {
        method,
        headers: { authorization: `Bearer ${h.adminKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    for (let i = 0; i < 30; i++)
      expect((await call('POST', '/api/query', { connectionId: 'pg', sql: `SELECT 'needle_${i}' AS n` })).status).toBe(200);
    const state = async () =>
      Number((await sql<{ r: number }>`select indexed_rowid as r from query_history_search_state`.execute(h.svc.db)).rows[0].r);
    const top = Number((await sql<{ r: number }>`select max(rowid) as r from query_history`.execute(h.svc.db)).rows[0].r);
    return { h, server, call, state, top };
  }

  it('indexes what the server writes within seconds and answers search from it', async () => {
    const { server, call, state, top } = await serve({});
    try {
      await expect.poll(state, { timeout: 5000, interval: 100 }).toBe(top);
      const res = await call('GET', '/api/query/history?search=NEEDLE_2&limit=50');
      expect(res.status).toBe(200);
      expect(res.body.data.entries.map((e: HistoryEntry) => e.sql)).toEqual(
        [29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 2].map((i) => `SELECT 'needle_${i}' AS n`),
      );
    } finally {
      await server.shutdown();
    }
  });

  it('does not index with DBQ_HISTORY_SEARCH_INDEX=off, and search answers the same', async () => {
    const { server, call, state } = await serve({ DBQ_HISTORY_SEARCH_INDEX: 'off' });
    try {
      // An absence has no event to wait for: two and a half of the indexer's 1 s intervals pass.
      await sleep(2500);
      expect(await state()).toBe(0);
      const res = await call('GET', '/api/query/history?search=NEEDLE_2&limit=50');
      expect(res.body.data.entries).toHaveLength(11);
    } finally {
      await server.shutdown();
    }
  });
});
