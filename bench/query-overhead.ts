// bench/query-overhead: what dbq's keys, guard, read-only mode, encoding and history cost on
// the hot path. One run, same machine, three ways to run the same PostgreSQL statements:
//   raw pool   — pg.Pool.query in this process (the floor)
//   bare proxy — Fastify + pg in a child process, no auth/guard/history (the baseline)
//   dbq        — `dbq serve` in a child process, POST /api/query with an admin key
// 32 concurrent clients, DURATION seconds per case (default 10). Usage:
//   node --import tsx bench/query-overhead.ts [--seconds 10] [--pg postgres://postgres@127.0.0.1:5432/test]
import { cliActor } from '../src/audit/audit.ts';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadConfig } from '../src/config.ts';
import { createConnection } from '../src/connections/connections.ts';
import { createLogger } from '../src/logger.ts';
import { closeServices, createServices } from '../src/services.ts';
import { createApiKey } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { getWorkspace, setWorkspacePlan } from '../src/workspaces/workspaces.ts';
import { postJson, runLoad, type LoadResult } from './support/load.ts';
import { cpuSeconds, startChild, startDbqServe, waitForHttp } from './support/processes.ts';
import { option } from './support/args.ts';

const SECONDS = Number(option('seconds', '10'));
const PG = option('pg', 'postgres://postgres@127.0.0.1:5432/test');
const CONCURRENCY = 32;
const POOL = 10; // dbq's default maxConnections; the baselines get the same pool size

const CASES = [
  { label: 'SELECT 1', sql: 'SELECT 1', maxRows: 1000 },
  { label: '100 rows', sql: 'SELECT g, md5(g::text) FROM generate_series(1, 100) g', maxRows: 1000 },
  { label: '10,000 rows', sql: 'SELECT g, md5(g::text) FROM generate_series(1, 10000) g', maxRows: 10000 },
];

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dbq-bench-'));
  const env = { DBQ_DATA_DIR: dataDir, DBQ_LOG_LEVEL: 'warn' };
  // Provision dbq's store through core, then serve it from a separate process.
  const svc = await createServices(loadConfig(env), { logger: createLogger('warn') });
  await createUser(svc.db, { workspace: 'default', email: 'bench@dbq.test', role: 'admin' }, cliActor());
  const { secret } = await createApiKey(svc.db, { workspace: 'default', email: 'bench@dbq.test', name: 'bench' });
  // Enterprise: no plan limit, so the bench measures the query path, not the limiter.
  await setWorkspacePlan(svc.db, 'default', 'enterprise', cliActor());
  const ws = await getWorkspace(svc.db, 'default');
  await createConnection(
    { db: svc.db, secretBox: svc.secretBox, sqliteDir: svc.config.sqliteDir },
    ws.id,
    { name: 'pg', url: PG, maxConnections: POOL },
    cliActor(),
  );
  await closeServices(svc);

  const dbqPort = 18000 + Math.floor(Math.random() * 1000);
  const barePort = dbqPort + 1;
  const dbq = await startDbqServe(dbqPort, env);
  const bare = await startChild(path.resolve('bench/support/bare-proxy.ts'), [String(barePort), PG, String(POOL)]);
  await waitForHttp(`http://127.0.0.1:${dbqPort}/healthz`);
  const raw = new pg.Pool({ connectionString: PG, max: POOL });

  /** runLoad plus the server process's CPU per answered request (µs). */
  const serverLoad = async (pid: number, label: string, once: () => Promise<boolean>): Promise<LoadResult & { cpuUs: number }> => {
    const before = cpuSeconds(pid);
    const r = await runLoad(label, CONCURRENCY, SECONDS, once);
    return { ...r, cpuUs: ((cpuSeconds(pid) - before) * 1e6) / r.requests };
  };
  const results: { raw: LoadResult; bare: LoadResult & { cpuUs: number }; dbq: LoadResult & { cpuUs: number } }[] = [];
  try {
    for (const c of CASES) {
      const body = JSON.stringify({ connectionId: 'pg', sql: c.sql, maxRows: c.maxRows });
      const bareBody = JSON.stringify({ sql: c.sql });
      // Warm-up: pools filled, JIT warm.
      await runLoad('warm', CONCURRENCY, 1, () =>
        postJson(`http://127.0.0.1:${dbqPort}/api/query`, body, { authorization: `Bearer ${secret}` }),
      );
      await runLoad('warm', CONCURRENCY, 1, () => postJson(`http://127.0.0.1:${barePort}/query`, bareBody));
      const r = await runLoad(c.label, CONCURRENCY, SECONDS, async () => {
        await raw.query({ text: c.sql, rowMode: 'array' });
        return true;
      });
      const b = await serverLoad(bare.pid!, c.label, () => postJson(`http://127.0.0.1:${barePort}/query`, bareBody));
      const d = await serverLoad(dbq.pid!, c.label, () =>
        postJson(`http://127.0.0.1:${dbqPort}/api/query`, body, { authorization: `Bearer ${secret}` }),
      );
      results.push({ raw: r, bare: b, dbq: d });
    }
  } finally {
    await raw.end();
    dbq.kill('SIGTERM');
    bare.kill('SIGTERM');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }

  const lines = [
    `query-overhead: ${CONCURRENCY} concurrent clients, ${SECONDS} s per case, pool size ${POOL}, ${os.cpus().length} cores, PostgreSQL ${PG.replace(/\/\/[^@]*@/, '//')}`,
    '',
    '| case | raw pool req/s | bare proxy req/s | dbq req/s | bare/raw | dbq/bare | p50 raw / bare / dbq ms | p99 raw / bare / dbq ms | server CPU µs/req bare / dbq | errors raw / bare / dbq |',
    '|---|---:|---:|---:|---:|---:|---|---|---|---:|',
    ...results.map(
      ({ raw: r, bare: b, dbq: d }) =>
        `| ${r.label} | ${r.rps.toFixed(0)} | ${b.rps.toFixed(0)} | ${d.rps.toFixed(0)} | ${(b.rps / r.rps).toFixed(2)}x | **${(d.rps / b.rps).toFixed(2)}x** | ${r.p50.toFixed(2)} / ${b.p50.toFixed(2)} / ${d.p50.toFixed(2)} | ${r.p99.toFixed(2)} / ${b.p99.toFixed(2)} / ${d.p99.toFixed(2)} | ${b.cpuUs.toFixed(0)} / ${d.cpuUs.toFixed(0)} | ${r.errors} / ${b.errors} / ${d.errors} |`,
    ),
    '',
    "Server CPU µs/req: the server process's user+system time over the requests it answered (from /proc). When dbq's",
    'process is the busy one, dbq/bare is close to bare CPU / dbq CPU.',
    '',
    'Target: dbq >= 0.8x the bare proxy in every case.',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();
