// Entry point of the read-only guard's pure part: picks the dialect's parser-based classifier.
// guard-postgres.ts uses libpg-query (the server's own grammar); guard-mysql.ts and
// guard-sqlite.ts use node-sql-parser on text sanitized by an engine-faithful lexer, plus
// explicit rules and the function allowlist on the text (call-gate.ts). Allow what is known
// to be a read, refuse the rest: an exception anywhere in classification is not a read.
// src/guard/decide.ts completes the decision with what needs the connection (PostgreSQL's
// catalog, the engine compiling text the parser could not read).
//
// What the guard cannot stop, and why every read also runs inside the engine's read-only mode
// (BEGIN READ ONLY / START TRANSACTION READ ONLY / query_only), ideally as a reader role that
// has no power to write (docs/security.md):
// - A function whose catalog label lies: a user's function marked STABLE that calls
//   pg_terminate_backend is allowed by PostgreSQL's own promise; SQLite views run their
//   definitions out of sight (MySQL views are read: src/guard/read-policy-mysql.ts).
// - Resource use: cross joins, generate_series(1, 1e12), runaway recursive CTEs, regex blowups,
//   huge sorts spilling to temp files. Statement timeouts and row limits handle those.
// - What a read may see: any row the connection's database role can read.
// - Server settings it cannot observe: MySQL sql_mode (NO_BACKSLASH_ESCAPES, ANSI_QUOTES) is
//   handled by refusing text that reads differently under them, not by knowing the mode.
import type { EngineName } from '../engines/engine.ts';
import { loadModule } from 'libpg-query';
import { classifyMysql } from './guard-mysql.ts';
import { classifyPostgres } from './guard-postgres.ts';
import { classifySqlite } from './guard-sqlite.ts';
import type { Classifier, Verdict } from './verdict.ts';
import { unparseableVerdict } from './verdict-builders.ts';

export type { Verdict } from './verdict.ts';
import { classifyOffThread, OFF_THREAD_CHARS } from './off-thread.ts';

const CLASSIFIERS: Record<EngineName, Classifier> = {
  postgres: classifyPostgres,
  mysql: classifyMysql,
  sqlite: classifySqlite,
};

// The WASM module is process-wide by nature; loading it once is a cache, not shared state.
let postgresParserReady: Promise<void> | undefined;

function loadPostgresParser(): Promise<void> {
  postgresParserReady ??= loadModule().catch((error: unknown) => {
    postgresParserReady = undefined;
    throw error;
  });
  return postgresParserReady;
}

/** The classification itself, on whichever thread calls it (classify-worker.ts for long text). */
export async function classifyText(engine: EngineName, sql: string): Promise<Verdict> {
  // SQLite stops reading at a NUL and PostgreSQL's protocol cannot carry one; the guard would
  // judge text the engine never sees. Refused for everyone, like several statements.
  if (sql.includes('\u0000'))
    return { kind: 'rejected', statementType: 'UNKNOWN', reason: 'SQL text must not contain NUL characters', refusal: 'nul_character' };
  if (engine === 'postgres') await loadPostgresParser();
  try {
    return CLASSIFIERS[engine](sql);
  } catch {
    // A stack overflow on absurd nesting, an AST shape we did not expect: not a read.
    return unparseableVerdict();
  }
}

// A verdict depends on nothing but the dialect and the text, so the same statement sent again
// (dashboards, agents, retries) is not parsed again. One map per dialect, keyed by the text
// itself (no key string to build per lookup); bounded in entries and in text length so the
// cache holds at most a few MiB; oldest entries go first.
const CACHE_ENTRIES = 1_000;
const CACHE_MAX_SQL = 4_096;
const verdicts: Record<EngineName, Map<string, Verdict>> = { postgres: new Map(), mysql: new Map(), sqlite: new Map() };

export async function classifyStatement(engine: EngineName, sql: string): Promise<Verdict> {
  const cache = sql.length <= CACHE_MAX_SQL ? verdicts[engine] : undefined;
  const hit = cache?.get(sql);
  if (hit) return hit;
  const verdict = sql.length > OFF_THREAD_CHARS ? await classifyOffThread(engine, sql) : await classifyText(engine, sql);
  if (cache) {
    if (cache.size >= CACHE_ENTRIES) cache.delete(cache.keys().next().value as string);
    cache.set(sql, Object.freeze(verdict));
  }
  return verdict;
}
