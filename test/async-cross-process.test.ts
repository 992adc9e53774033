// Async queries behind a load balancer without affinity: two real `dbq serve` processes, A and
// B, on one store — the SQLite store in one data dir both processes open, then a fresh
// PostgreSQL store (each process with a data dir of its own, as on two hosts). Every request
// below is sent to the process a balancer without affinity might pick: a query started on A
// is polled, listed and cancelled through B, and the statement is seen stopping on the
// database server. Results expire after DBQ_RESULT_TTL on both, and the bound on finished
// results (today's: 10,000 entries and max(256 MiB, 2 × DBQ_MAX_RESULT_BYTES)) holds for the
// results of both processes together. Fast synchronous statements write nothing there. A
// process that dies leaves its query `failed`; one stopped stores the outcome of the query
// its shutdown cut, for a process started meanwhile to answer.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliActor } from '../src/audit/audit.ts';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { PART_CHARS } from '../src/query/async-store.ts';
import { sharedDb } from '../src/query/shared-running.ts';
import { closeServices, createServices, type Services } from '../src/services.ts';
import { createApiKey } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { createWorkspace } from '../src/workspaces/workspaces.ts';
import { freshPostgresDatabase, PG_URL, tempDir } from './support/harness.ts';
import { backendsRunning } from './support/pg-activity.ts';
import { http, removeDir, startDbq, type DbqProcess } from './support/processes.ts';
import { until } from './support/wait.ts';

const TTL_SECONDS = 4;

for (const kind of ['sqlite', 'postgres'] as const) {
  describe(`${kind} store, two processes, no affinity`, () => {
    let a: DbqProcess;
    let b: DbqProcess;
    let c: DbqProcess | undefined;
    let envOf: (dir: string) => Record<string, string>;
    let svc: Services;
    let pgc: pg.Client;
    let dropStore: (() => Promise<void>) | null = null;
    const dirs: string[] = [];
    const keys = {} as Record<'ana' | 'leo' | 'rita', string>;

    beforeAll(async () => {
      const dataDir = tempDir();
      dirs.push(dataDir);
      const env: Record<string, string> = {
        DBQ_DATA_DIR: dataDir,
        DBQ_SECRET_KEY: randomBytes(32).toString('hex'),
        DBQ_RESULT_TTL: String(TTL_SECONDS),
        // A stop cuts running statements after a second (the last test).
        DBQ_SHUTDOWN_GRACE_MS: '1000',
        DBQ_LOG_LEVEL: 'warn',
      };
      if (kind === 'postgres') {
        const store = await freshPostgresDatabase();
        env.DBQ_STORE_URL = store.url;
        dropStore = () => store.drop();
      }
      // Kept open: the test reads and seeds the shared tables directly.
      svc = await createServices(loadConfig(env), { logger: createLogger('silent') });
      await createWorkspace(svc.db, { slug: 'acme', plan: 'enterprise' });
      await createWorkspace(svc.db, { slug: 'rival', plan: 'enterprise' });
      await createUser(svc.db, { workspace: 'acme', email: 'ana@acme.test', role: 'admin' }, cliActor());
      await createUser(svc.db, { workspace: 'acme', email: 'leo@acme.test', role: 'read_only' }, cliActor());
      await createUser(svc.db, { workspace: 'rival', email: 'rita@rival.test', role: 'admin' }, cliActor());
      for (const [name, workspace, email] of [
        ['ana', 'acme', 'ana@acme.test'],
        ['leo', 'acme', 'leo@acme.test'],
        ['rita', 'rival', 'rita@rival.test'],
      ] as const) {
        keys[name] = (await createApiKey(svc.db, { workspace, email, name })).secret;
      }
      // SQLite: both processes open the same file. PostgreSQL: each its own data dir.
      const dirA = kind === 'postgres' ? tempDir() : dataDir;
      const dirB = kind === 'postgres' ? tempDir() : dataDir;
      if (kind === 'postgres') dirs.push(dirA, dirB);
      envOf = (dir) => ({ ...env, DBQ_DATA_DIR: kind === 'postgres' ? dir : dataDir });
      [a, b] = await Promise.all([startDbq({ ...env, DBQ_DATA_DIR: dirA }), startDbq({ ...env, DBQ_DATA_DIR: dirB })]);
      const created = await http('POST', `${a.url}/w/acme/api/connections`, keys.ana, { name: 'pg', url: PG_URL });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      pgc = new pg.Client({ connectionString: PG_URL });
      await pgc.connect();
    }, 90_000);

    afterAll(async () => {
      await Promise.all([a?.stop(), b?.stop(), c?.stop()]);
      await pgc?.end();
      if (svc) await closeServices(svc);
      await dropStore?.();
      for (const dir of dirs) removeDir(dir);
    });

    const api = (p: DbqProcess, path: string) => `${p.url}/w/acme/api${path}`;
    const submit = (p: DbqProcess, key: string, sql: string) =>
      http('POST', api(p, '/query'), key, { connectionId: 'pg', sql, async: true });

    async function settle(p: DbqProcess, key: string, id: string, ms = 10_000): Promise<any> {
      let data: any;
      await until(
        `${id} to finish`,
        async () => {
          const res = await http('GET', api(p, `/query/${id}`), key);
          expect(res.status, JSON.stringify(res.body)).toBe(200);
          data = res.body.data;
          return data.status !== 'running';
        },
        ms,
        50,
      );
      return data;
    }

    const onServer = async (marker: string) => (await backendsRunning(marker, pgc)) > 0;

    it('a query started on A is polled on B until done, with its rows; A and B answer alike', async () => {
      const res = await submit(a, keys.leo, 'SELECT g, md5(g::text) AS h FROM generate_series(1, 300) g');
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      const id = res.body.data.queryId;
      // At once, before it can have finished: B already knows it.
      expect((await http('GET', api(b, `/query/${id}`), keys.leo)).status).toBe(200);
      const done = await settle(b, keys.leo, id);
      expect(done).toMatchObject({ queryId: id, status: 'succeeded', error: null, connectionId: expect.any(String) });
      expect(done.result.rowCount).toBe(300);
      expect(done.result.rows[299]).toEqual([300, expect.stringMatching(/^[0-9a-f]{32}$/)]);
      const fromA = await http('GET', api(a, `/query/${id}`), keys.leo);
      expect(fromA.body.data).toEqual(done);
    });

    it('a result past 1 MiB is stored in parts and read whole on the other process, characters intact at every cut', async () => {
      // The column name's length moves where the 1 MiB cuts land: one of the two falls inside
      // a surrogate pair of the emoji.
      const partLengths: number[] = [];
      for (const column of ['e', 'e2']) {
        const res = await submit(a, keys.leo, `SELECT repeat(chr(128512), 700000) AS ${column}`);
        const id = res.body.data.queryId;
        const done = await settle(b, keys.leo, id);
        expect(done.status).toBe('succeeded');
        expect(done.result.rows[0][0] === '\u{1F600}'.repeat(700_000)).toBe(true);
        const parts = await sharedDb(svc.db).selectFrom('async_query_parts').select('body').where('query_id', '=', id).execute();
        expect(parts.length).toBeGreaterThanOrEqual(2);
        partLengths.push(...parts.map((p) => p.body.length));
        expect((await http('GET', api(a, `/query/${id}`), keys.leo)).body.data).toEqual(done);
      }
      // One cut was moved back a unit, off the middle of a pair.
      expect(partLengths).toContain(PART_CHARS - 1);
      expect(partLengths).toContain(PART_CHARS);
    });

    it('cancel through B stops the statement A runs: canceled from both, gone from the database server', async () => {
      const marker = `xproc_cancel_${kind}_${Date.now()}`;
      const res = await submit(a, keys.ana, `SELECT pg_sleep(30) /* ${marker} */`);
      const id = res.body.data.queryId;
      await until('the statement to run', () => onServer(marker), 5_000);
      const started = Date.now();
      const cancel = await http('POST', api(b, `/query/${id}/cancel`), keys.ana);
      expect(cancel.status).toBe(200);
      expect(cancel.body.data).toMatchObject({ queryId: id, status: 'canceled', error: { code: 'query_canceled' } });
      expect(Date.now() - started).toBeLessThan(3_000);
      await until('the statement to leave the server', async () => !(await onServer(marker)), 2_000);
      for (const p of [a, b]) {
        expect((await http('GET', api(p, `/query/${id}`), keys.ana)).body.data).toMatchObject({ status: 'canceled' });
      }
      // A finished query is left as it is, wherever the cancel lands.
      expect((await http('POST', api(a, `/query/${id}/cancel`), keys.ana)).body.data.status).toBe('canceled');
    });

    it("B's running list shows A's statements: async at once, synchronous after a second; cancel through B ends A's synchronous request", async () => {
      const marker = `xproc_list_${kind}_${Date.now()}`;
      const asyncRes = await submit(a, keys.leo, `SELECT count(*) /* ${marker} async */ FROM generate_series(1, 30000000)`);
      const asyncId = asyncRes.body.data.queryId;
      const listOf = async (p: DbqProcess, key: string) =>
        (await http('GET', api(p, '/query/running'), key)).body.data.queries as Array<Record<string, any>>;
      const leosOnB = await listOf(b, keys.leo);
      expect(leosOnB.find((q) => q.queryId === asyncId)).toMatchObject({
        connectionName: 'pg',
        sql: expect.stringContaining(marker),
        source: 'api',
        user: { id: expect.any(String) },
      });
      // Ana's synchronous statement on A, her request left waiting.
      const pending = http('POST', api(a, '/query'), keys.ana, { connectionId: 'pg', sql: `SELECT pg_sleep(30) /* ${marker} sync */` });
      let syncId = '';
      await until(
        "A's synchronous statement among B's running ones",
        async () => {
          syncId = (await listOf(b, keys.ana)).find((q) => q.sql.includes(`${marker} sync`))?.queryId ?? '';
          return syncId !== '';
        },
        5_000,
      );
      // The admin sees Leo's too; Leo does not see Ana's; the other workspace sees nothing.
      expect((await listOf(b, keys.ana)).map((q) => q.queryId)).toContain(asyncId);
      expect((await listOf(b, keys.leo)).map((q) => q.queryId)).not.toContain(syncId);
      expect((await http('GET', `${b.url}/w/rival/api/query/running`, keys.rita)).body.data.queries).toEqual([]);
      expect((await http('GET', api(b, `/query/${syncId}`), keys.ana)).body.data).toMatchObject({ queryId: syncId, status: 'running' });
      const cancel = await http('POST', api(b, `/query/${syncId}/cancel`), keys.ana);
      expect(cancel.body.data).toMatchObject({ queryId: syncId, status: 'canceled' });
      const answered = await pending;
      expect(answered.status).toBe(499);
      expect(answered.body).toMatchObject({ code: 'query_canceled' });
      await until('the synchronous statement to leave the server', async () => !(await onServer(`${marker} sync`)), 2_000);
      await until(
        "the ended statement to leave B's list",
        async () => !(await listOf(b, keys.ana)).some((q) => q.queryId === syncId),
        2_000,
      );
      expect(await settle(b, keys.leo, asyncId, 30_000)).toMatchObject({ status: 'succeeded' });
    });

    it("someone else's query is 404 on both processes (another user, another workspace), and keeps running", async () => {
      const marker = `xproc_owner_${kind}_${Date.now()}`;
      const res = await submit(a, keys.leo, `SELECT count(*) /* ${marker} */ FROM generate_series(1, 3000000)`);
      const id = res.body.data.queryId;
      for (const p of [a, b]) {
        for (const [key, url] of [
          [keys.ana, api(p, `/query/${id}`)],
          [keys.rita, `${p.url}/w/rival/api/query/${id}`],
        ] as const) {
          const get = await http('GET', url, key);
          expect(get.status).toBe(404);
          expect(get.body).toEqual({ success: false, error: 'Query not found', code: 'query_not_found' });
          expect((await http('POST', `${url}/cancel`, key)).status).toBe(404);
        }
      }
      expect(await settle(b, keys.leo, id)).toMatchObject({ status: 'succeeded' });
    });

    it('a result is gone from both processes after DBQ_RESULT_TTL', async () => {
      const res = await submit(b, keys.leo, 'SELECT 1 AS one');
      const id = res.body.data.queryId;
      const done = await settle(a, keys.leo, id);
      expect(done.status).toBe('succeeded');
      const expiry = Date.parse(done.finishedAt) + TTL_SECONDS * 1000;
      expect((await http('GET', api(a, `/query/${id}`), keys.leo)).status).toBe(200);
      await new Promise((r) => setTimeout(r, Math.max(0, expiry - Date.now()) + 300));
      for (const p of [b, a]) expect((await http('GET', api(p, `/query/${id}`), keys.leo)).status).toBe(404);
      const row = await sharedDb(svc.db).selectFrom('async_queries').select('query_id').where('query_id', '=', id).executeTakeFirst();
      expect(row).toBeUndefined();
    });

    it('fast synchronous statements write nothing to the shared tables (published only past a second)', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 50; i++) {
        const res = await http('POST', api(a, '/query'), keys.leo, { connectionId: 'pg', sql: `SELECT ${i} AS n` });
        expect(res.status).toBe(200);
        ids.push(res.body.data.queryId);
      }
      // Past the publishing delay and several ticks of A's timer.
      await new Promise((r) => setTimeout(r, 1_600));
      const db = sharedDb(svc.db);
      expect(await db.selectFrom('running_queries').select('query_id').where('query_id', 'in', ids).execute()).toEqual([]);
      expect(await db.selectFrom('async_queries').select('query_id').where('query_id', 'in', ids).execute()).toEqual([]);
    });

    it('finished results of both processes together stay within 10,000 entries and the byte budget, oldest first', async () => {
      const db = sharedDb(svc.db);
      const budget = Math.max(256 * 1024 * 1024, 2 * loadConfig({}).maxResultBytes);
      await db.deleteFrom('async_queries').execute();
      // 10,000 finished results, older (by id) than any real one; a day from expiry.
      const acme = await svc.db.selectFrom('workspaces').select('id').where('slug', '=', 'acme').executeTakeFirstOrThrow();
      const fakeId = (n: number) => `q_0000000000000000000${String(n).padStart(7, '0')}`;
      const rows = Array.from({ length: 10_000 }, (_, n) => ({
        query_id: fakeId(n),
        workspace_id: acme.id,
        user_id: 'u_seed',
        connection_id: 'c_seed',
        instance_id: 'proc_seed',
        status: 'succeeded',
        submitted_at: new Date().toISOString(),
        finished_at: new Date().toISOString(),
        heartbeat_at: Date.now(),
        expires_at: Date.now() + 86_400_000,
        result_json: 'null',
        error_json: null,
        bytes: 300,
        parts: 0,
      }));
      for (let i = 0; i < rows.length; i += 500)
        await db
          .insertInto('async_queries')
          .values(rows.slice(i, i + 500))
          .execute();
      const count = async () =>
        Number(
          (
            await db
              .selectFrom('async_queries')
              .select((eb) => eb.fn.countAll().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        );
      const has = async (id: string) =>
        (await db.selectFrom('async_queries').select('query_id').where('query_id', '=', id).executeTakeFirst()) !== undefined;

      // One more result, run by A: the oldest goes.
      const first = (await submit(a, keys.leo, 'SELECT 1 AS one')).body.data.queryId;
      await settle(b, keys.leo, first);
      // A trims after writing its outcome, so B may see the result a moment before.
      await until('the oldest result to go', async () => !(await has(fakeId(0))), 5_000);
      expect(await count()).toBe(10_000);
      expect(await has(fakeId(0))).toBe(false);
      expect(await has(fakeId(1))).toBe(true);

      // A result said to weigh more than the budget by itself: the next result, run by B,
      // drops it and everything older; the new one stays, and so does A's.
      await db
        .updateTable('async_queries')
        .set({ bytes: budget + 1 })
        .where('query_id', '=', fakeId(5_000))
        .execute();
      const second = (await submit(b, keys.leo, 'SELECT 2 AS two')).body.data.queryId;
      expect(await settle(a, keys.leo, second)).toMatchObject({ status: 'succeeded', result: { rows: [[2]] } });
      await until('the heavy result to go', async () => !(await has(fakeId(5_000))), 5_000);
      expect(await has(fakeId(4_999))).toBe(false);
      expect(await has(fakeId(5_001))).toBe(true);
      expect(await has(first)).toBe(true);
      const total = await db
        .selectFrom('async_queries')
        .select((eb) => eb.fn.sum<number>('bytes').as('b'))
        .executeTakeFirstOrThrow();
      expect(Number(total.b)).toBeLessThanOrEqual(budget);
      await db.deleteFrom('async_queries').where('query_id', '<', 'q_1').execute();
    }, 60_000);

    it('a process that dies: the other reports its async query failed once its heartbeat stops', async () => {
      const marker = `xproc_dead_${kind}_${Date.now()}`;
      const res = await submit(a, keys.ana, `SELECT pg_sleep(12) /* ${marker} */`);
      const id = res.body.data.queryId;
      await until('the statement to run', () => onServer(marker), 5_000);
      const killed = new Promise((r) => a.child.once('exit', r));
      a.child.kill('SIGKILL');
      await killed;
      expect((await http('GET', api(b, `/query/${id}`), keys.ana)).body.data.status).toBe('running');
      const done = await settle(b, keys.ana, id, 20_000);
      expect(done).toMatchObject({ status: 'failed', error: { code: 'internal_error', message: expect.stringContaining('stopped') } });
      expect((await http('GET', api(b, '/query/running'), keys.ana)).body.data.queries.map((q: any) => q.queryId)).not.toContain(id);
    }, 30_000);

    it('a process stopped (SIGTERM) cuts its async query after the grace period and stores the outcome; a process started meanwhile reads it', async () => {
      // As in a rolling restart: the new process is up before the old one stops.
      const dir = tempDir();
      dirs.push(dir);
      c = await startDbq(envOf(dir));
      const marker = `xproc_stop_${kind}_${Date.now()}`;
      const res = await submit(b, keys.ana, `SELECT pg_sleep(30) /* ${marker} */`);
      const id = res.body.data.queryId;
      await until('the statement to run', () => onServer(marker), 5_000);
      await b.stop();
      const state = (await http('GET', api(c, `/query/${id}`), keys.ana)).body.data;
      expect(state).toMatchObject({ queryId: id, status: 'failed', error: { code: 'shutting_down' }, finishedAt: expect.any(String) });
      await until('the statement to leave the server', async () => !(await onServer(marker)), 2_000);
    }, 60_000);
  });
}
