// bench/catalog: what the catalog change check costs. It runs at most once a
// second per connection record while reads arrive, before the read that finds it due.
//   On a fresh database and on one with --tables tables (id serial primary key, name text,
//   created timestamptz default now(): ~30 pg_attribute and ~13 pg_depend rows each):
//   - old check   the count + newest-xmin fingerprint it replaces (blind to late commits)
//   - reference   the state a load takes first (readFingerprint)
//   - check       the state compared with a reference (checkFingerprint): the query alone,
//                 then as the engine runs it (BEGIN READ ONLY + settings, check, ROLLBACK)
//   - scan floor  count(*) of every watched catalog: the check cannot cost less than reading
//                 them (it reads each row's xmin; whole rows only for recent ones)
//   with the rows the check scans. Figures are per call, median / p90 / min over --runs; the
//   machine's load average is printed, since a shared machine moves them a lot.
// Usage: node --import tsx bench/catalog.ts [--tables 5000] [--runs 21]
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import {
  checkFingerprint,
  readFingerprint,
  WATCHED_CATALOGS,
  type CatalogReference,
} from '../src/engines/postgres/postgres-catalog-freshness.ts';
import { freshPostgresDatabase } from '../test/support/databases.ts';
import { LEGACY_FINGERPRINT } from '../test/support/legacy-catalog-fingerprint.ts';
import { option } from './support/args.ts';
import { percentile } from './support/load.ts';

const TABLES = Number(option('tables', '5000'));
const RUNS = Number(option('runs', '21'));
// Each CREATE TABLE here locks ~5 relations; 200 per transaction stays far inside the lock table.
const TABLES_PER_TRANSACTION = 200;

async function timed(fn: () => Promise<unknown>): Promise<string> {
  await fn();
  const ms: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    await fn();
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  return `${percentile(ms, 50).toFixed(1).padStart(7)} / ${percentile(ms, 90).toFixed(1).padStart(7)} / ${ms[0].toFixed(1).padStart(7)} ms`;
}

async function measure(label: string, tables: number): Promise<void> {
  const db = await freshPostgresDatabase();
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    if (tables > 0) {
      const t = performance.now();
      for (let from = 1; from <= tables; from += TABLES_PER_TRANSACTION) {
        const to = Math.min(tables, from + TABLES_PER_TRANSACTION - 1);
        await c.query(
          `DO $$ BEGIN FOR i IN ${from}..${to} LOOP
             EXECUTE format('CREATE TABLE bench_t%s (id serial PRIMARY KEY, name text, created timestamptz DEFAULT now())', i);
           END LOOP; END $$`,
        );
      }
      console.log(`  (${tables} tables created in ${((performance.now() - t) / 1000).toFixed(1)} s)`);
    }
    const query = (text: string, values?: unknown[]) => c.query(text, values);
    const inSession = async <T>(work: () => Promise<T>): Promise<T> => {
      await c.query(
        "BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ; SET LOCAL statement_timeout = 15000; SET LOCAL search_path = ''; SET LOCAL jit = off",
      );
      try {
        return await work();
      } finally {
        await c.query('ROLLBACK');
      }
    };
    const rows = await c.query(WATCHED_CATALOGS.map((name) => `SELECT count(*) AS n FROM pg_catalog.${name}`).join(' UNION ALL '));
    const scanned = rows.rows.reduce((sum, r) => sum + Number(r.n), 0);
    const big = await c.query(
      'SELECT (SELECT count(*) FROM pg_attribute) AS attribute, (SELECT count(*) FROM pg_depend) AS depend, (SELECT count(*) FROM pg_class) AS class',
    );
    const b = big.rows[0];
    console.log(
      `${label}: ${scanned} rows in ${WATCHED_CATALOGS.length} watched catalogs (pg_attribute ${b.attribute}, pg_depend ${b.depend}, pg_class ${b.class})`,
    );
    const ref: CatalogReference = await inSession(() => readFingerprint(query));
    const floor = WATCHED_CATALOGS.map((name) => `SELECT count(*) FROM pg_catalog.${name}`).join(' UNION ALL ');
    console.log(`  scan floor            ${await timed(() => inSession(() => c.query(floor)))}`);
    console.log(`  old check             ${await timed(() => inSession(() => c.query(LEGACY_FINGERPRINT)))}`);
    console.log(`  reference (load)      ${await timed(() => inSession(() => readFingerprint(query)))}`);
    await c.query("BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ; SET LOCAL search_path = ''; SET LOCAL jit = off");
    console.log(`  check, query alone    ${await timed(() => checkFingerprint(query, ref))}`);
    await c.query('ROLLBACK');
    console.log(`  check, as the engine  ${await timed(() => inSession(() => checkFingerprint(query, ref)))}`);
    if ((await inSession(() => checkFingerprint(query, ref))) === null) console.log('  !! the check saw a change on an idle database');
  } finally {
    await c.end();
    await db.drop();
  }
}

console.log(
  `bench:catalog — median / p90 / min over ${RUNS} runs; ${os.cpus().length} CPUs, load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
await measure('fresh database', 0);
await measure(`${TABLES} tables`, TABLES);
console.log(
  `load average now ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
