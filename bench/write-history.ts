// bench/write-history: what a write's history costs. A write's entry is
// recorded `running`, durably, before the statement runs and completed after it, where a read's
// entry joins the next group commit after the result: one more store round trip, and on the
// PostgreSQL store one WAL flush, per write. Measured in one process without HTTP, on the
// whole core path (runQuery: look-ups, guard, the engine, the history), an INSERT into a table of
// the machine's PostgreSQL, for each store:
//   latency     — wall ms per write, one at a time (median and p95): what one client waits
//   throughput  — writes per second, 16 at a time (concurrent pre-records share a commit)
//   CPU         — CPU µs per write in this process, 16 at a time
// and the history alone, which holds still where the target's and the machine's noise do not:
//   before      — a write's entry as every entry was written: one, after, in the group commit
//   now         — the `running` entry (durable) before, its completion (durable) after
// Usage: node --import tsx bench/write-history.ts [--ops 2000] [--pg postgres://postgres@127.0.0.1:5432/test]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { cliActor } from '../src/audit/audit.ts';
import { loadConfig } from '../src/config.ts';
import { createConnection } from '../src/connections/connections.ts';
import { createLogger } from '../src/logger.ts';
import { runQuery } from '../src/query/run.ts';
import { closeServices, createServices } from '../src/services.ts';
import { authenticateKey, createApiKey } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { getWorkspace } from '../src/workspaces/workspaces.ts';
import { option } from './support/args.ts';

const OPS = Number(option('ops', '2000'));
const PG = option('pg', 'postgres://postgres@127.0.0.1:5432/test');
const ADMIN_URL = new URL(PG);
ADMIN_URL.pathname = '/postgres';
const CONCURRENCY = 16;
const TABLE = `bench_writes_${process.pid}`;

interface Figures {
  p50: number;
  p95: number;
  perSecond: number;
  cpuUs: number;
  /** The history alone: [before, now] as p50 ms one at a time and per second 16 at a time. */
  history: { p50: [number, number]; perSecond: [number, number] };
}

async function timeIt(once: () => Promise<unknown>): Promise<{ p50: number; perSecond: number }> {
  const latencies: number[] = [];
  for (let i = 0; i < Math.min(OPS, 500); i++) {
    const t = performance.now();
    await once();
    latencies.push(performance.now() - t);
  }
  latencies.sort((a, b) => a - b);
  let left = OPS;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (left-- > 0) await once();
    }),
  );
  return { p50: latencies[Math.floor(latencies.length / 2)], perSecond: OPS / ((performance.now() - t) / 1000) };
}

async function measure(storeUrl: string | null): Promise<Figures> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dbq-bench-write-'));
  const svc = await createServices(
    loadConfig({ DBQ_DATA_DIR: dataDir, DBQ_LOG_LEVEL: 'warn', ...(storeUrl ? { DBQ_STORE_URL: storeUrl } : {}) }),
    { logger: createLogger('warn') },
  );
  try {
    await createUser(svc.db, { workspace: 'default', email: 'bench@dbq.test', role: 'admin' }, cliActor());
    const { secret } = await createApiKey(svc.db, { workspace: 'default', email: 'bench@dbq.test', name: 'bench' });
    const ws = await getWorkspace(svc.db, 'default');
    await createConnection(
      { db: svc.db, secretBox: svc.secretBox, sqliteDir: svc.config.sqliteDir },
      ws.id,
      { name: 'pg', url: PG, maxConnections: 10 },
      cliActor(),
    );
    const principal = await authenticateKey(svc.db, secret);
    let n = 0;
    const write = () =>
      runQuery(
        svc,
        principal,
        {
          connectionId: 'pg',
          sql: `INSERT INTO ${TABLE} (v) VALUES ($1)`,
          params: [n++],
          maxRows: 1000,
          timeoutMs: 30_000,
          rowFormat: 'arrays',
        },
        { source: 'api' },
      );
    for (let i = 0; i < 50; i++) await write();
    const latencies: number[] = [];
    for (let i = 0; i < Math.min(OPS, 500); i++) {
      const t = performance.now();
      await write();
      latencies.push(performance.now() - t);
    }
    latencies.sort((a, b) => a - b);
    let left = OPS;
    const cpu = process.cpuUsage();
    const t = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (left-- > 0) await write();
      }),
    );
    const wall = performance.now() - t;
    const used = process.cpuUsage(cpu);
    const entry = {
      principal,
      queryId: 'q_bench',
      connection: { id: 'c_bench', name: 'pg' },
      sql: `INSERT INTO ${TABLE} (v) VALUES ($1)`,
      statementType: 'INSERT',
      rowCount: null,
      affectedRows: null,
      durationMs: 1,
      error: null,
      source: 'api' as const,
    };
    const before = await timeIt(() => svc.history.write({ ...entry, status: 'succeeded', affectedRows: 1 }));
    const now = await timeIt(async () => {
      const { id } = await svc.history.write({ ...entry, status: 'running', durationMs: 0 }, { durable: true });
      await svc.history.complete(id, { status: 'succeeded', rowCount: null, affectedRows: 1, durationMs: 1, error: null });
    });
    return {
      history: { p50: [before.p50, now.p50], perSecond: [before.perSecond, now.perSecond] },
      p50: latencies[Math.floor(latencies.length / 2)],
      p95: latencies[Math.floor(latencies.length * 0.95)],
      perSecond: OPS / (wall / 1000),
      cpuUs: (used.user + used.system) / OPS,
    };
  } finally {
    await closeServices(svc);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const target = new pg.Client({ connectionString: PG });
  await target.connect();
  const admin = new pg.Client({ connectionString: ADMIN_URL.toString() });
  await admin.connect();
  const storeDb = `dbq_bench_write_${process.pid}`;
  await target.query(`CREATE TABLE ${TABLE} (id bigserial primary key, v bigint)`);
  await admin.query(`CREATE DATABASE ${storeDb}`);
  const storeUrl = new URL(PG);
  storeUrl.pathname = `/${storeDb}`;
  try {
    const rows: string[] = [];
    const history: string[] = [];
    for (const [label, url] of [
      ['SQLite', null],
      ['PostgreSQL', storeUrl.toString()],
    ] as const) {
      const f = await measure(url);
      rows.push(`| ${label} | ${f.p50.toFixed(2)} | ${f.p95.toFixed(2)} | ${f.perSecond.toFixed(0)} | ${f.cpuUs.toFixed(0)} |`);
      const h = f.history;
      history.push(
        `| ${label} | ${h.p50[0].toFixed(2)} | ${h.p50[1].toFixed(2)} | ${h.perSecond[0].toFixed(0)} | ${h.perSecond[1].toFixed(0)} |`,
      );
    }
    process.stdout.write(
      [
        `write-history: runQuery INSERT on PostgreSQL, ${OPS} writes per figure, ${os.cpus().length} cores`,
        '',
        '| store | latency p50 ms (1 at a time) | p95 ms | writes/s (16 at a time) | CPU µs/write |',
        '|---|---:|---:|---:|---:|',
        ...rows,
        '',
        `A write's history alone (${OPS} per figure):`,
        '',
        '| store | before: one entry after, p50 ms | now: running + completion, p50 ms | before /s (16 at a time) | now /s |',
        '|---|---:|---:|---:|---:|',
        ...history,
        '',
      ].join('\n'),
    );
  } finally {
    await target.query(`DROP TABLE IF EXISTS ${TABLE}`);
    await target.end();
    await admin.query(`DROP DATABASE IF EXISTS ${storeDb} WITH (FORCE)`);
    await admin.end();
  }
}

await main();
