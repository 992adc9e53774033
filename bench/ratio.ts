// bench/ratio: dbq's throughput as a ratio to a bare Fastify + pg proxy measured in the same
// run, on this machine, whatever else it is doing: absolute req/s on two shared cores move by
// tens of percent between runs, the ratio of two servers measured side by side much less.
//   `npm run bench:ratio [-- --seconds 5 --rounds 3 --pg postgres://… --root <checkout> --env K=V,… --cases "SELECT 1,100 rows"]`
// Cases, each dbq (a child process on a SQLite store, read-only key, POST /api/query on a
// PostgreSQL connection) against the bare proxy running the same statement:
//   SELECT 1 · 100 rows · 10,000 rows · MCP execute_query SELECT 1 (Streamable HTTP, one
//   session per client) · SELECT 1 with dbq on a PostgreSQL store.
// 32 concurrent clients (bench/support/load.ts), `rounds` rounds of `seconds` per server, each
// made of `slices` (5) alternating slices (bare first, then dbq first, …), medians. Beside
// throughput: each server's event-loop delay p99 under the load (perf_hooks, preloaded by
// bench/support/loop-probe.mjs, so src/ carries no probe), its CPU per request (/proc), and
// the 1-minute load average when the round started.
//
// Ablation: `--variants "base;no-index:DBQ_HISTORY_SEARCH_INDEX=off;…"` runs SELECT 1 only
// (`--profile-case rows100`: the 100-row statement; `mcp`: MCP execute_query SELECT 1),
// against one dbq per variant (each on a copy of the same SQLite store, the environment after
// the colon added), rotated with the bare proxy slice by slice; the first variant is the
// reference the others' savings are counted from. With `--root`, dbq runs from another
// checkout (a scratch copy carrying experimental switches): src/ here is never patched.
//
// Costs: `--costs` measures each lead alone, in this process (bench/support/ratio-costs.ts).
//
// Profile: `--profile <dir>` runs dbq under --cpu-prof with the SELECT 1 load (`--profile-case
// rows100`: the 100-row one; `mcp`: MCP execute_query SELECT 1) for 2 × seconds and prints its top self-time functions over the
// load window only.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freshPostgresDatabase, tempDir } from '../test/support/databases.ts';
import { removeDir } from '../test/support/processes.ts';
import { option } from './support/args.ts';
import { postJson, runLoad, type LoadResult } from './support/load.ts';
import { ensureBuilt } from './support/processes.ts';
import { measureCosts } from './support/ratio-costs.ts';
import { mcpCaller, provision, startBare, startDbqAt, topSelfTime, type Server } from './support/ratio-rig.ts';

const SECONDS = Number(option('seconds', '5'));
const ROUNDS = Number(option('rounds', '3'));
const SLICES = Number(option('slices', '5'));
const PG = option('pg', 'postgres://postgres@127.0.0.1:5432/test');
const ROOT = path.resolve(option('root', '.'));
const VARIANTS = option('variants', '');
const PROFILE = option('profile', '');
const COSTS = process.argv.includes('--costs');
const PROFILE_CASE = option('profile-case', 'select1');
const EXTRA_ENV = parseEnv(option('env', ''));
// `--cases "SELECT 1,100 rows"`: only the cases whose labels are listed (a quick look at one).
const CASES = option('cases', '')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
const CONCURRENCY = 32;
const POOL = 10; // dbq's default maxConnections; the bare proxy gets the same pool size

const SELECT_1 = { sql: 'SELECT 1', maxRows: 1000 };
const ROWS_100 = { sql: 'SELECT g, md5(g::text) FROM generate_series(1, 100) g', maxRows: 1000 };
const ROWS_10K = { sql: 'SELECT g, md5(g::text) FROM generate_series(1, 10000) g', maxRows: 10000 };

function parseEnv(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split(',')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

interface Side {
  server: Server;
  once: () => Promise<boolean>;
}

interface Sample {
  rps: number;
  requests: number;
  errors: number;
  /** Medians over the slices. */
  p50: number;
  loopP99: number;
  cpuUs: number;
  /** The collector's main-thread pause per answered request, µs. */
  gcUs: number;
  load: number;
  /** Each slice's own figures, in slice order: paired with the other sides' same slice. */
  slices: Array<{ rps: number; cpuUs: number }>;
}

/** One round: `slices` turns through `sides` (a slice of SECONDS / slices each, the order
 * rotated by `turn` and then slice by slice), each side's slices added up. Short slices side by
 * side put both servers under the same machine load: on two cores shared with other work, a
 * 5 s stretch of one server then a 5 s stretch of the other measured the machine's drift as
 * much as the servers. Per side: throughput, CPU per answered request, the event loop's p99
 * (per slice, then the median), and the 1-minute load average as the round began. */
const warmed = new Set<Server>();

async function round(sides: Side[], slices: number, turn: number, warm: boolean): Promise<Sample[]> {
  // A server's first load runs longer: dbq's JIT and caches took ~3 s at a load average of 20.
  if (warm) for (const side of sides) await runLoad('warm', CONCURRENCY, warmed.has(side.server) ? 1 : 3, side.once);
  for (const side of sides) warmed.add(side.server);
  const load = os.loadavg()[0];
  const acc = sides.map(() => ({
    requests: 0,
    errors: 0,
    seconds: 0,
    cpu: 0,
    gcMs: 0,
    p50: [] as number[],
    loop: [] as number[],
    slices: [] as Sample['slices'],
  }));
  for (let slice = 0; slice < slices; slice++) {
    for (let k = 0; k < sides.length; k++) {
      const i = (turn + slice + k) % sides.length;
      const side = sides[i];
      await side.server.loop();
      const cpu0 = side.server.cpu();
      const r: LoadResult = await runLoad(side.server.label, CONCURRENCY, SECONDS / slices, side.once);
      const cpu = side.server.cpu() - cpu0;
      acc[i].cpu += cpu;
      acc[i].slices.push({ rps: r.rps, cpuUs: (cpu * 1e6) / Math.max(1, r.requests - r.errors) });
      const after = await side.server.loop();
      acc[i].loop.push(after.p99);
      acc[i].gcMs += after.gcMs;
      acc[i].requests += r.requests;
      acc[i].errors += r.errors;
      acc[i].seconds += r.seconds;
      acc[i].p50.push(r.p50);
    }
  }
  return acc.map((a) => ({
    rps: a.requests / a.seconds,
    requests: a.requests,
    errors: a.errors,
    p50: median(a.p50),
    loopP99: median(a.loop),
    cpuUs: (a.cpu * 1e6) / Math.max(1, a.requests - a.errors),
    gcUs: (a.gcMs * 1e3) / Math.max(1, a.requests - a.errors),
    load,
    slices: a.slices,
  }));
}

function rest(server: Server, key: string | null, body: { sql: string; maxRows: number }): Side {
  if (key === null) return { server, once: () => postJson(`${server.url}/query`, JSON.stringify({ sql: body.sql })) };
  const text = JSON.stringify({ connectionId: 'pg', ...body });
  return { server, once: () => postJson(`${server.url}/api/query`, text, { authorization: `Bearer ${key}` }) };
}

/** A request answered as it should be, once, before any load: a bench of error pages is no bench. */
async function check(side: Side, label: string): Promise<void> {
  if (!(await side.once())) throw new Error(`${label}: ${side.server.label} did not answer the request with success`);
}

interface Case {
  label: string;
  bare: Side;
  dbq: Side;
  target?: number;
  /** Slices per round (default SLICES); one for statements whose answers take most of a slice. */
  slices?: number;
}

const f0 = (n: number) => n.toFixed(0);
const f2 = (n: number) => n.toFixed(2);
const range = (xs: number[]) => `${f2(Math.min(...xs))}–${f2(Math.max(...xs))}`;

async function ratios(bare: Server, sqliteDbq: Server, pgDbq: Server, key: string, pgKey: string): Promise<string[]> {
  const mcp: Side = { server: sqliteDbq, once: await mcpCaller(sqliteDbq.url, key, CONCURRENCY, { connectionId: 'pg', sql: 'SELECT 1' }) };
  const all: Case[] = [
    { label: 'SELECT 1', bare: rest(bare, null, SELECT_1), dbq: rest(sqliteDbq, key, SELECT_1), target: 0.5 },
    { label: '100 rows', bare: rest(bare, null, ROWS_100), dbq: rest(sqliteDbq, key, ROWS_100), target: 0.7 },
    { label: '10,000 rows', bare: rest(bare, null, ROWS_10K), dbq: rest(sqliteDbq, key, ROWS_10K), slices: 1 },
    { label: 'MCP execute_query SELECT 1', bare: rest(bare, null, SELECT_1), dbq: mcp },
    { label: 'SELECT 1, PostgreSQL store', bare: rest(bare, null, SELECT_1), dbq: rest(pgDbq, pgKey, SELECT_1) },
  ];
  const cases = CASES.length ? all.filter((c) => CASES.includes(c.label)) : all;
  if (cases.length === 0) throw new Error(`--cases matched none of: ${all.map((c) => c.label).join(', ')}`);
  for (const c of cases) {
    await check(c.bare, c.label);
    await check(c.dbq, c.label);
  }
  const got = cases.map(() => ({ bare: [] as Sample[], dbq: [] as Sample[] }));
  for (let r = 0; r < ROUNDS; r++) {
    for (const [i, c] of cases.entries()) {
      // Alternating: who goes first changes every round (and slice), so a drift in the
      // machine's load does not always land on the same side.
      const [b, d] = await round([c.bare, c.dbq], c.slices ?? SLICES, r + i, r === 0);
      got[i].bare.push(b);
      got[i].dbq.push(d);
      process.stderr.write(
        `round ${r + 1}/${ROUNDS} ${c.label}: bare ${f0(b.rps)}, dbq ${f0(d.rps)} req/s; CPU µs/req ${f0(b.cpuUs)} / ${f0(d.cpuUs)}; load ${f2(b.load)}\n`,
      );
    }
  }
  const lines = [
    `ratio: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), Node ${process.version}, ${CONCURRENCY} concurrent clients, ${ROUNDS} alternating rounds of ${SECONDS} s, pool ${POOL}, target ${PG.replace(/\/\/[^@]*@/, '//')}, dbq from ${ROOT}${Object.keys(EXTRA_ENV).length ? ` with ${JSON.stringify(EXTRA_ENV)}` : ''}`,
    '',
    '| case | bare req/s | dbq req/s | **dbq/bare** | rounds | target | met | CPU µs/req dbq / bare | CPU ratio | GC pause µs/req dbq / bare | loop p99 ms dbq / bare | p50 ms dbq / bare | load avg | errors dbq / bare |',
    '|---|---:|---:|---:|---|---:|---|---|---:|---|---|---|---|---|',
  ];
  for (const [i, c] of cases.entries()) {
    const { bare: b, dbq: d } = got[i];
    const ratio = median(d.map((s) => s.rps)) / median(b.map((s) => s.rps));
    const perRound = d.map((s, r) => s.rps / b[r].rps);
    const sum = (xs: Sample[]) => xs.reduce((n, s) => n + s.errors, 0);
    lines.push(
      `| ${c.label} | ${f0(median(b.map((s) => s.rps)))} | ${f0(median(d.map((s) => s.rps)))} | **${f2(ratio)}x** | ${perRound.map(f2).join(', ')} | ${c.target === undefined ? '' : `≥ ${c.target}x`} | ${c.target === undefined ? '' : ratio >= c.target ? 'met' : 'NOT met'} | ${f0(median(d.map((s) => s.cpuUs)))} / ${f0(median(b.map((s) => s.cpuUs)))} | ${f2(median(b.map((s) => s.cpuUs)) / median(d.map((s) => s.cpuUs)))}x | ${f0(median(d.map((s) => s.gcUs)))} / ${f0(median(b.map((s) => s.gcUs)))} | ${f2(median(d.map((s) => s.loopP99)))} / ${f2(median(b.map((s) => s.loopP99)))} | ${f2(median(d.map((s) => s.p50)))} / ${f2(median(b.map((s) => s.p50)))} | ${range([...b, ...d].map((s) => s.load))} | ${sum(d)} / ${sum(b)} |`,
    );
  }
  lines.push(
    '',
    `dbq/bare: median dbq req/s over median bare req/s (rounds: the same per round; each round ${SLICES} alternating slices`,
    "per server). CPU µs/req: the server process's user+system time per answered request; CPU ratio: bare's over",
    "dbq's, the ratio the servers' own work would allow on an otherwise idle machine (PostgreSQL and the client",
    "excluded). GC pause: the garbage collector's main-thread pauses per answered request (PerformanceObserver",
    "'gc'). loop p99: the event loop's delay p99 in the server under the load (monitorEventLoopDelay, 1 ms",
    'resolution; median of the slices). load avg: 1-minute load average as each round began (min–max).',
    '',
    'Targets: SELECT 1 ≥ 0.5x, 100 rows ≥ 0.7x.',
  );
  return lines;
}

async function ablation(bare: Server, variants: Array<{ label: string; server: Server }>, key: string): Promise<string[]> {
  const body = PROFILE_CASE === 'rows100' ? ROWS_100 : SELECT_1;
  const sides: Side[] = [rest(bare, null, body)];
  for (const v of variants)
    sides.push(
      PROFILE_CASE === 'mcp'
        ? { server: v.server, once: await mcpCaller(v.server.url, key, CONCURRENCY, { connectionId: 'pg', sql: 'SELECT 1' }) }
        : rest(v.server, key, body),
    );
  for (const s of sides) await check(s, 'ablation');
  const got = sides.map(() => [] as Sample[]);
  for (let r = 0; r < ROUNDS; r++) {
    const samples = await round(sides, SLICES, r, r === 0);
    for (const [i, x] of samples.entries()) {
      got[i].push(x);
      process.stderr.write(
        `round ${r + 1}/${ROUNDS} ${sides[i].server.label}: ${f0(x.rps)} req/s, ${f0(x.cpuUs)} µs CPU/req, load ${f2(x.load)}\n`,
      );
    }
  }
  const rps = got.map((xs) => median(xs.map((s) => s.rps)));
  const cpu = got.map((xs) => median(xs.map((s) => s.cpuUs)));
  // Paired: each slice of a variant against the reference's slice of the same turn (seconds
  // apart, under the same machine load), then the median of those pairs.
  const pairs = (i: number, f: (v: { rps: number; cpuUs: number }, ref: { rps: number; cpuUs: number }) => number) =>
    median(got[i].flatMap((s, r) => s.slices.map((v, k) => f(v, got[1][r].slices[k]))));
  const lines = [
    `ratio --variants: ${PROFILE_LABEL[PROFILE_CASE] ?? 'SELECT 1'}, SQLite store, read-only key; ${os.cpus().length} cores, ${CONCURRENCY} clients, ${ROUNDS} rounds of ${SLICES} rotated slices (${SECONDS} s a round per server), dbq from ${ROOT}`,
    '',
    '| variant | req/s | dbq/bare | req/s vs reference (paired) | wall µs/req saved (paired) | CPU µs/req | CPU µs/req saved (paired) | loop p99 ms | load avg |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---|',
    `| bare proxy | ${f0(rps[0])} | 1.00x | | | ${f0(cpu[0])} | | ${f2(median(got[0].map((s) => s.loopP99)))} | ${range(got[0].map((s) => s.load))} |`,
  ];
  for (let i = 1; i < sides.length; i++) {
    const ref = i === 1;
    const gain = pairs(i, (v, r) => v.rps / r.rps - 1) * 100;
    lines.push(
      `| ${variants[i - 1].label} | ${f0(rps[i])} | ${f2(rps[i] / rps[0])}x | ${ref ? 'reference' : `${gain >= 0 ? '+' : ''}${gain.toFixed(1)}%`} | ${ref ? '' : f0(pairs(i, (v, r) => 1e6 / r.rps - 1e6 / v.rps))} | ${f0(cpu[i])} | ${ref ? '' : f0(pairs(i, (v, r) => r.cpuUs - v.cpuUs))} | ${f2(median(got[i].map((s) => s.loopP99)))} | ${range(got[i].map((s) => s.load))} |`,
    );
  }
  lines.push(
    '',
    "Paired columns: the median over every slice of the variant against the reference's slice of the same turn.",
    'wall µs/req saved: 1e6/req/s of the reference less that of the variant (the time a request occupies the',
    "bottleneck at 32 clients); CPU µs/req saved: the dbq process's own CPU per request, reference less variant.",
  );
  return lines;
}

const PROFILE_LABEL: Record<string, string> = { rows100: '100 rows', mcp: 'MCP execute_query SELECT 1' };

async function profile(dir: string, env: Record<string, string>, key: string): Promise<string[]> {
  fs.mkdirSync(dir, { recursive: true });
  const before = new Set(fs.readdirSync(dir));
  const dbq = await startDbqAt('dbq (profiled)', ROOT, env, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
  let from: number;
  let to: number;
  let r: LoadResult;
  try {
    const side: Side =
      PROFILE_CASE === 'mcp'
        ? { server: dbq, once: await mcpCaller(dbq.url, key, CONCURRENCY, { connectionId: 'pg', sql: 'SELECT 1' }) }
        : rest(dbq, key, PROFILE_CASE === 'rows100' ? ROWS_100 : SELECT_1);
    await check(side, 'profile');
    await runLoad('warm', CONCURRENCY, 2, side.once);
    from = Number(process.hrtime.bigint() / 1000n);
    r = await runLoad('profile', CONCURRENCY, SECONDS * 2, side.once);
    to = Number(process.hrtime.bigint() / 1000n);
  } finally {
    await dbq.stop();
  }
  const written = fs.readdirSync(dir).filter((f) => f.endsWith('.cpuprofile') && !before.has(f));
  if (written.length === 0) throw new Error(`no .cpuprofile written in ${dir}`);
  const file = path.join(dir, written[0]);
  const top = topSelfTime(file, from, to, 30);
  return [
    `ratio --profile: dbq under ${PROFILE_LABEL[PROFILE_CASE] ?? 'SELECT 1'} (SQLite store, read-only key), ${CONCURRENCY} clients for ${SECONDS * 2} s, ${f0(r.rps)} req/s, load avg ${f2(os.loadavg()[0])}; ${file}`,
    `${top.samples} samples in the load window, ${((top.idle / Math.max(1, top.samples)) * 100).toFixed(1)}% idle`,
    '',
    '| self time | function |',
    '|---:|---|',
    ...top.rows.map((row) => `| ${(row.share * 100).toFixed(1)}% | ${row.name.replace(/\|/g, '\\|')} |`),
    '',
    '| self time | module |',
    '|---:|---|',
    ...top.modules.map((row) => `| ${(row.share * 100).toFixed(1)}% | ${row.name} |`),
  ];
}

async function main(): Promise<void> {
  if (ROOT === path.resolve('.')) ensureBuilt();
  const dirs: string[] = [];
  const servers: Server[] = [];
  let store: { url: string; drop(): Promise<void> } | null = null;
  try {
    const dataDir = tempDir('dbq-ratio-');
    dirs.push(dataDir);
    const env = { DBQ_DATA_DIR: dataDir, DBQ_LOG_LEVEL: 'warn', ...EXTRA_ENV };
    const key = await provision(env, PG, POOL);
    let lines: string[];
    if (PROFILE) {
      lines = await profile(path.resolve(PROFILE), env, key);
    } else if (COSTS) {
      const costs = await measureCosts(env, key, PG);
      lines = [
        `ratio --costs: each lead alone, CPU µs per request, in-process; ${os.cpus().length} cores, load avg ${f2(os.loadavg()[0])}`,
        '',
        '| cost | dbq CPU µs/req | PostgreSQL backend CPU µs/req | how |',
        '|---|---:|---:|---|',
        ...costs.map((c) => `| ${c.label} | ${c.dbqUs.toFixed(1)} | ${c.pgUs === undefined ? '' : c.pgUs.toFixed(1)} | ${c.note} |`),
      ];
    } else {
      const bare = await startBare(PG, POOL);
      servers.push(bare);
      if (VARIANTS) {
        const variants: Array<{ label: string; server: Server }> = [];
        for (const spec of VARIANTS.split(';').filter(Boolean)) {
          const at = spec.indexOf(':');
          const label = at < 0 ? spec : spec.slice(0, at);
          // Each on its own copy of the provisioned store: a SQLite store serves one process.
          const copy = tempDir('dbq-ratio-');
          dirs.push(copy);
          fs.cpSync(dataDir, copy, { recursive: true });
          const server = await startDbqAt(label, ROOT, { ...env, DBQ_DATA_DIR: copy, ...parseEnv(at < 0 ? '' : spec.slice(at + 1)) });
          servers.push(server);
          variants.push({ label, server });
        }
        lines = await ablation(bare, variants, key);
      } else {
        const sqliteDbq = await startDbqAt('dbq', ROOT, env);
        servers.push(sqliteDbq);
        store = await freshPostgresDatabase();
        const pgDir = tempDir('dbq-ratio-');
        dirs.push(pgDir);
        const pgEnv = { ...env, DBQ_DATA_DIR: pgDir, DBQ_STORE_URL: store.url };
        const pgKey = await provision(pgEnv, PG, POOL);
        const pgDbq = await startDbqAt('dbq (PostgreSQL store)', ROOT, pgEnv);
        servers.push(pgDbq);
        lines = await ratios(bare, sqliteDbq, pgDbq, key, pgKey);
      }
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await store?.drop();
    for (const d of dirs) removeDir(d);
  }
}

await main();
