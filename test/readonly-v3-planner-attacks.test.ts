// Read-only guard v3 (PostgreSQL 15): code the planner and executor reach
// without the statement naming it. test/fixtures/pg-attacks-v3.ts replayed against the two
// databases it describes ('user', 'builtin'), built by this test as the superuser straight
// through pg (once each, then cloned per block), layer by layer.
//
// - "positive controls": as the superuser, in BEGIN READ ONLY … ROLLBACK on a fresh connection,
//   every attack has its effect (the victim backend is ended, or the database's statistics are
//   reset), the harm functions move the sequence, hold an advisory lock and seed random() outside
//   a read-only transaction, and pg_proc labels every one of them IMMUTABLE. So the other blocks
//   cannot pass by not looking.
// - "allowlist alone": the guard by itself, on a superuser connection with no reader role: every
//   attack through POST /api/query must be refused (403 insufficient_permissions), and neither
//   the database, the server nor the next request's session may show a trace.
// - "database alone": the guard bypassed, every attack run straight through dbq's engine as a
//   login role with pg_read_all_data only. The state must not move (LANGUAGE internal bindings
//   apart: the database cannot hold those, see there).
// - "false refusals": in a database holding a user type with an evil `=`, reads on
//   built-in types and on a table with harmless user IMMUTABLE index functions stay allowed
//   (test/readonly-v3-type-aware-operators.test.ts reads built-in types in the attack databases).
//
// After every attack the test takes a snapshot; an attack that changed something is named, and
// the fixture is restored (other backends ended, sequence reset, victim started again) so the
// next attack is judged on an intact fixture.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/engines/engine.ts';
import {
  PG_ATTACKS_V3,
  V3_AFTER_SETUP_SQL,
  V3_ALLOWED_READS,
  V3_FALSE_REFUSAL_SQL,
  V3_IMMUTABLE_LIARS,
  V3_LOCK_KEY,
  V3_FIXTURE_SQL,
  V3_SEED,
  V3_VICTIM_APP,
  type PgAttackV3,
  type PgAttackV3Fixture,
} from './fixtures/pg-attacks-v3.ts';
import { createHarness, type Harness } from './support/harness.ts';
import * as attacks from './support/pg-attack-replay.ts';
import { until } from './support/wait.ts';

const SNAPSHOT_APP = 'dbq_v3_snapshot';
const RUN = `${process.pid}_${Math.random().toString(36).slice(2, 7)}`;
const BASE = `dbq_g3_${RUN}`;
const READER_ROLE = `dbq_t3_reader_${RUN}`;
const LONG = 120_000;

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

interface Fixture {
  name: string;
  url: string;
  /** Superuser, in the fixture database: snapshots and restores. */
  db: pg.Client;
  victim: pg.Client | null;
  /** The attack database has v3_seq; the false-refusal one does not. */
  sequence: boolean;
}

let admin: pg.Client;
let roleCreated = false;
const fixtures: Fixture[] = [];
const fixtureNames: string[] = [];
const extraClients: pg.Client[] = [];
const engines: Engine[] = [];
/** random() twice after setseed(V3_SEED): what a seeded backend answers next. */
let seeded: [number, number];

/** A database built once per kind, cloned for each block (CREATE DATABASE … TEMPLATE): building
 * runs the fixture SQL (and the harm) once. */
const templates = new Map<PgAttackV3Fixture, Promise<string>>();

function templateFor(kind: PgAttackV3Fixture): Promise<string> {
  let made = templates.get(kind);
  if (made === undefined) {
    made = (async () => {
      const name = `${BASE}_t${kind[0]}`;
      fixtureNames.push(name);
      await admin.query(`CREATE DATABASE ${name}`);
      const db = await attacks.connect(`postgres://postgres@127.0.0.1:5432/${name}`, SNAPSHOT_APP);
      try {
        await db.query(V3_FIXTURE_SQL[kind]);
        // Building the objects ran the harm (index expressions, CHECKs, range values) here.
        await db.query(V3_AFTER_SETUP_SQL);
      } finally {
        await db.end();
      }
      return name;
    })();
    templates.set(kind, made);
  }
  return made;
}

/** An attack database of `kind` (a clone of its template), or one built from `sql`. */
async function createFixture(tag: string, source: { kind: PgAttackV3Fixture } | { sql: string }): Promise<Fixture> {
  const name = `${BASE}_${tag}`;
  const sequence = 'kind' in source;
  const template = 'kind' in source ? await templateFor(source.kind) : undefined;
  fixtureNames.push(name);
  await admin.query(`CREATE DATABASE ${name}${template === undefined ? '' : ` TEMPLATE ${template}`}`);
  const url = `postgres://postgres@127.0.0.1:5432/${name}`;
  const db = await attacks.connect(url, SNAPSHOT_APP);
  const fx: Fixture = { name, url, db, victim: null, sequence };
  fixtures.push(fx);
  if ('sql' in source) {
    await db.query(source.sql);
    await db.query('SELECT pg_advisory_unlock_all()');
  }
  await db.query(`GRANT CONNECT ON DATABASE ${name} TO ${READER_ROLE}`);
  fx.victim = await attacks.connect(url, V3_VICTIM_APP);
  return fx;
}

function snapshotSql(fx: Fixture): string {
  return `SELECT
  ${fx.sequence ? "(SELECT last_value || ':' || is_called FROM v3_seq)" : "''"} AS sequence,
  EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = '${V3_VICTIM_APP}' AND datname = current_database()) AS victim_alive,
  (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))::int AS advisory_locks,
  (SELECT coalesce(stats_reset::text, '') FROM pg_stat_database WHERE datname = current_database()) AS stats_reset`;
}

async function snapshot(fx: Fixture): Promise<attacks.Snapshot> {
  const r = await fx.db.query(snapshotSql(fx));
  return r.rows[0];
}

/** Every other backend of the database ended (pooled connections, victim), the sequence reset,
 * the victim started again. A statistics reset cannot be undone: the next snapshot is the new
 * baseline. */
async function restore(fx: Fixture): Promise<void> {
  await fx.db.query(
    'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
  );
  if (fx.victim) attacks.destroy(fx.victim);
  fx.victim = null;
  await until('backends to end', async () => {
    const r = await fx.db.query(
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    return r.rows[0].n === 0;
  });
  if (fx.sequence) await fx.db.query("SELECT setval('v3_seq', 1, false)");
  fx.victim = await attacks.connect(fx.url, V3_VICTIM_APP);
}

const label = (a: PgAttackV3) => `[${a.mechanism}${a.fixture === 'builtin' ? ', builtin db' : ''}] ${a.sql}`;
const KINDS: readonly PgAttackV3Fixture[] = ['user', 'builtin'];
const attacksIn = (kind: PgAttackV3Fixture) => PG_ATTACKS_V3.filter((a) => a.fixture === kind);

/** One attack database of each kind. */
async function createAttackFixtures(tag: string): Promise<Record<PgAttackV3Fixture, Fixture>> {
  return {
    user: await createFixture(`${tag}_u`, { kind: 'user' }),
    builtin: await createFixture(`${tag}_b`, { kind: 'builtin' }),
  };
}

/** Both databases replayed; outcomes in list order. */
async function replayAll(fxs: Record<PgAttackV3Fixture, Fixture>, runnerFor: (kind: PgAttackV3Fixture) => Runner): Promise<Replayed> {
  const parts = [];
  for (const kind of KINDS) parts.push(await replay(fxs[kind], runnerFor(kind), attacksIn(kind)));
  return { outcomes: parts.flatMap((p) => p.outcomes), first: parts.map((p) => p.first), last: parts.map((p) => p.last) };
}

interface Replayed {
  outcomes: Outcome[];
  first: attacks.Snapshot[];
  last: attacks.Snapshot[];
}

// ---------------------------------------------------------------------------------------------
// Replaying the list
// ---------------------------------------------------------------------------------------------

type Outcome = attacks.Outcome<PgAttackV3>;
/** random() twice, as the next request on the same pooled backend. */
type Runner = attacks.Runner<[number, number]>;

function replay(
  fx: Fixture,
  runner: Runner,
  list: readonly PgAttackV3[],
): Promise<{ outcomes: Outcome[]; first: attacks.Snapshot; last: attacks.Snapshot }> {
  return attacks.replay(
    {
      snapshot: () => snapshot(fx),
      restore: () => restore(fx),
      sessionChanges: (_baseline, probed) =>
        probed[0] === seeded[0] && probed[1] === seeded[1] ? [`random() replays setseed(${V3_SEED})`] : [],
    },
    runner,
    list,
  );
}

/** The next two numbers of the backend's random(): after setseed(V3_SEED), `seeded`. */
const PROBE_SQL = 'SELECT random() AS a, random() AS b';

/** Attacks with `key`; the probe with the admin key, so that it runs whatever the guard thinks of
 * it (the guard refuses every read of the 'builtin' database today; the connection has no reader
 * login: reads and writes share its one pooled backend). */
function apiRunner(h: Harness, key: () => string, connectionId: string): Runner {
  return {
    async attack(sql) {
      const res = await h.call('POST', '/api/query', key(), { connectionId, sql, params: [], timeoutMs: 10_000 });
      return { status: res.status, body: res.body };
    },
    async probe() {
      const a = await h.call('POST', '/api/query', h.adminKey, { connectionId, sql: PROBE_SQL, params: [] });
      if (a.status !== 200) return `${a.status} ${JSON.stringify(a.body)}`;
      return [Number(a.body.data.rows[0][0]), Number(a.body.data.rows[0][1])];
    },
  };
}

function engineRunner(engine: Engine): Runner {
  return attacks.engineRunner(engine, 10_000, async (run) => {
    const a = await run(PROBE_SQL);
    return [Number(a.rows[0][0]), Number(a.rows[0][1])];
  });
}

function readerEngine(fx: Fixture): Engine {
  const engine = attacks.readerEngine(fx.name, READER_ROLE);
  engines.push(engine);
  return engine;
}

/** A response in one line: `ran` for a success, else its code, message and details. */
function brief(body: unknown): string {
  const b = body as { success?: boolean; code?: string; message?: string; error?: string; details?: unknown } | null;
  if (b?.success === true) return 'ran';
  const message = b?.message ?? b?.error;
  return `${b?.code}: ${message}${b?.details === undefined ? '' : ` ${JSON.stringify(b.details)}`}`.slice(0, 300);
}

const stateReport = (outcomes: Outcome[], pick: (o: Outcome) => string[]) => attacks.stateReport(outcomes, pick, label);

// ---------------------------------------------------------------------------------------------
// Suite
// ---------------------------------------------------------------------------------------------

let h: Harness;

beforeAll(async () => {
  admin = await attacks.connect(attacks.ADMIN_URL, SNAPSHOT_APP);
  await attacks.createReaderRole(admin, READER_ROLE);
  roleCreated = true;
  seeded = await attacks.seededRandoms(V3_SEED, SNAPSHOT_APP);
  h = await createHarness();
}, 60_000);

afterAll(async () => {
  const { attempt, done } = attacks.cleanup();
  await attempt('harness', async () => h?.close());
  for (const e of engines) await attempt('engine', () => e.close());
  for (const c of extraClients) attacks.destroy(c);
  for (const fx of fixtures) {
    if (fx.victim) attacks.destroy(fx.victim);
    await attempt(`${fx.name} client`, () => fx.db.end());
  }
  if (admin) {
    for (const name of fixtureNames) await attempt(`database ${name}`, () => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    if (roleCreated) {
      await attempt('role', () => attacks.dropReaderRole(admin, READER_ROLE));
    }
    await attempt('admin', () => admin.end());
  }
  done();
}, 60_000);

describe('the attack list', () => {
  it('has at least 80 statements across every mechanism, each once', () => {
    const counts: Record<string, number> = {};
    for (const a of PG_ATTACKS_V3) counts[a.mechanism] = (counts[a.mechanism] ?? 0) + 1;
    expect(PG_ATTACKS_V3.length).toBeGreaterThanOrEqual(80);
    for (const m of [
      'implicit-eq',
      'opclass',
      'hash-merge',
      'negator-commutator',
      'estimator',
      'range',
      'relation-fold',
      'plan-only-write',
      'type-io',
      'cast',
      'container',
      'indirect',
    ]) {
      expect(counts[m] ?? 0, m).toBeGreaterThan(0);
    }
    expect(new Set(PG_ATTACKS_V3.map((a) => a.sql)).size).toBe(PG_ATTACKS_V3.length);
  });
});

describe('positive controls: the attacks are live for a superuser, and the snapshot sees them', () => {
  let fxs: Record<PgAttackV3Fixture, Fixture>;
  let fx: Fixture;

  beforeAll(async () => {
    fxs = await createAttackFixtures('pc');
    fx = fxs.user;
  }, 60_000);

  it('pg_proc labels every harmful function IMMUTABLE: the label is no evidence', async () => {
    const r = await fx.db.query('SELECT proname, provolatile FROM pg_proc WHERE proname = ANY ($1::text[])', [V3_IMMUTABLE_LIARS]);
    const labels = Object.fromEntries(r.rows.map((row) => [row.proname, row.provolatile]));
    expect(labels).toEqual(Object.fromEntries(V3_IMMUTABLE_LIARS.map((name) => [name, 'i'])));
    const b = await fxs.builtin.db.query("SELECT provolatile FROM pg_proc WHERE proname = 'v3_c_from_int'");
    expect(b.rows).toEqual([{ provolatile: 'i' }]);
  });

  it('outside a read-only transaction the harm moves the sequence, holds the advisory lock, seeds random() and ends the victim', async () => {
    for (const fn of ['v3_harm', 'v3_harm_path', 'v3_harm_sql', 'v3_wrap']) {
      const before = await snapshot(fx);
      const c = await attacks.connect(fx.url, 'dbq_v3_control');
      extraClients.push(c);
      try {
        await c.query(`SELECT ${fn}(1)`);
        const r = await c.query(PROBE_SQL);
        expect([Number(r.rows[0].a), Number(r.rows[0].b)], fn).toEqual(seeded);
        const locks = await fx.db.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND pid = $2", [
          V3_LOCK_KEY,
          (c as unknown as { processID: number }).processID,
        ]);
        expect(locks.rows[0].n, fn).toBe(1);
        // The SQL harm has no nextval: PostgreSQL refuses it in a read-only transaction, which
        // would end the statement before the other effects when it comes first.
        const expected =
          fn === 'v3_harm' || fn === 'v3_harm_path' ? ['sequence', 'victim_alive', 'advisory_locks'] : ['victim_alive', 'advisory_locks'];
        expect(attacks.changedKeys(before, await snapshot(fx)).sort(), fn).toEqual(expected.sort());
      } finally {
        attacks.destroy(c);
        await restore(fx);
      }
    }
  });

  it(
    'every attack, in BEGIN READ ONLY … ROLLBACK, ends the victim or resets the statistics',
    async () => {
      const missed: string[] = [];
      for (const attack of PG_ATTACKS_V3) {
        const fx = fxs[attack.fixture];
        const before = await snapshot(fx);
        // A fresh backend: index expressions, predicates and partition keys are folded when a
        // backend first loads them.
        const c = await attacks.connect(fx.url, 'dbq_v3_control');
        extraClients.push(c);
        let error = '';
        try {
          await c.query('BEGIN READ ONLY');
          await c.query(attack.sql);
        } catch (err) {
          error = ` (${(err as Error).message})`;
        }
        await c.query('ROLLBACK').catch(() => {});
        attacks.destroy(c);
        const changed = attacks.changedKeys(before, await snapshot(fx));
        const key = attack.effect === 'victim' ? 'victim_alive' : 'stats_reset';
        if (!changed.includes(key)) missed.push(`${label(attack)} changed [${changed.join(', ')}]${error}`);
        if (changed.length > 0) await restore(fx);
      }
      expect(missed).toEqual([]);
    },
    LONG,
  );
});

describe('allowlist alone: a superuser connection, every attack through POST /api/query by a read-only key', () => {
  let result: Replayed;

  beforeAll(async () => {
    const fxs = await createAttackFixtures('su');
    for (const kind of KINDS) {
      const created = await h.call('POST', '/api/connections', h.adminKey, {
        name: `v3-su-${kind}`,
        url: fxs[kind].url,
        maxConnections: 1,
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
    }
    result = await replayAll(fxs, (kind) => apiRunner(h, () => h.readerKey, `v3-su-${kind}`));
  }, LONG);

  it('every attack is refused: 403 insufficient_permissions', () => {
    const wrong = result.outcomes
      .filter((o) => !(o.status === 403 && (o.body as { code?: string })?.code === 'insufficient_permissions'))
      .map((o) => `${o.status} ${label(o.attack)} → ${brief(o.body)}${o.state.length > 0 ? ` [changed ${o.state.join(', ')}]` : ''}`);
    expect(wrong).toEqual([]);
  });

  it('no attack changes database or server state (victim, sequence, advisory locks, statistics), and the whole list leaves it as it was', () => {
    expect(stateReport(result.outcomes, (o) => o.state)).toEqual([]);
    expect(result.last).toEqual(result.first);
  });

  it('no attack leaves session state for the next request on the pooled backend', () => {
    expect(stateReport(result.outcomes, (o) => o.session)).toEqual([]);
  });
});

describe('database alone: the guard bypassed, every attack through the engine as a reader role', () => {
  let result: Replayed;
  const cBinding = (a: PgAttackV3) => a.effect === 'stats';

  beforeAll(async () => {
    const fxs = await createAttackFixtures('db');
    result = await replayAll(fxs, (kind) => engineRunner(readerEngine(fxs[kind])));
  }, LONG);

  it('no attack changes database or server state (LANGUAGE internal bindings apart)', () => {
    expect(
      stateReport(
        result.outcomes.filter((o) => !cBinding(o.attack)),
        (o) => o.state,
      ),
    ).toEqual([]);
  });

  it('a LANGUAGE internal binding of pg_stat_reset runs for any reader: only the guard holds it back', () => {
    // An estimator or a type input function is called by the planner and the parser without any
    // EXECUTE check, and the C function behind pg_stat_reset checks no privilege itself (its
    // ACL is on the built-in pg_proc entry, not on a second name bound to the same symbol).
    const reset = result.outcomes.filter((o) => cBinding(o.attack) && o.state.includes('stats_reset'));
    expect(reset.map((o) => o.attack.sql).sort()).toEqual(
      PG_ATTACKS_V3.filter(cBinding)
        .map((a) => a.sql)
        .sort(),
    );
  });

  it('no attack leaves session state for the next request on the pooled backend', () => {
    expect(stateReport(result.outcomes, (o) => o.session)).toEqual([]);
  });
});

describe('false refusals: a user type with an evil = leaves reads on built-in types allowed', () => {
  let fx: Fixture;

  beforeAll(async () => {
    fx = await createFixture('fr', { sql: V3_FALSE_REFUSAL_SQL });
    const created = await h.call('POST', '/api/connections', h.adminKey, { name: 'v3-fr', url: fx.url, maxConnections: 1 });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
  }, 60_000);

  it(`${V3_ALLOWED_READS.length} reads answer 200 and change nothing`, async () => {
    const before = await snapshot(fx);
    expect(await attacks.refusedReads(h, 'v3-fr', V3_ALLOWED_READS, brief)).toEqual([]);
    expect(await snapshot(fx)).toEqual(before);
  }, 60_000);
});
