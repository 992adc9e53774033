// `bench/ratio.ts --costs`: what each lead of the per-request cost costs by itself, in CPU µs,
// measured in this process without HTTP, so a few microseconds are not lost in the ±20% that
// req/s move by on two shared cores (the ablation's end-to-end figures cannot resolve them):
//   key hashing        — isWellFormedKey (CRC-32 checksum) + hashKey (SHA-256), per request
//   data_version       — ChangeEpoch.current() with its once-a-turn cache missed: the PRAGMA
//                        and the setImmediate that clears the cache (less a bare setImmediate)
//   history insert     — svc.history.write, 1 to 16 entries a loop turn (the group commit), per
//                        entry; again without the history's five filter indexes (on a copy)
//   search indexing    — the trigram indexer catching those entries up, per entry
//   read teardown      — a SELECT 1 read pipeline with and without `SELECT pg_advisory_unlock_all(),
//                        setseed(…)`, and the statement alone: this process's CPU and the
//                        PostgreSQL backend's (/proc of pg_backend_pid()), per request
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../../src/config.ts';
import { PipelinedStatement, type Step } from '../../src/engines/postgres/postgres-batch.ts';
import { RESEED } from '../../src/engines/postgres/postgres.ts';
import type { NewHistoryEntry } from '../../src/history/history.ts';
import { startSearchIndexer } from '../../src/history/search-index.ts';
import { createLogger } from '../../src/logger.ts';
import { closeServices, createServices } from '../../src/services.ts';
import { ChangeEpoch } from '../../src/store/change-epoch.ts';
import { authenticateKey } from '../../src/workspaces/api-keys.ts';
import { hashKey, isWellFormedKey } from '../../src/workspaces/key-format.ts';
import { cpuSeconds } from './processes.ts';

const FILTER_INDEXES = [
  'query_history_user',
  'query_history_connection',
  'query_history_connection_name',
  'query_history_status',
  'query_history_source',
];

export interface Cost {
  label: string;
  /** CPU µs per request in dbq's process. */
  dbqUs: number;
  /** CPU µs per request in the PostgreSQL backend, where it applies. */
  pgUs?: number;
  note: string;
}

const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

function keyHashing(key: string): Cost {
  const n = 200_000;
  let sink = 0;
  for (let i = 0; i < 20_000; i++) sink += hashKey(key).length;
  const t0 = cpuUs();
  for (let i = 0; i < n; i++) if (isWellFormedKey(key)) sink += hashKey(key).length;
  const us = (cpuUs() - t0) / n;
  return { label: 'key hashing', dbqUs: us, note: `isWellFormedKey + hashKey, ${n} calls (${sink > 0 ? 'ok' : '?'})` };
}

async function dataVersion(dataDir: string): Promise<Cost> {
  const handle = new Database(path.join(dataDir, 'dbq.sqlite'));
  try {
    const epoch = new ChangeEpoch(handle);
    const n = 50_000;
    for (let i = 0; i < 2_000; i++) {
      epoch.current();
      await tick();
    }
    let t0 = cpuUs();
    for (let i = 0; i < n; i++) await tick();
    const bare = (cpuUs() - t0) / n;
    t0 = cpuUs();
    for (let i = 0; i < n; i++) {
      epoch.current();
      await tick();
    }
    const us = (cpuUs() - t0) / n - bare;
    return {
      label: 'change-epoch.current (PRAGMA data_version)',
      dbqUs: us,
      note: `once per loop turn at most; ${n} turns, each missing the cache`,
    };
  } finally {
    handle.close();
  }
}

async function history(env: Record<string, string>, key: string): Promise<Cost[]> {
  const svc = await createServices(loadConfig(env), { logger: createLogger('warn') });
  try {
    const principal = await authenticateKey(svc.db, key);
    const connection = await svc.db.selectFrom('connections').select(['id', 'name']).executeTakeFirstOrThrow();
    const entry: NewHistoryEntry = {
      principal,
      queryId: 'q_bench',
      connection,
      sql: 'SELECT 1',
      statementType: 'select',
      status: 'succeeded',
      rowCount: 1,
      affectedRows: null,
      durationMs: 1,
      error: null,
      source: 'api',
    };
    const write = async (n: number, perTurn = 16) => {
      for (let i = 0; i < n; i += perTurn) await Promise.all(Array.from({ length: perTurn }, () => svc.history.write(entry)));
    };
    // Its timer kept out of the way (an hour): it runs only when caught up below, so the insert
    // and the indexing are counted apart.
    const indexer = startSearchIndexer(svc.db, { intervalMs: 3_600_000 });
    await write(2_000);
    await indexer.catchUp();
    const n = 20_000;
    // The group commit's batch is whatever one loop turn produced: under HTTP load a few
    // entries, so the commit's fixed cost is shared by few.
    const inserts: Cost[] = [];
    const insertCosts = async (what: string) => {
      for (const perTurn of [1, 2, 4, 16]) {
        const t = cpuUs();
        await write(n / 4, perTurn);
        inserts.push({
          label: `history insert${what}, ${perTurn} a turn`,
          dbqUs: (cpuUs() - t) / (n / 4),
          note: `svc.history.write, ${perTurn} entr${perTurn === 1 ? 'y' : 'ies'} a loop turn (one group commit each), ${n / 4} entries`,
        });
      }
    };
    await insertCosts('');
    // More for the indexer to catch up, at the batch size the index usually sees.
    await write(n);
    const t0 = cpuUs();
    const indexed = await indexer.catchUp();
    const indexUs = (cpuUs() - t0) / Math.max(1, indexed);
    await indexer.stop();
    // A commit writes a page of every B-tree the table has; the history's filter indexes
    // (migrations 0001 and 0008) are most of them. Dropped on this copy of the store only.
    for (const name of FILTER_INDEXES) await sql.raw(`drop index if exists ${name}`).execute(svc.db);
    await insertCosts(` without the ${FILTER_INDEXES.length} filter indexes`);
    return [
      ...inserts,
      {
        label: 'history search indexing',
        dbqUs: indexUs,
        note: `the trigram indexer catching up ${indexed} entries (DBQ_HISTORY_SEARCH_INDEX=off removes it)`,
      },
    ];
  } finally {
    await closeServices(svc);
  }
}

const BEGIN: Step = { name: 'b_begin', text: 'BEGIN READ ONLY' };
const UNLOCK: Step = { name: 'b_unlock', text: `SELECT pg_advisory_unlock_all(), ${RESEED}` };
const ROLLBACK: Step = { name: 'b_rollback', text: 'ROLLBACK' };

async function teardown(url: string): Promise<Cost[]> {
  const variants: Array<{ label: string; setup: Step[]; after: Step[] }> = [
    { label: 'read pipeline: BEGIN READ ONLY, statement, unlock + reseed, ROLLBACK', setup: [BEGIN], after: [UNLOCK, ROLLBACK] },
    { label: 'read pipeline without unlock + reseed', setup: [BEGIN], after: [ROLLBACK] },
    { label: 'the statement alone (pipelined, no transaction)', setup: [], after: [] },
  ];
  const clients = await Promise.all(
    variants.map(async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      const pid = Number((await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
      return { c, pid, prepared: false };
    }),
  );
  const once = async (i: number) => {
    const v = variants[i];
    const cl = clients[i];
    const s = new PipelinedStatement(v.setup, 'SELECT 1', [], 1000, 1 << 20, v.after, !cl.prepared);
    void cl.c.query(s as unknown as pg.QueryConfig);
    await s.done;
    cl.prepared = true;
  };
  const BLOCK = 1_000;
  const acc = variants.map(() => ({ client: [] as number[], backend: [] as number[], n: 0 }));
  try {
    for (let i = 0; i < variants.length; i++) for (let k = 0; k < 500; k++) await once(i);
    // Interleaved in blocks, so the machine's drift hits the variants alike; the median block
    // of each, since a block the scheduler disturbed is far off the others.
    for (let round = 0; round < 20; round++) {
      for (let k = 0; k < variants.length; k++) {
        const i = (round + k) % variants.length;
        const c0 = cpuUs();
        const b0 = cpuSeconds(clients[i].pid);
        for (let j = 0; j < BLOCK; j++) await once(i);
        acc[i].client.push((cpuUs() - c0) / BLOCK);
        acc[i].backend.push(((cpuSeconds(clients[i].pid) - b0) * 1e6) / BLOCK);
        acc[i].n += BLOCK;
      }
    }
  } finally {
    await Promise.all(clients.map((cl) => cl.c.end()));
  }
  return variants.map((v, i) => ({
    label: v.label,
    dbqUs: median(acc[i].client),
    // The backend's CPU comes in 10 ms ticks, 10 µs a block: its mean over all blocks resolves finer.
    pgUs: acc[i].backend.reduce((a, b) => a + b, 0) / acc[i].backend.length,
    note: `${acc[i].n} sequential SELECT 1 on one connection, dbq: median of ${acc[i].client.length} blocks, backend: mean`,
  }));
}

export async function measureCosts(env: Record<string, string>, key: string, pgUrl: string): Promise<Cost[]> {
  const dataDir = env.DBQ_DATA_DIR;
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'dbq-ratio-costs-'));
  try {
    fs.cpSync(dataDir, copy, { recursive: true });
    return [keyHashing(key), await dataVersion(copy), ...(await history({ ...env, DBQ_DATA_DIR: copy }, key)), ...(await teardown(pgUrl))];
  } finally {
    fs.rmSync(copy, { recursive: true, force: true });
  }
}
