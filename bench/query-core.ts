// bench/query-core: where the CPU of one query goes, in one process and without HTTP, so the
// figures hold still on a small shared machine (bench/query-overhead's req/s move ±20%).
// CPU µs per statement (process.cpuUsage over the run), 16 concurrent, against PostgreSQL:
//   pg pool           — pool.query, the raw driver (the baseline)
//   read pipeline     — the statement alone, then inside dbq's read-only pipeline (BEGIN READ
//                       ONLY, statement, advisory unlock + reseed, ROLLBACK; named statements), on the
//                       same pg connections: what the read-only mode costs the client
//   runQuery          — dbq's whole core path: key and connection look-ups, guard, permission,
//                       timeout and cancel, running registry, the engine, the history entry
//   history entry     — svc.history.write alone, 16 at a time (one group commit per loop turn)
//   read decision     — the guard's cached verdict alone (the whole check before the catalog check existed),
//                       then decideStatement: the verdict plus the catalog allowlist check of
//                       every function, operator, cast and relation, and the user types in
//                       play (≤ ~5 µs), beside last turn's figures (README)
//   catalog reload    — reading the catalog rows the read policy judges, judging them on the
//                       guard's worker thread (first and warm), and the longest the event loop
//                       was held meanwhile (it must not be: the judging is off the loop)
// Usage: node --import tsx bench/query-core.ts [--ops 20000] [--pg postgres://postgres@127.0.0.1:5432/test]
import { cliActor } from '../src/audit/audit.ts';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadConfig } from '../src/config.ts';
import { createConnection, getConnectionRow } from '../src/connections/connections.ts';
import { PipelinedStatement, type Step } from '../src/engines/postgres/postgres-batch.ts';
import { RESEED } from '../src/engines/postgres/postgres.ts';
import { TEXT_TYPES } from '../src/engines/postgres/postgres-cursor.ts';
import { createLogger } from '../src/logger.ts';
import { decideStatement } from '../src/guard/decide.ts';
import { runQuery } from '../src/query/run.ts';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { readCatalogText } from '../src/engines/postgres/postgres-catalog-rows.ts';
import { buildCatalogOffThread } from '../src/guard/catalog-off-thread.ts';
import { classifyStatement } from '../src/guard/guard.ts';
import { closeServices, createServices } from '../src/services.ts';
import { authenticateKey, createApiKey } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { getWorkspace } from '../src/workspaces/workspaces.ts';
import { option } from './support/args.ts';

const OPS = Number(option('ops', '20000'));
const PG = option('pg', 'postgres://postgres@127.0.0.1:5432/test');
const CONCURRENCY = 16;
const DECISION_CASES = [
  'SELECT 1',
  "SELECT c.relname, lower(n.nspname), pg_size_pretty(pg_relation_size(c.oid)), now() - interval '1 day' FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname <> 'pg_catalog' ORDER BY 3 DESC LIMIT 10",
];
/** Last turn's allowlist check, µs (README, read-only v2), for the same statements. */
const LAST_TURN_CHECK = ['0.20', '1.99–2.22'];
const CASES = [
  { label: 'SELECT 1', sql: 'SELECT 1' },
  { label: '100 rows', sql: 'SELECT g, md5(g::text) FROM generate_series(1, 100) g' },
];

/** CPU µs per call of `once`, CONCURRENCY at a time, after a warm-up of a tenth as many. */
async function cpuPerOp(once: () => Promise<unknown>): Promise<number> {
  const run = async (n: number) => {
    let left = n;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (left-- > 0) await once();
      }),
    );
  };
  await run(Math.ceil(OPS / 10));
  const before = process.cpuUsage();
  await run(OPS);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / OPS;
}

const RELOADS = 5;

/** What one reload of a connection's read policy costs, and whether it holds the event loop. */
async function catalogReload(pool: pg.Pool): Promise<{ counts: string; readMs: string; firstMs: string; warmMs: string; heldMs: string }> {
  const client = await pool.connect();
  const reads: number[] = [];
  const builds: number[] = [];
  const delay = monitorEventLoopDelay({ resolution: 1 });
  let counts = '';
  try {
    delay.enable();
    for (let i = 0; i <= RELOADS; i++) {
      await client.query('BEGIN');
      await client.query("SET LOCAL search_path = ''");
      await client.query('SET LOCAL jit = off');
      const start = performance.now();
      const catalogText = await readCatalogText((text) => client.query(text));
      const read = performance.now();
      await buildCatalogOffThread(catalogText);
      builds.push(performance.now() - read);
      reads.push(read - start);
      await client.query('ROLLBACK');
      counts = `${(catalogText.functions.length / 1024).toFixed(0)} KiB of functions, ${(catalogText.relations.length / 1024).toFixed(0)} KiB of relations`;
    }
    delay.disable();
  } finally {
    client.release();
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  return {
    counts,
    readMs: median(reads).toFixed(0),
    firstMs: builds[0].toFixed(0),
    warmMs: median(builds.slice(1)).toFixed(0),
    heldMs: (delay.max / 1e6).toFixed(1),
  };
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dbq-bench-core-'));
  const svc = await createServices(loadConfig({ DBQ_DATA_DIR: dataDir, DBQ_LOG_LEVEL: 'warn' }), { logger: createLogger('warn') });
  const raw = new pg.Pool({ connectionString: PG, max: 10, types: TEXT_TYPES });
  const rows: string[] = [];
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

    // Each variant gets its own names: a connection that prepared one set must not be asked
    // to prepare it again.
    let variant = 0;
    const pipeline = (sql: string, readOnly: boolean) => {
      const tag = `bench_${variant++}`;
      const setup: Step[] = readOnly ? [{ name: `${tag}_begin`, text: 'BEGIN READ ONLY' }] : [];
      // The same teardown as dbq's read pipeline: advisory unlock and PRNG reseed, ROLLBACK.
      const teardown: Step[] = readOnly
        ? [
            { name: `${tag}_unlock`, text: `SELECT pg_advisory_unlock_all(), ${RESEED}` },
            { name: `${tag}_rollback`, text: 'ROLLBACK' },
          ]
        : [];
      const prepared = new WeakSet<pg.PoolClient>();
      return async () => {
        const client = await raw.connect();
        try {
          const statement = new PipelinedStatement(setup, sql, [], 1000, 1 << 30, teardown, !prepared.has(client));
          // pg returns a submittable itself, not a promise (the cast only picks an overload);
          // its errors reach statement.done through handleError.
          void client.query(statement as unknown as pg.QueryConfig);
          await statement.done;
          prepared.add(client);
        } finally {
          client.release();
        }
      };
    };

    for (const c of CASES) {
      const pool = await cpuPerOp(() => raw.query({ text: c.sql, rowMode: 'array' }));
      const alone = await cpuPerOp(pipeline(c.sql, false));
      const readOnly = await cpuPerOp(pipeline(c.sql, true));
      const core = await cpuPerOp(() =>
        runQuery(
          svc,
          principal,
          { connectionId: 'pg', sql: c.sql, params: [], maxRows: 1000, timeoutMs: 30_000, rowFormat: 'arrays' },
          { source: 'api' },
        ),
      );
      rows.push(
        `| ${c.label} | ${pool.toFixed(1)} | ${alone.toFixed(1)} | ${readOnly.toFixed(1)} | ${core.toFixed(1)} | ${(core / pool).toFixed(2)}x |`,
      );
    }
    // The allowlist check: same text every time, so the parse is the guard's cache hit in both
    // columns and the difference is what the catalog check adds.
    const engine = svc.pools.get(await getConnectionRow(svc.db, ws.id, 'pg'));
    const decisions: string[] = [];
    for (const sql of DECISION_CASES) {
      const verdictOnly = await cpuPerOp(() => classifyStatement('postgres', sql));
      const decided = await cpuPerOp(() => decideStatement(svc.readGuards.of(engine), sql));
      const last = LAST_TURN_CHECK[decisions.length];
      decisions.push(
        `| \`${sql.length > 60 ? sql.slice(0, 57) + '…' : sql}\` | ${verdictOnly.toFixed(2)} | ${decided.toFixed(2)} | ${(decided - verdictOnly).toFixed(2)} | ${last} |`,
      );
    }
    const reload = await catalogReload(raw);
    const entry = {
      principal,
      queryId: 'q_bench',
      connection: { id: 'c_bench', name: 'pg' },
      sql: 'SELECT 1',
      statementType: 'select',
      status: 'succeeded' as const,
      rowCount: 1,
      affectedRows: null,
      durationMs: 1,
      error: null,
      source: 'api' as const,
    };
    const history = await cpuPerOp(() => svc.history.write(entry));
    process.stdout.write(
      [
        `query-core: CPU µs per statement in one process (no HTTP), ${CONCURRENCY} concurrent, ${OPS} per figure, ${os.cpus().length} cores`,
        '',
        '| case | pg pool | statement alone (pipeline) | in the read-only pipeline | dbq runQuery | runQuery / pool |',
        '|---|---:|---:|---:|---:|---:|',
        ...rows,
        '',
        `History entry alone (svc.history.write, ${CONCURRENCY} at a time, SQLite store): ${history.toFixed(1)} µs.`,
        '',
        'Read decision, CPU µs per statement (before: the cached parser verdict alone; after: plus the catalog allowlist check):',
        '',
        "| statement | before (verdict) | after (decideStatement) | allowlist check | last turn's check |",
        '|---|---:|---:|---:|---:|',
        ...decisions,
        '',
        `Catalog reload (${reload.counts}): rows read ${reload.readMs} ms; judged on the worker thread ${reload.firstMs} ms first, ${reload.warmMs} ms warm (median of ${RELOADS}); event loop held at most ${reload.heldMs} ms meanwhile (last turn: the judging ran on the event loop).`,
        '',
      ].join('\n'),
    );
  } finally {
    await raw.end();
    await closeServices(svc);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
