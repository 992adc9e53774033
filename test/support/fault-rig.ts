// A dbq process on a store it can lose (issue 24): the store is a PostgreSQL cluster of its own
// (pg-cluster.ts), the target a table in the machine's PostgreSQL, and a closed-loop load of
// reads and writes through HTTP that records every answer with its timing. Shared by
// test/faults/store-outage.test.ts and bench/faults.ts, so the bench's figures come from the
// same set-up the test holds to.
import pg from 'pg';
import { cliActor } from '../../src/access/audit.ts';
import { loadConfig } from '../../src/config.ts';
import { createConnection } from '../../src/connections/connections.ts';
import { createLogger } from '../../src/logger.ts';
import { closeServices, createServices } from '../../src/services.ts';
import { createApiKey } from '../../src/workspaces/api-keys.ts';
import { createUser } from '../../src/workspaces/users.ts';
import { getWorkspace, setWorkspacePlan } from '../../src/workspaces/workspaces.ts';
import { PG_URL, tempDir } from './databases.ts';
import { createDatabase, privatePostgres, type PrivatePostgres } from './pg-cluster.ts';
import { removeDir, sharedEnv, startDbq, type DbqProcess } from './processes.ts';

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

async function oneQuery<R extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<R[]> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  c.on('error', () => {});
  await c.connect();
  try {
    return (await c.query<R>(sql, params)).rows;
  } finally {
    await c.end().catch(() => {});
  }
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
    const svc = await createServices(loadConfig(env), { logger: createLogger('silent') });
    let key: string;
    try {
      await setWorkspacePlan(svc.db, 'default', 'enterprise', cliActor());
      await createUser(svc.db, { workspace: 'default', email: 'admin@outage.test', role: 'admin' }, cliActor());
      key = (await createApiKey(svc.db, { workspace: 'default', email: 'admin@outage.test', name: 'outage' })).secret;
      const ws = await getWorkspace(svc.db, 'default');
      await createConnection({ db: svc.db, secretBox: svc.secretBox, sqliteDir: svc.config.sqliteDir }, ws.id, { name: 'pg', url: PG_URL, maxConnections: 10 }, cliActor());
    } finally {
      await closeServices(svc);
    }
    dbq = await startDbq(env);
    let counter = 0;
    const rig: StoreRig = {
      cluster,
      storeUrl,
      env,
      dbq,
      key,
      table,
      load({ readers, writers }) {
        const answers: Answer[] = [];
        let stopped = false;
        const loop = async (kind: 'read' | 'write') => {
          while (!stopped) {
            const value = kind === 'write' ? ++counter : null;
            const body = kind === 'write' ? { connectionId: 'pg', sql: `INSERT INTO ${table} (n) VALUES ($1)`, params: [value] } : { connectionId: 'pg', sql: 'SELECT 1 AS one' };
            const start = performance.now();
            let answer: Answer;
            try {
              const res = await fetch(`${rig.dbq.url}/api/query`, {
                method: 'POST',
                headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
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
            } catch {
              answer = { kind, status: 0, code: null, retryAfter: null, start, ms: performance.now() - start, queryId: null, value, statementRan: undefined };
            }
            answers.push(answer);
            // An answer that came at once must not turn the loop into a busy spin.
            if (answer.status !== 200) await new Promise((r) => setTimeout(r, 20));
          }
        };
        const loops = [...Array.from({ length: readers }, () => loop('read')), ...Array.from({ length: writers }, () => loop('write'))];
        return {
          answers,
          async stop() {
            stopped = true;
            await Promise.all(loops);
            return answers.sort((a, b) => a.start - b.start);
          },
        };
      },
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

/** Polls until `check` holds (it may throw meanwhile). */
export async function eventually<T>(what: string, check: () => Promise<T | false>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown = null;
  for (;;) {
    try {
      const v = await check();
      if (v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits until the target runs a statement holding `marker` (sent, not finished). */
export function statementRunning(rig: StoreRig, marker: string): Promise<true> {
  return eventually(`the statement ${marker} on the target`, async () =>
    (await rig.targetQuery(`SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1 AND pid <> pg_backend_pid()`, [`%${marker}%`])).length > 0 || false, 10_000);
}

/** Acknowledged writes (answered 200) missing from the target table or from the history as
 * `succeeded`; must be none. */
export async function lostAcknowledgedWrites(rig: StoreRig, answers: Answer[]): Promise<{ acknowledged: number; missingInTarget: number[]; missingInHistory: string[] }> {
  const acked = answers.filter((a) => a.kind === 'write' && a.status === 200);
  const values = acked.map((a) => a.value!);
  const present = new Set((await rig.targetQuery<{ n: string }>(`SELECT n FROM ${rig.table} WHERE n = ANY($1::bigint[])`, [values])).map((r) => Number(r.n)));
  const ids = acked.map((a) => a.queryId!);
  const recorded = new Set((await rig.storeQuery<{ query_id: string }>(`SELECT query_id FROM query_history WHERE status = 'succeeded' AND query_id = ANY($1::text[])`, [ids])).map((r) => r.query_id));
  return { acknowledged: acked.length, missingInTarget: values.filter((v) => !present.has(v)), missingInHistory: ids.filter((id) => !recorded.has(id)) };
}
