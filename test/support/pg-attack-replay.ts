// Replaying a list of PostgreSQL attacks against a fixture database, shared by the read-only
// guard's attack tests (readonly-v2-attacks, readonly-v3-planner-attacks): after every attack a
// snapshot of the fixture's state and a probe of the session the next request gets; an attack
// that changed either is named, and the fixture restored so the next one is judged on an
// intact fixture. Each test brings its own snapshot, restore, probe and runners; this module
// holds the loop, the engine runner, the reader engine and the report.
import pg from 'pg';
import type { Engine } from '../../src/engines/engine.ts';
import { createEngine } from '../../src/engines/index.ts';
import type { Harness } from './harness.ts';

export type Snapshot = Record<string, unknown>;

/** The machine's PostgreSQL as the superuser, in its maintenance database. */
export const ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

/** Cuts a client's socket without a goodbye (a victim that must not answer any more). */
export function destroy(client: pg.Client): void {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

export async function connect(url: string, applicationName: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: applicationName });
  // A terminated idle connection reports on 'error': unlistened, it would end the process.
  client.on('error', () => {});
  await client.connect();
  return client;
}

export function changedKeys(before: Snapshot, after: Snapshot): string[] {
  return Object.keys(before).filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]));
}

export interface Outcome<A> {
  attack: A;
  /** HTTP status (API replays) or 'ok' / the error message (engine replays). */
  status: number | string;
  body: unknown;
  /** Snapshot keys the attack changed. */
  state: string[];
  /** Session state the next request saw. */
  session: string[];
}

export interface Runner<P> {
  /** Runs one statement; returns its status and body (never throws for a refusal). */
  attack(sql: string, params: unknown[]): Promise<{ status: number | string; body: unknown }>;
  /** The session probe, as the next request on the same pooled backend; else the error. */
  probe(): Promise<P | string>;
}

export interface ReplayFixture<P> {
  snapshot(): Promise<Snapshot>;
  restore(): Promise<void>;
  /** What the probe shows moved since the baseline taken before the list. */
  sessionChanges(baseline: P, probed: P): string[];
  /** The parameters an attack is sent with (default: none). */
  paramsFor?(sql: string): unknown[];
}

export async function replay<A extends { sql: string }, P>(
  fx: ReplayFixture<P>,
  runner: Runner<P>,
  attacks: readonly A[],
): Promise<{ outcomes: Outcome<A>[]; first: Snapshot; last: Snapshot }> {
  const baseline = await runner.probe();
  if (typeof baseline === 'string') throw new Error(`session probe failed before the list: ${baseline}`);
  const first = await fx.snapshot();
  let before = first;
  const outcomes: Outcome<A>[] = [];
  for (const attack of attacks) {
    const { status, body } = await runner.attack(attack.sql, fx.paramsFor?.(attack.sql) ?? []);
    const probed = await runner.probe();
    const session = typeof probed === 'string' ? [`probe failed: ${probed}`] : fx.sessionChanges(baseline, probed);
    const after = await fx.snapshot();
    const state = changedKeys(before, after);
    outcomes.push({ attack, status, body, state, session });
    if (state.length > 0 || session.length > 0) {
      await fx.restore();
      before = await fx.snapshot();
    } else {
      before = after;
    }
  }
  return { outcomes, first, last: await fx.snapshot() };
}

/** Attacks straight through dbq's engine (the guard bypassed), read-only; `probe` runs the
 * session probe with the same `run`. */
export function engineRunner<P>(
  engine: Engine,
  timeoutMs: number,
  probe: (run: (sql: string) => Promise<{ rows: unknown[][] }>) => Promise<P>,
): Runner<P> {
  const run = (sql: string, params: unknown[] = []) =>
    engine.execute({ sql, params, readOnly: true, timeoutMs, maxRows: 100, maxBytes: 1e6 });
  return {
    async attack(sql, params) {
      try {
        const r = await run(sql, params);
        return { status: 'ok', body: r.rows };
      } catch (err) {
        return { status: (err as Error).message, body: (err as { details?: unknown }).details ?? null };
      }
    },
    async probe() {
      try {
        return await probe((sql) => run(sql));
      } catch (err) {
        return (err as Error).message;
      }
    },
  };
}

/** dbq's PostgreSQL engine on `database` as the login `user` (no password); the caller closes it. */
export function readerEngine(database: string, user: string, maxConnections = 1): Engine {
  return createEngine({
    engine: 'postgres',
    host: '127.0.0.1',
    port: 5432,
    database,
    user,
    password: null,
    ssl: false,
    maxConnections,
    acquireTimeoutMs: 5000,
    connectTimeoutMs: 5000,
  });
}

/** A login role that reads everything and may change nothing (pg_read_all_data). */
export async function createReaderRole(admin: pg.Client, role: string): Promise<void> {
  await admin.query(`CREATE ROLE ${role} LOGIN`);
  await admin.query(`GRANT pg_read_all_data TO ${role}`);
}

export async function dropReaderRole(admin: pg.Client, role: string): Promise<void> {
  await admin.query(`DROP OWNED BY ${role}`);
  await admin.query(`DROP ROLE IF EXISTS ${role}`);
}

/** The next two numbers random() gives after setseed(`seed`): what a backend an attack seeded
 * answers next. */
export async function seededRandoms(seed: number, applicationName: string): Promise<[number, number]> {
  const ref = await connect(ADMIN_URL, applicationName);
  try {
    await ref.query(`SELECT setseed(${seed})`);
    const r = await ref.query('SELECT random() AS a, random() AS b');
    return [Number(r.rows[0].a), Number(r.rows[0].b)];
  } finally {
    await ref.end();
  }
}

/** Each of `reads` through POST /api/query as the read-only key: the ones not answered 200,
 * one line each with what the answer said (`why`, default the whole body). */
export async function refusedReads(
  h: Harness,
  connectionId: string,
  reads: readonly string[],
  why: (body: any) => string = (b) => JSON.stringify(b),
): Promise<string[]> {
  const refused: string[] = [];
  for (const sql of reads) {
    const res = await h.call('POST', '/api/query', h.readerKey, { connectionId, sql, params: [] });
    if (res.status !== 200) refused.push(`${res.status} ${sql} → ${why(res.body)}`);
  }
  return refused;
}

/** The outcomes `pick` finds a change in, one line each. */
export function stateReport<A>(outcomes: Outcome<A>[], pick: (o: Outcome<A>) => string[], label: (a: A) => string): string[] {
  return outcomes.filter((o) => pick(o).length > 0).map((o) => `${label(o.attack)} → ${o.status} changed ${pick(o).join(', ')}`);
}

/** Clean-up that carries on past a failing step and throws once at the end, naming each. */
export function cleanup(): { attempt(what: string, work: () => Promise<unknown>): Promise<void>; done(): void } {
  const problems: string[] = [];
  return {
    async attempt(what, work) {
      try {
        await work();
      } catch (err) {
        problems.push(`${what}: ${(err as Error).message}`);
      }
    },
    done() {
      if (problems.length > 0) throw new Error(`cleanup: ${problems.join('; ')}`);
    },
  };
}
