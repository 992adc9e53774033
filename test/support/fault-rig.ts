// A dbq process on a store it can lose: the store is a PostgreSQL cluster of its own
// (pg-cluster.ts), the target a table in the machine's PostgreSQL, and a closed-loop load of
// reads and writes through HTTP that records every answer with its timing (startLoad, which the
// bench's other fault rigs use too). Shared by test/faults/store-outage.test.ts and
// bench/faults.ts, so the bench's figures come from the same set-up the test holds to.
import pg from 'pg';
import { cliActor } from '../../src/audit/audit.ts';
import { loadConfig } from '../../src/config.ts';
import { createConnection } from '../../src/connections/connections.ts';
import { createLogger } from '../../src/logger.ts';
import { closeServices, createServices } from '../../src/services.ts';
import { createApiKey } from '../../src/workspaces/api-keys.ts';
import { createUser } from '../../src/workspaces/users.ts';
import { getWorkspace, setWorkspacePlan, type Plan } from '../../src/workspaces/workspaces.ts';
import { PG_URL, tempDir } from './databases.ts';
import { createDatabase, privatePostgres, type PrivatePostgres } from './pg-cluster.ts';
import { removeDir, sharedEnv, startDbq, type DbqProcess } from './processes.ts';
import { until } from './wait.ts';

export interface Answer {
  kind: 'read' | 'write';
  /** 0: no answer (the connection failed or REQUEST_TIMEOUT_MS passed). */
  status: number;
  code: string | null;
  retryAfter: string | null;
  /** performance.now() when the request was sent, and how long its answer took. */
  start: number;
  ms: number;
  queryId: string | null;
  /** The value a write inserted (unique per write). */
  value: number | null;
  statementRan: unknown;
  /** Why there was no answer (status 0): the fetch error's code (ECONNREFUSED, UND_ERR_SOCKET…)
   * or TimeoutError, so a refused connection and a hung one are told apart. */
  error?: string;
}

export interface LoadHandle {
  /** The answers so far. */
  readonly answers: readonly Answer[];
  /** Stops the loops after their current requests and returns every answer. */
  stop(): Promise<Answer[]>;
}

export interface StoreRig {
  cluster: PrivatePostgres;
  storeUrl: string;
  env: Record<string, string>;
  dbq: DbqProcess;
  key: string;
  /** The target table (machine PostgreSQL, connection `pg`): `n bigint`. */
  table: string;
  /** `readers` and `writers` loops, one request at a time each. */
  load(opts: { readers: number; writers: number }): LoadHandle;
  /** One statement on the store (a client of its own; fails while the store is down). */
  storeQuery<R extends pg.QueryResultRow = any>(sql: string, params?: unknown[]): Promise<R[]>;
  targetQuery<R extends pg.QueryResultRow = any>(sql: string, params?: unknown[]): Promise<R[]>;
  /** Starts a new dbq process on the same store and data (after the first was killed). */
  restartDbq(): Promise<DbqProcess>;
  close(): Promise<void>;
}

const REQUEST_TIMEOUT_MS = 10_000;

/** One statement on its own short-lived client (fails fast while the server is away). */
export async function oneQuery<R extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<R[]> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  c.on('error', () => {});
  await c.connect();
  try {
    return (await c.query<R>(sql, params)).rows;
  } finally {
    await c.end().catch(() => {});
  }
}

/** Provisions the store `env` names before any dbq starts, in this process and without Redis
 * (nothing to count yet): the default workspace on `plan`, an admin with a key, and connection
 * `pg` to `targetUrl` (default: the machine's PostgreSQL). Returns the key's secret. */
export async function provisionAdmin(
  env: Record<string, string | undefined>,
  opts: { email: string; keyName: string; plan?: Plan; targetUrl?: string; maxConnections?: number },
): Promise<string> {
  const svc = await createServices(loadConfig({ ...env, DBQ_REDIS_URL: undefined }), { logger: createLogger('silent') });
  try {
    await setWorkspacePlan(svc.db, 'default', opts.plan ?? 'enterprise', cliActor());
    await createUser(svc.db, { workspace: 'default', email: opts.email, role: 'admin' }, cliActor());
    const key = (await createApiKey(svc.db, { workspace: 'default', email: opts.email, name: opts.keyName })).secret;
    const ws = await getWorkspace(svc.db, 'default');
    const connection = {
      name: 'pg',
      url: opts.targetUrl ?? PG_URL,
      ...(opts.maxConnections === undefined ? {} : { maxConnections: opts.maxConnections }),
    };
    await createConnection({ db: svc.db, secretBox: svc.secretBox, sqliteDir: svc.config.sqliteDir }, ws.id, connection, cliActor());
    return key;
  } finally {
    await closeServices(svc);
  }
}

export interface LoadOptions {
  /** The dbq to send loop `i`'s next request to (read at each request: a restarted process
   * has a new port; several processes share the loops by `i`). */
  url: (loop: number) => string;
  key: string;
  /** The target table writes insert into (`n bigint`), on connection `connectionId`. */
  table: string;
  connectionId?: string;
  readers: number;
  writers: number;
  /** A unique value for each write. */
  nextValue: () => number;
  /** Sent as each request's `timeoutMs` (unset: dbq's default). */
  timeoutMs?: number;
  /** Pause after every answer: a paced load for a rate-limited workspace, where a closed loop
   * would measure the limit (429) instead of the fault. */
  pauseMs?: number;
}

/** `readers` and `writers` loops, one request at a time each, recording every answer. */
export function startLoad(opts: LoadOptions): LoadHandle {
  const answers: Answer[] = [];
  const connectionId = opts.connectionId ?? 'pg';
  let stopped = false;
  const loop = async (kind: 'read' | 'write', i: number) => {
    while (!stopped) {
      const value = kind === 'write' ? opts.nextValue() : null;
      const body = {
        connectionId,
        ...(kind === 'write' ? { sql: `INSERT INTO ${opts.table} (n) VALUES ($1)`, params: [value] } : { sql: 'SELECT 1 AS one' }),
        ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }),
      };
      const start = performance.now();
      let answer: Answer;
      try {
        const res = await fetch(`${opts.url(i)}/api/query`, {
          method: 'POST',
          headers: { authorization: `Bearer ${opts.key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const parsed = (await res.json().catch(() => null)) as any;
        answer = {
          kind,
          status: res.status,
          code: parsed?.code ?? null,
          retryAfter: res.headers.get('retry-after'),
          start,
          ms: performance.now() - start,
          queryId: parsed?.data?.queryId ?? parsed?.details?.queryId ?? null,
          value,
          statementRan: parsed?.details?.statementRan,
        };
      } catch (err) {
        const e = err as { name?: string; cause?: { code?: string } };
        answer = {
          kind,
          status: 0,
          code: null,
          retryAfter: null,
          start,
          ms: performance.now() - start,
          queryId: null,
          value,
          statementRan: undefined,
          error: e.cause?.code ?? e.name,
        };
      }
      answers.push(answer);
      // Pacing, not a wait for anything: an answer that came at once must not turn the loop into
      // a busy spin.
      if (answer.status !== 200 || opts.pauseMs) await new Promise((r) => setTimeout(r, Math.max(20, opts.pauseMs ?? 0)));
    }
  };
  const loops = [
    ...Array.from({ length: opts.readers }, (_, i) => loop('read', i)),
    ...Array.from({ length: opts.writers }, (_, i) => loop('write', opts.readers + i)),
  ];
  return {
    answers,
    async stop() {
      stopped = true;
      await Promise.all(loops);
      return answers.sort((a, b) => a.start - b.start);
    },
  };
}

export async function startStoreRig(opts: { logLevel?: string } = {}): Promise<StoreRig> {
  const cluster = await privatePostgres();
  const dirs: string[] = [];
  let dbq: DbqProcess | null = null;
  const table = `store_outage_${process.pid}_${Math.random().toString(36).slice(2, 7)}`;
  try {
    const storeUrl = await createDatabase(cluster, 'dbq_store');
    const dataDir = tempDir();
    dirs.push(dataDir);
    const env = sharedEnv({ storeUrl, dataDir, extra: { DBQ_LOG_LEVEL: opts.logLevel ?? 'info' } });
    await oneQuery(PG_URL, `CREATE TABLE ${table} (n bigint NOT NULL)`);
    const key = await provisionAdmin(env, { email: 'admin@outage.test', keyName: 'outage', maxConnections: 10 });
    dbq = await startDbq(env);
    let counter = 0;
    const rig: StoreRig = {
      cluster,
      storeUrl,
      env,
      dbq,
      key,
      table,
      load: ({ readers, writers }) => startLoad({ url: () => rig.dbq.url, key, table, readers, writers, nextValue: () => ++counter }),
      storeQuery: (sql, params) => oneQuery(storeUrl, sql, params),
      targetQuery: (sql, params) => oneQuery(PG_URL, sql, params),
      async restartDbq() {
        await rig.dbq.stop();
        rig.dbq = await startDbq(env);
        return rig.dbq;
      },
      async close() {
        await rig.dbq.stop().catch(() => {});
        await oneQuery(PG_URL, `DROP TABLE IF EXISTS ${table}`).catch(() => {});
        await cluster.destroy();
        for (const dir of dirs) removeDir(dir);
      },
    };
    return rig;
  } catch (err) {
    await dbq?.stop().catch(() => {});
    await oneQuery(PG_URL, `DROP TABLE IF EXISTS ${table}`).catch(() => {});
    await cluster.destroy();
    for (const dir of dirs) removeDir(dir);
    throw err;
  }
}

/** Polls until `check` gives something other than false, and returns it; `check` may throw
 * meanwhile (the store is away), the last error is named if time runs out. */
export async function eventually<T>(what: string, check: () => Promise<T | false>, ms = 15_000): Promise<T> {
  let last: unknown = null;
  let value: T | undefined;
  const got = async () => {
    try {
      const v = await check();
      if (v === false) return false;
      value = v;
      return true;
    } catch (err) {
      last = err;
      return false;
    }
  };
  try {
    await until(what, got, ms, 100);
  } catch (err) {
    throw new Error(`${(err as Error).message}${last ? `: ${String(last)}` : ''}`, { cause: err });
  }
  return value as T;
}

/** Waits until the target runs a statement holding `marker` (sent, not finished). */
export function statementRunning(rig: StoreRig, marker: string): Promise<true> {
  return eventually(
    `the statement ${marker} on the target`,
    async () =>
      (
        await rig.targetQuery(`SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1 AND pid <> pg_backend_pid()`, [
          `%${marker}%`,
        ])
      ).length > 0 || false,
    10_000,
  );
}

/** Acknowledged writes (answered 200) missing from the target table or from the history as
 * `succeeded`; must be none. */
export async function lostAcknowledgedWrites(
  rig: StoreRig,
  answers: Answer[],
): Promise<{ acknowledged: number; missingInTarget: number[]; missingInHistory: string[] }> {
  const acked = answers.filter((a) => a.kind === 'write' && a.status === 200);
  const values = acked.map((a) => a.value!);
  const present = new Set(
    (await rig.targetQuery<{ n: string }>(`SELECT n FROM ${rig.table} WHERE n = ANY($1::bigint[])`, [values])).map((r) => Number(r.n)),
  );
  const ids = acked.map((a) => a.queryId!);
  const recorded = new Set(
    (
      await rig.storeQuery<{ query_id: string }>(
        `SELECT query_id FROM query_history WHERE status = 'succeeded' AND query_id = ANY($1::text[])`,
        [ids],
      )
    ).map((r) => r.query_id),
  );
  return {
    acknowledged: acked.length,
    missingInTarget: values.filter((v) => !present.has(v)),
    missingInHistory: ids.filter((id) => !recorded.has(id)),
  };
}
