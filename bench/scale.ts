// bench/scale: what a second dbq process and the Redis-backed rate limiter cost or buy.
//   1. Throughput of POST /api/query `SELECT 1` (PostgreSQL target) and the servers' CPU time
//      per request (/proc/<pid>/stat utime+stime), in one run: one `dbq serve` on a SQLite
//      store; one on a fresh PostgreSQL store; two on that store behind a round-robin client
//      (32 concurrent clients, the same load generator throughout).
//   2. Latency the limiter adds: the same request, one client at a time, on an enterprise
//      workspace (no limiter) and on a professional one whose limit is raised out of reach
//      (every request counted in Redis; and again counted in memory only), rotated request by
//      request by one client against in-process servers; and
//      `consumeRequest` itself against Redis and in memory, back to back and with Redis left
//      idle between calls as it is between HTTP requests.
// Usage: node --import tsx bench/scale.ts [--seconds 10] [--pg postgres://postgres@127.0.0.1:5432/test]
//        [--redis redis://127.0.0.1:6379] [--only throughput,latency,consume]
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { Redis } from 'ioredis';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { cliActor } from '../src/audit/audit.ts';
import { loadConfig } from '../src/config.ts';
import { createConnection } from '../src/connections/connections.ts';
import { buildApp } from '../src/server/app.ts';
import { frontDoors } from '../src/server/front-doors.ts';
import { createLimits } from '../src/limits/limits.ts';
import { createLogger } from '../src/logger.ts';
import { closeServices, createServices, type Services } from '../src/services.ts';
import { createApiKey } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { createWorkspace, getWorkspace } from '../src/workspaces/workspaces.ts';
import { freshPostgresDatabase, tempDir } from '../test/support/databases.ts';
import { deleteRedisKeys, removeDir, sharedEnv, startDbq, type DbqProcess } from '../test/support/processes.ts';
import { percentile, postJson, runLoad, type LoadResult } from './support/load.ts';
import { option } from './support/args.ts';

const SECONDS = Number(option('seconds', '10'));
const PG = option('pg', 'postgres://postgres@127.0.0.1:5432/test');
const REDIS = option('redis', 'redis://127.0.0.1:6379');
const ONLY = new Set(option('only', 'throughput,latency,consume').split(','));
const CONCURRENCY = 32;
const BODY = JSON.stringify({ connectionId: 'pg', sql: 'SELECT 1', maxRows: 10 });

async function provision(svc: Services, slug: string, plan: 'professional' | 'enterprise'): Promise<string> {
  await createWorkspace(svc.db, { slug, plan });
  await createUser(svc.db, { workspace: slug, email: `bench@${slug}.test`, role: 'admin' }, cliActor());
  const ws = await getWorkspace(svc.db, slug);
  await createConnection(
    { db: svc.db, secretBox: svc.secretBox, sqliteDir: svc.config.sqliteDir },
    ws.id,
    { name: 'pg', url: PG, maxConnections: 10 },
    cliActor(),
  );
  return (await createApiKey(svc.db, { workspace: slug, email: `bench@${slug}.test`, name: 'bench' })).secret;
}

const row = (label: string, r: { rps?: number; p50: number; p99: number; errors?: number; requests?: number }) =>
  `| ${label} | ${r.rps === undefined ? '' : r.rps.toFixed(0)} | ${r.p50.toFixed(3)} | ${r.p99.toFixed(3)} | ${r.requests ?? ''} | ${r.errors ?? ''} |`;

/** utime + stime of a process so far, in µs (/proc/<pid>/stat, fields 14 and 15). */
function cpuMicros(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS) * 1e6;
}
const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK']).stdout?.toString().trim()) || 100;

interface Throughput extends LoadResult {
  cpuPerRequest: number;
}

/** Runs the load against `procs` round-robin, and the servers' CPU time per answered request. */
async function measure(label: string, procs: DbqProcess[], secret: string): Promise<Throughput> {
  const url = (p: DbqProcess) => `${p.url}/w/scale/api/query`;
  const auth = { authorization: `Bearer ${secret}` };
  for (const p of procs) await runLoad('warm', CONCURRENCY, 2, () => postJson(url(p), BODY, auth));
  const cpu0 = procs.map((p) => cpuMicros(p.child.pid!));
  let next = 0;
  const r = await runLoad(label, CONCURRENCY, SECONDS, () => postJson(url(procs[next++ % procs.length]), BODY, auth));
  const cpu = procs.reduce((sum, p, i) => sum + cpuMicros(p.child.pid!) - cpu0[i], 0);
  return { ...r, cpuPerRequest: cpu / Math.max(1, r.requests - r.errors) };
}

/** The same load on: the SQLite store, one process; the PostgreSQL store, one process; the
 * PostgreSQL store, two processes behind a round-robin client. */
async function throughput(
  env: Record<string, string>,
  secret: string,
  sqliteEnv: Record<string, string>,
  sqliteSecret: string,
): Promise<Throughput[]> {
  const out: Throughput[] = [];
  const sqlite = await startDbq(sqliteEnv);
  try {
    out.push(await measure('SQLite store, 1 process', [sqlite], sqliteSecret));
  } finally {
    await sqlite.stop();
  }
  const dirs = [tempDir(), tempDir()];
  const procs: DbqProcess[] = await Promise.all(dirs.map((d) => startDbq({ ...env, DBQ_DATA_DIR: d })));
  try {
    out.push(await measure('PostgreSQL store, 1 process', [procs[0]], secret));
    out.push(await measure('PostgreSQL store, 2 processes (round-robin)', procs, secret));
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    for (const d of dirs) removeDir(d);
  }
  return out;
}

async function limiterOverHttp(env: Record<string, string>, entSecret: string, proSecret: string): Promise<LoadResult[]> {
  const svc = await createServices(loadConfig({ ...env, DBQ_LOG_LEVEL: 'warn' }), { logger: createLogger('warn') });
  // The professional plan's 300 a minute would be spent in a blink; raise it out of reach so
  // every request is counted and admitted, which is the cost being measured. A second app on
  // the same services counts in memory only (the per-process mode, no Redis round trip).
  await svc.limits.close();
  const huge = { professional: 1_000_000_000 };
  svc.limits = createLimits({ redisUrl: REDIS, keyPrefix: env.DBQ_REDIS_KEY_PREFIX, logger: svc.logger, planLimits: huge });
  const local = {
    ...svc,
    limits: createLimits({ redisUrl: null, keyPrefix: env.DBQ_REDIS_KEY_PREFIX, logger: svc.logger, planLimits: huge }),
  };
  const app = await buildApp(svc, frontDoors());
  const localApp = await buildApp(local, frontDoors());
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  const localBase = await localApp.listen({ port: 0, host: '127.0.0.1' });
  const send = (at: string, secret: string, slug: string) => () =>
    postJson(`${at}/w/${slug}/api/query`, BODY, { authorization: `Bearer ${secret}` });
  try {
    const cases = [
      { label: 'enterprise (no limiter)', once: send(base, entSecret, 'scale'), times: [] as number[], errors: 0 },
      { label: 'professional, Redis limiter', once: send(base, proSecret, 'limited'), times: [] as number[], errors: 0 },
      { label: 'professional, per-process limiter', once: send(localBase, proSecret, 'limited'), times: [] as number[], errors: 0 },
    ];
    for (const c of cases) await runLoad('warm', 4, 2, c.once);
    // One client rotating through the cases request by request, so drift (JIT, store caches,
    // whatever else the machine is doing) hits them alike; differences of percentiles are costs.
    const started = performance.now();
    const end = started + SECONDS * 2 * 1000;
    for (let i = 0; performance.now() < end; i++) {
      const c = cases[i % cases.length];
      const t0 = performance.now();
      if (!(await c.once())) c.errors++;
      c.times.push(performance.now() - t0);
    }
    const seconds = (performance.now() - started) / 1000 / cases.length;
    return cases.map((c) => {
      c.times.sort((x, y) => x - y);
      return {
        label: c.label,
        requests: c.times.length,
        errors: c.errors,
        seconds,
        rps: c.times.length / seconds,
        p50: percentile(c.times, 50),
        p99: percentile(c.times, 99),
      };
    });
  } finally {
    await localApp.close();
    await app.close();
    await local.limits.close();
    await closeServices(svc);
  }
}

async function consumeDirect(prefix: string): Promise<Array<{ label: string; p50: number; p99: number; requests: number }>> {
  const out: Array<{ label: string; p50: number; p99: number; requests: number }> = [];
  const principal = (plan: 'professional' | 'enterprise') => ({ workspace: { id: 'ws_bench', slug: 'bench', plan } });
  for (const [label, redisUrl, plan] of [
    ['consumeRequest, enterprise (no limiter)', null, 'enterprise'],
    ['consumeRequest, memory', null, 'professional'],
    ['consumeRequest, Redis', REDIS, 'professional'],
  ] as const) {
    const limits = createLimits({
      redisUrl,
      keyPrefix: `${prefix}:direct`,
      logger: createLogger('silent'),
      planLimits: { professional: 1_000_000_000 },
    });
    try {
      for (let i = 0; i < 2000; i++) await limits.consumeRequest(principal(plan));
      const times: number[] = [];
      const n = 20_000;
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        await limits.consumeRequest(principal(plan));
        times.push(performance.now() - t0);
      }
      times.sort((x, y) => x - y);
      out.push({ label, p50: percentile(times, 50), p99: percentile(times, 99), requests: n });
    } finally {
      await limits.close();
    }
  }
  // Back to back, Redis never sleeps and a round trip is a few tens of µs. Over HTTP the
  // limiter's command finds Redis idle for milliseconds (the rest of the request and the other
  // cases), and waking it costs far more on a shared VM; these rows measure that directly, so the
  // HTTP figure can be told apart into the wake-up floor (a bare PING) and the script itself.
  const idle = () => new Promise((resolve) => setTimeout(resolve, 3));
  const limits = createLimits({
    redisUrl: REDIS,
    keyPrefix: `${prefix}:direct`,
    logger: createLogger('silent'),
    planLimits: { professional: 1_000_000_000 },
  });
  const redis = new Redis(REDIS);
  try {
    for (const [label, once] of [
      ['Redis PING after 3 ms idle', () => redis.ping()],
      ['consumeRequest, Redis, after 3 ms idle', () => limits.consumeRequest(principal('professional'))],
    ] as const) {
      const times: number[] = [];
      const n = 2_000;
      for (let i = 0; i < n; i++) {
        await idle();
        const t0 = performance.now();
        await once();
        times.push(performance.now() - t0);
      }
      times.sort((x, y) => x - y);
      out.push({ label, p50: percentile(times, 50), p99: percentile(times, 99), requests: n });
    }
  } finally {
    redis.disconnect();
    await limits.close();
  }
  return out;
}

async function main(): Promise<void> {
  const store = await freshPostgresDatabase();
  const provisionDir = tempDir();
  const env = sharedEnv({ storeUrl: store.url, dataDir: provisionDir, redisUrl: REDIS, extra: { DBQ_LOG_LEVEL: 'warn' } });
  env.DBQ_REDIS_KEY_PREFIX = `dbqbench:${randomBytes(4).toString('hex')}`;
  try {
    const svc = await createServices(loadConfig({ ...env, DBQ_REDIS_URL: undefined }), { logger: createLogger('warn') });
    let entSecret: string;
    let proSecret: string;
    try {
      entSecret = await provision(svc, 'scale', 'enterprise');
      proSecret = await provision(svc, 'limited', 'professional');
    } finally {
      await closeServices(svc);
    }

    const lines = [
      `scale: ${os.cpus().length} cores, load average ${os.loadavg()[0].toFixed(1)} at start; PostgreSQL store ${store.url.replace(/\/\/[^@]*@/, '//')}, target ${PG.replace(/\/\/[^@]*@/, '//')}, Redis ${REDIS}`,
    ];
    if (ONLY.has('throughput')) {
      // The SQLite store: its own data dir (the store file lives there), same secret key.
      const sqliteDir = tempDir();
      const sqliteEnv: Record<string, string> = { ...env, DBQ_DATA_DIR: sqliteDir };
      delete sqliteEnv.DBQ_STORE_URL;
      delete sqliteEnv.DBQ_REDIS_URL;
      let sqliteSecret: string;
      const lite = await createServices(loadConfig(sqliteEnv), { logger: createLogger('warn') });
      try {
        sqliteSecret = await provision(lite, 'scale', 'enterprise');
      } finally {
        await closeServices(lite);
      }
      // Neither the SQLite case nor the PostgreSQL cases count in Redis (enterprise workspace).
      let scale: Throughput[];
      try {
        scale = await throughput(env, entSecret, sqliteEnv, sqliteSecret);
      } finally {
        removeDir(sqliteDir);
      }
      const [lite1, pg1, pg2] = scale;
      lines.push(
        '',
        `Throughput, POST /api/query SELECT 1 on a PostgreSQL connection, ${CONCURRENCY} concurrent clients, ${SECONDS} s each (enterprise workspace):`,
        '',
        '| case | req/s | server CPU µs/request | p50 ms | p99 ms | requests | errors |',
        '|---|---:|---:|---:|---:|---:|---:|',
        ...scale.map(
          (r) =>
            `| ${r.label} | ${r.rps.toFixed(0)} | ${r.cpuPerRequest.toFixed(0)} | ${r.p50.toFixed(3)} | ${r.p99.toFixed(3)} | ${r.requests} | ${r.errors} |`,
        ),
        `| PostgreSQL 1 process vs SQLite 1 process | ${(pg1.rps / lite1.rps).toFixed(2)}x | ${(pg1.cpuPerRequest / lite1.cpuPerRequest).toFixed(2)}x | | | | |`,
        `| PostgreSQL 2 processes vs 1 | ${(pg2.rps / pg1.rps).toFixed(2)}x | | | | | |`,
        '',
        'Target: one process on the PostgreSQL store >= 0.85x one process on the SQLite store.',
      );
    }
    if (ONLY.has('latency')) {
      const http = await limiterOverHttp(env, entSecret, proSecret);
      lines.push(
        '',
        `Limiter latency, POST /api/query SELECT 1, 1 client rotating through the cases for ${SECONDS * 2} s, in-process servers:`,
        '',
        '| case | req/s | p50 ms | p99 ms | requests | errors |',
        '|---|---:|---:|---:|---:|---:|',
        ...http.map((r) => row(r.label, r)),
        `| added by the Redis limiter | | ${(http[1].p50 - http[0].p50).toFixed(3)} | ${(http[1].p99 - http[0].p99).toFixed(3)} | | |`,
        `| added by the per-process limiter | | ${(http[2].p50 - http[0].p50).toFixed(3)} | ${(http[2].p99 - http[0].p99).toFixed(3)} | | |`,
      );
    }
    if (ONLY.has('consume')) {
      const direct = await consumeDirect(env.DBQ_REDIS_KEY_PREFIX);
      lines.push(
        '',
        'consumeRequest alone, sequential calls (back to back, then 3 ms apart as over HTTP):',
        '',
        '| case | | p50 ms | p99 ms | calls | |',
        '|---|---:|---:|---:|---:|---:|',
        ...direct.map((r) => row(r.label, r)),
      );
    }
    lines.push('', 'Target: the limiter adds < 0.3 ms at p50.');
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await deleteRedisKeys(REDIS, env.DBQ_REDIS_KEY_PREFIX);
    await store.drop();
    removeDir(provisionDir);
  }
}

await main();
