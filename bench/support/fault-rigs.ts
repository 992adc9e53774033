// The rigs of bench/faults.ts's scenarios beyond the store outage (whose rig, fault-rig.ts, a
// test shares): dbq processes (bin/dbq) on a SQLite store of their own, or several on one
// PostgreSQL store (a fresh database in the machine's server) sharing a Redis; a target table
// in the machine's PostgreSQL, reached by dbq at `targetUrl` (a proxy the scenario breaks, or
// the server itself); the same load as fault-rig.ts; and the checks made after each round. The
// machine's servers are only used, never stopped: what a scenario breaks is its own.
import Database from 'better-sqlite3';
import path from 'node:path';
import pg from 'pg';
import type { Plan } from '../../src/workspaces/workspaces.ts';
import { freshPostgresDatabase, PG_URL, tempDir } from '../../test/support/databases.ts';
import { oneQuery, provisionAdmin, startLoad, type Answer, type LoadHandle, type LoadOptions } from '../../test/support/fault-rig.ts';
import { removeDir, sharedEnv, startDbq, type DbqProcess } from '../../test/support/processes.ts';

export interface DbqRig {
  /** The running processes; restart(i) replaces slot i. */
  dbqs: DbqProcess[];
  key: string;
  /** The target table (`n bigint`) writes insert into, on connection `pg`. */
  table: string;
  /** Loop i sends to process i modulo the number of processes. */
  load(opts: Pick<LoadOptions, 'readers' | 'writers' | 'timeoutMs' | 'pauseMs'>): LoadHandle;
  /** One statement through process `via` (default 0), as a client sends it. */
  query(sql: string, opts?: { timeoutMs?: number; via?: number }): Promise<{ status: number; code: string | null; ms: number }>;
  /** A read answered 200 through every process. */
  healthy(): Promise<boolean>;
  /** Directly on the target (not through dbq or a proxy). */
  targetQuery<R extends pg.QueryResultRow = any>(sql: string, params?: unknown[]): Promise<R[]>;
  /** Writes answered 200 that are missing from the target table or not `succeeded` in the
   * history: must be none. */
  lost(answers: Answer[]): Promise<{ acknowledged: number; lost: number }>;
  /** History entries of writes into the table still `running`: a write in flight when its
   * process died, which the operator has to check on the target. */
  runningEntries(): Promise<number>;
  /** Starts slot i again on the same store and data (stopping it first if it still runs). */
  restart(i?: number): Promise<DbqProcess>;
  close(): Promise<void>;
}

export interface DbqRigOptions {
  /** sqlite: DATA_DIR/dbq.sqlite, one process; postgres: a database of its own in the
   * machine's server, shared by `processes`. */
  store: 'sqlite' | 'postgres';
  processes?: number;
  /** What the `pg` connection points at (default: the machine's PostgreSQL). */
  targetUrl?: string;
  redisUrl?: string;
  plan?: Plan;
  env?: Record<string, string>;
}

/** Reads the SQLite store beside the running dbq (WAL: a reader does not block its writer). */
function readSqlite<T>(dataDir: string, read: (db: Database.Database) => T): T {
  const db = new Database(path.join(dataDir, 'dbq.sqlite'), { readonly: true, fileMustExist: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

export async function startDbqRig(opts: DbqRigOptions): Promise<DbqRig> {
  const count = opts.processes ?? 1;
  if (opts.store === 'sqlite' && count !== 1) throw new Error('a SQLite store serves one process');
  const table = `faults_${process.pid}_${Math.random().toString(36).slice(2, 7)}`;
  const dirs: string[] = [];
  const dbqs: DbqProcess[] = [];
  let store: { url: string; drop(): Promise<void> } | null = null;
  const cleanUp = async () => {
    await Promise.all(dbqs.map((d) => d.stop().catch(() => {})));
    await oneQuery(PG_URL, `DROP TABLE IF EXISTS ${table}`).catch(() => {});
    await store?.drop().catch(() => {});
    for (const dir of dirs) removeDir(dir);
  };
  try {
    const dataDir = tempDir('dbq-faults-');
    dirs.push(dataDir);
    const extra = { DBQ_LOG_LEVEL: 'warn', ...opts.env };
    if (opts.store === 'postgres') store = await freshPostgresDatabase();
    const env = sharedEnv({ storeUrl: store?.url ?? '', dataDir, redisUrl: opts.redisUrl, extra });
    // Without a PostgreSQL store dbq keeps its own, DATA_DIR/dbq.sqlite.
    if (!store) delete env.DBQ_STORE_URL;
    await oneQuery(PG_URL, `CREATE TABLE ${table} (n bigint NOT NULL)`);
    const key = await provisionAdmin(env, {
      email: 'admin@faults.test',
      keyName: 'faults',
      plan: opts.plan,
      targetUrl: opts.targetUrl,
      maxConnections: 10,
    });
    // Several processes on one store each get a data dir of their own, as deployed.
    const envs = [env];
    for (let i = 1; i < count; i++) {
      const dir = tempDir('dbq-faults-');
      dirs.push(dir);
      envs.push({ ...env, DBQ_DATA_DIR: dir });
    }
    dbqs.push(...(await Promise.all(envs.map((e) => startDbq(e)))));

    const storeUrl = store?.url;
    const succeeded = async (ids: string[]): Promise<Set<string>> => {
      if (storeUrl)
        return new Set(
          (
            await oneQuery<{ query_id: string }>(
              storeUrl,
              `SELECT query_id FROM query_history WHERE status = 'succeeded' AND query_id = ANY($1::text[])`,
              [ids],
            )
          ).map((r) => r.query_id),
        );
      return new Set(
        readSqlite(dataDir, (db) =>
          (
            db
              .prepare(`SELECT query_id FROM query_history WHERE status = 'succeeded' AND query_id IN (SELECT value FROM json_each(?))`)
              .all(JSON.stringify(ids)) as { query_id: string }[]
          ).map((r) => r.query_id),
        ),
      );
    };
    let counter = 0;
    const query: DbqRig['query'] = async (sql, { timeoutMs, via = 0 } = {}) => {
      const start = performance.now();
      try {
        const res = await fetch(`${dbqs[via].url}/api/query`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ connectionId: 'pg', sql, ...(timeoutMs === undefined ? {} : { timeoutMs }) }),
          // A check that never returns would stall the whole bench without a word.
          signal: AbortSignal.timeout((timeoutMs ?? 30_000) + 10_000),
        });
        const body = (await res.json().catch(() => null)) as { code?: string } | null;
        return { status: res.status, code: body?.code ?? null, ms: performance.now() - start };
      } catch {
        return { status: 0, code: null, ms: performance.now() - start };
      }
    };
    return {
      dbqs,
      key,
      table,
      load: (o) => startLoad({ ...o, url: (i) => dbqs[i % dbqs.length].url, key, table, nextValue: () => ++counter }),
      query,
      async healthy() {
        for (let i = 0; i < dbqs.length; i++) if ((await query('SELECT 1', { via: i })).status !== 200) return false;
        return true;
      },
      targetQuery: (sql, params) => oneQuery(PG_URL, sql, params),
      async lost(answers) {
        const acked = answers.filter((a) => a.kind === 'write' && a.status === 200);
        const values = acked.map((a) => a.value!);
        const present = new Set(
          (await oneQuery<{ n: string }>(PG_URL, `SELECT n FROM ${table} WHERE n = ANY($1::bigint[])`, [values])).map((r) => Number(r.n)),
        );
        const recorded = await succeeded(acked.map((a) => a.queryId!));
        return { acknowledged: acked.length, lost: acked.filter((a) => !present.has(a.value!) || !recorded.has(a.queryId!)).length };
      },
      async runningEntries() {
        const pattern = `%${table}%`;
        if (storeUrl)
          return Number(
            (
              await oneQuery<{ n: string }>(storeUrl, `SELECT count(*) AS n FROM query_history WHERE status = 'running' AND sql LIKE $1`, [
                pattern,
              ])
            )[0].n,
          );
        return readSqlite(
          dataDir,
          (db) =>
            (db.prepare(`SELECT count(*) AS n FROM query_history WHERE status = 'running' AND sql LIKE ?`).get(pattern) as { n: number }).n,
        );
      },
      async restart(i = 0) {
        await dbqs[i].stop();
        dbqs[i] = await startDbq(envs[i]);
        return dbqs[i];
      },
      close: cleanUp,
    };
  } catch (err) {
    await cleanUp();
    throw err;
  }
}
