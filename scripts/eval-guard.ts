// How often dbq's read decision refuses a real read: the gold queries of the Spider dev set,
// every one a plain SELECT, asked as for a read-only key on a SQLite connection.
//   npm run eval:guard -- <spider-dev folder>
// The folder holds questions.json ([{db_id, question, query}]) and databases/<db_id>.sqlite.
// It is only read: the databases are copied to a temporary directory first, and the
// connections point at the copies.
//
// For each gold query: decideStatement() (src/guard/decide.ts, the guard plus what only the
// connection can answer) must say `read`; each accepted query is then executed the way
// /api/query runs a read (engine read-only mode, timeout, row and byte caps). Prints the total,
// the refusals (target 0) with up to 20 examples, the execution failures, and the median time
// per decision. Exit code 0 whatever the counts; 2 when the folder is not a spider-dev folder.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { toEngineConfig } from '../src/connections/connections.ts';
import type { Engine } from '../src/engines/engine.ts';
import { createEngine } from '../src/engines/index.ts';
import { ConnectionGuard } from '../src/guard/connection-guard.ts';
import { decideStatement } from '../src/guard/decide.ts';

interface Question {
  db_id: string;
  question: string;
  query: string;
}

interface Example {
  db: string;
  sql: string;
  reason: string;
}

const MAX_EXAMPLES = 20;
// What a connection record gets by default (max_connections 10, DBQ_POOL_ACQUIRE_TIMEOUT_MS,
// DBQ_CONNECTION_TEST_TIMEOUT_MS).
const POOL = { maxConnections: 10, acquireTimeoutMs: 10_000, connectTimeoutMs: 5_000 };
const EXECUTE = { params: [], readOnly: true, timeoutMs: 10_000, maxRows: 10_000, maxBytes: 32 * 1024 * 1024 } as const;

function usage(problem: string): never {
  console.error(`${problem}

usage: npm run eval:guard -- <spider-dev folder>
  The folder must hold questions.json ([{db_id, question, query}]) and databases/<db_id>.sqlite.`);
  process.exit(2);
}

function loadQuestions(dir: string): Question[] {
  const file = path.join(dir, 'questions.json');
  if (!fs.existsSync(file)) usage(`no questions.json in ${dir}`);
  if (!fs.statSync(path.join(dir, 'databases'), { throwIfNoEntry: false })?.isDirectory()) usage(`no databases/ folder in ${dir}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    usage(`${file} is not JSON: ${(err as Error).message}`);
  }
  const ok = Array.isArray(parsed) && parsed.every((q) => q && typeof q.db_id === 'string' && typeof q.query === 'string');
  if (!ok) usage(`${file} is not a list of {db_id, question, query}`);
  return parsed as Question[];
}

function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** SqliteEngine.close() waits for its runner processes to exit, but an idle (parked) runner is
 * unref'd: with nothing else keeping the event loop alive, Node would exit mid-close, silently
 * and before the report. Hold the loop open (at most 10 s) until close() settles. */
async function closeEngine(engine: Engine): Promise<void> {
  const keepAlive = setInterval(() => {}, 1_000);
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([engine.close().catch(() => {}), new Promise((resolve) => (timer = setTimeout(resolve, 10_000)))]);
  } finally {
    clearTimeout(timer);
    clearInterval(keepAlive);
  }
}

/** Failures grouped by message, quoted names and literals blanked: the few real causes behind
 * hundreds of failures (better-sqlite3 builds SQLite without double-quoted string literals, so
 * `WHERE x = "USA"` is `no such column: "USA"`). */
function causes(list: Example[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const { reason } of list) {
    const cause = reason.replace(/"[^"]*"|'[^']*'|`[^`]*`/g, '…');
    counts.set(cause, (counts.get(cause) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1]);
}

function oneLine(sql: string): string {
  return sql.replace(/\s+/g, ' ').trim();
}

function message(err: unknown): string {
  return err instanceof Error ? `${err.constructor.name}: ${err.message}` : String(err);
}

async function main(): Promise<void> {
  const arg = process.argv[2];
  if (!arg) usage('missing the spider-dev folder');
  const dir = path.resolve(arg);
  const questions = loadQuestions(dir);

  const byDb = new Map<string, Question[]>();
  for (const q of questions) byDb.set(q.db_id, [...(byDb.get(q.db_id) ?? []), q]);

  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'dbq-eval-guard-'));
  const refused: Example[] = [];
  const invalid: Example[] = [];
  const refusedByKind = new Map<string, number>();
  const failed: Example[] = [];
  const missing: string[] = [];
  const decisionUs: number[] = [];
  let accepted = 0;
  let executed = 0;
  let skipped = 0;
  const started = performance.now();

  try {
    for (const [db, list] of byDb) {
      const source = path.join(dir, 'databases', `${db}.sqlite`);
      if (!fs.existsSync(source)) {
        missing.push(db);
        skipped += list.length;
        continue;
      }
      const copy = path.join(work, `${db}.sqlite`);
      fs.copyFileSync(source, copy);
      fs.chmodSync(copy, 0o644);
      const engine = createEngine(
        toEngineConfig(
          { engine: 'sqlite', host: null, port: null, database: `${db}.sqlite`, user: null, password: null, ssl: false },
          { sqliteWorkspaceDir: work, ...POOL },
        ),
      );
      const guard = new ConnectionGuard(engine);
      try {
        for (const q of list) {
          let kind: string;
          let reason: string;
          const t0 = performance.now();
          try {
            const verdict = await decideStatement(guard, q.query);
            kind = String(verdict.kind);
            reason = verdict.reason ?? '';
          } catch (err) {
            kind = 'threw';
            reason = message(err);
          }
          decisionUs.push((performance.now() - t0) * 1000);
          if (kind === 'invalid') {
            // The engine cannot compile it: 422 for every role, not a refusal of a read.
            invalid.push({ db, sql: q.query, reason });
            continue;
          }
          if (kind !== 'read') {
            refusedByKind.set(kind, (refusedByKind.get(kind) ?? 0) + 1);
            refused.push({ db, sql: q.query, reason: `[${kind}] ${reason}` });
            continue;
          }
          accepted++;
          try {
            await engine.execute({ sql: q.query, ...EXECUTE });
            executed++;
          } catch (err) {
            failed.push({ db, sql: q.query, reason: message(err) });
          }
        }
      } finally {
        await closeEngine(engine);
      }
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }

  const seconds = (performance.now() - started) / 1000;
  const kinds = [...refusedByKind].map(([k, n]) => `${k} ${n}`).join(', ');
  console.log(`spider-dev gold queries: ${questions.length} (${byDb.size} databases) from ${dir}`);
  if (missing.length > 0) console.log(`skipped:  ${skipped} (no databases/<db_id>.sqlite for ${missing.join(', ')})`);
  console.log(`refused by the guard (403 for a read-only key):  ${refused.length}${kinds ? ` (${kinds})` : ''}   target 0`);
  for (const ex of refused.slice(0, MAX_EXAMPLES)) console.log(`  - ${ex.db}: ${oneLine(ex.sql)}\n      ${ex.reason}`);
  if (refused.length > MAX_EXAMPLES) console.log(`  … ${refused.length - MAX_EXAMPLES} more`);
  console.log(`not compiled by the engine (422 for every role): ${invalid.length}`);
  for (const [cause, n] of causes(invalid)) console.log(`  ${String(n).padStart(4)} × ${cause}`);
  console.log(`accepted: ${accepted}`);
  console.log(`failed to execute (of accepted): ${failed.length}`);
  for (const [cause, n] of causes(failed)) console.log(`  ${String(n).padStart(4)} × ${cause}`);
  for (const ex of failed.slice(0, MAX_EXAMPLES)) console.log(`  - ${ex.db}: ${oneLine(ex.sql)}\n      ${ex.reason}`);
  if (failed.length > MAX_EXAMPLES) console.log(`  … ${failed.length - MAX_EXAMPLES} more`);
  console.log(`executed: ${executed}`);
  console.log(
    `decision time: median ${Math.round(median(decisionUs))} µs, p95 ${Math.round(percentile(decisionUs, 95))} µs, max ${Math.round(Math.max(...decisionUs, 0))} µs over ${decisionUs.length} decisions`,
  );
  console.log(`wall time: ${seconds.toFixed(1)} s`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    // Exit 0 always unless the path is wrong (usage() exits 2 itself): report and carry on.
    console.error(`eval:guard stopped: ${message(err)}`);
    process.exit(0);
  },
);
