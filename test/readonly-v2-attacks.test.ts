// Read-only guard v2 (PostgreSQL 15): test/fixtures/pg-attacks-v2.ts replayed against a real
// database whose connection user is a superuser, layer by layer.
//
// - "positive controls": as the superuser, straight through pg, the attacks are live: attribute
//   notation reads files, index and heap writes survive BEGIN READ ONLY … ROLLBACK, setseed and
//   advisory locks outlive ROLLBACK, volatility labels lie. And the snapshot sees each effect,
//   so the other blocks cannot pass by not looking.
// - "allowlist alone": the guard by itself, on a superuser connection with no reader role.
//   Every attack through POST /api/query must be refused (403; 400 for several statements),
//   the 403 must name the function, and neither the database, the server nor the next
//   request's session may show any trace. Reads that must stay allowed get 200. A catalog
//   changed outside dbq is seen once its 1 s change check has run.
// - "database alone": the guard bypassed, every attack run straight through dbq's engine as a
//   login role with pg_read_all_data only. Calls may succeed or fail; the state must not move
//   (SECURITY DEFINER functions and file_fdw programs apart: the database cannot hold those).
//
// After every attack the test takes a snapshot; when an attack changed something it is named,
// and the fixture is restored (tables rebuilt, victims reconnected, slots dropped, pooled
// backends ended) so later attacks are judged on an intact fixture.
//
// Past 400 lines on purpose: a catalogue of attacks on one fixture. Most of the length is that
// fixture (the objects every attack needs, the snapshot that must see each effect, the restore
// after one) and it is shared by the three layers: the positive controls prove, on the same
// objects, that what the other two layers find unchanged was really live. Split by layer, each
// file would rebuild the same superuser database (extensions, foreign servers, victims) and the
// controls would prove nothing about the others' fixture. The attacks themselves are listed in
// test/fixtures/pg-attacks-v2.ts, the replay and snapshot helpers in
// test/support/pg-attack-replay.ts.
import fs from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/engines/engine.ts';
import {
  ATTACK_SEED,
  BUSY_VICTIM_APP,
  NOTIFY_CHANNEL,
  PG_ATTACKS_V2,
  SECURITY_DEFINER_FUNCTIONS,
  SERVER_PROGRAM_RELATIONS,
  VICTIM_APP,
  type PgAttackV2,
} from './fixtures/pg-attacks-v2.ts';
import { createHarness, type Harness } from './support/harness.ts';
import * as attacks from './support/pg-attack-replay.ts';
import { sleep, until } from './support/wait.ts';

const SNAPSHOT_APP = 'dbq_guard_snapshot';
const RUN = `${process.pid}_${Math.random().toString(36).slice(2, 7)}`;
const BASE = `dbq_g2_${RUN}`;
const READER_ROLE = `dbq_t_reader_${RUN}`;
const LONG = 600_000;

// ---------------------------------------------------------------------------------------------
// The fixture database
// ---------------------------------------------------------------------------------------------

/** Rows, index pages and sequence as every attack expects to find them; run again to restore. */
const DATA_SQL = `
TRUNCATE guard_probe;
INSERT INTO guard_probe VALUES (1, 'a'), (2, 'b'), (3, NULL);
SELECT setval('guard_seq', 1, false);
DROP TABLE IF EXISTS brin_t;
CREATE TABLE brin_t (id int, pad text) WITH (autovacuum_enabled = false);
INSERT INTO brin_t SELECT g, repeat('x', 200) FROM generate_series(1, 200) g;
-- Created on 200 rows (ranges 0-5 summarized), then 200 more rows in ranges nobody summarized.
CREATE INDEX brin_idx ON brin_t USING brin (id) WITH (pages_per_range = 1, autosummarize = false);
INSERT INTO brin_t SELECT g, repeat('x', 200) FROM generate_series(201, 400) g;
DROP TABLE IF EXISTS gin_t;
CREATE TABLE gin_t (id int, doc tsvector) WITH (autovacuum_enabled = false);
CREATE INDEX gin_idx ON gin_t USING gin (doc) WITH (fastupdate = on, gin_pending_list_limit = 4096);
-- Inserted after the index exists: the entries wait in the pending list.
INSERT INTO gin_t SELECT g, to_tsvector('simple', 'word' || g || ' other' || (g % 7)) FROM generate_series(1, 100) g;
`;

/** Index and table names inside function bodies are text (plpgsql, quoted SQL bodies, a
 * text::regclass default) so rebuilding brin_t / gin_t leaves the functions working. */
const SETUP_SQL = `
CREATE EXTENSION pageinspect;
CREATE EXTENSION dblink;
CREATE EXTENSION tablefunc;
CREATE EXTENSION xml2;
CREATE EXTENSION pg_surgery;
CREATE TABLE guard_probe (id int PRIMARY KEY, v text) WITH (autovacuum_enabled = false);
CREATE SEQUENCE guard_seq;
CREATE TYPE guard_addr AS (city text, zip text);
CREATE TABLE guard_people (id int PRIMARY KEY, addr guard_addr);
INSERT INTO guard_people VALUES (1, ROW('Paris', '75001')), (2, ROW('Lyon', '69001'));
${DATA_SQL}
CREATE FUNCTION evil() RETURNS int LANGUAGE sql VOLATILE AS 'INSERT INTO guard_probe VALUES (99, ''x'') RETURNING 1';
CREATE FUNCTION evil_brin() RETURNS bigint LANGUAGE plpgsql VOLATILE
  AS $$BEGIN RETURN brin_summarize_new_values('brin_idx'); END$$;
CREATE FUNCTION evil_row(guard_probe) RETURNS int LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM gin_clean_pending_list('gin_idx'); RETURN 1; END$$;
CREATE FUNCTION upper(guard_probe) RETURNS text LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM gin_clean_pending_list('gin_idx'); RETURN 'x'; END$$;
-- Left at the default volatility (VOLATILE): one harmless, one not.
CREATE FUNCTION guard_double(n int) RETURNS int LANGUAGE sql AS 'SELECT n * 2';
CREATE FUNCTION guard_touch(n int) RETURNS int LANGUAGE plpgsql
  AS $$BEGIN PERFORM gin_clean_pending_list('gin_idx'); RETURN n; END$$;
CREATE FUNCTION "PG_READ_FILE"(text) RETURNS text LANGUAGE sql VOLATILE AS 'SELECT pg_read_file($1)';
-- pg_proc marks a user aggregate immutable whatever its state function does.
CREATE FUNCTION evil_sfunc(int, int) RETURNS int LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM heap_force_freeze('guard_probe'::regclass, ARRAY['(0,1)']::tid[]); RETURN coalesce($1, 0) + $2; END$$;
CREATE AGGREGATE evil_agg(int) (SFUNC = evil_sfunc, STYPE = int);
-- Volatility labels that lie.
CREATE FUNCTION liar_stable() RETURNS int LANGUAGE plpgsql STABLE
  AS $$BEGIN PERFORM setseed(${ATTACK_SEED}); RETURN 1; END$$;
CREATE FUNCTION liar_immutable() RETURNS int LANGUAGE plpgsql IMMUTABLE
  AS $$BEGIN PERFORM brin_summarize_range('brin_idx', 11); RETURN 1; END$$;
CREATE FUNCTION innocent(a bigint DEFAULT brin_summarize_new_values('brin_idx'::text::regclass)) RETURNS bigint
  LANGUAGE sql IMMUTABLE AS 'SELECT a';
CREATE FUNCTION evil_definer() RETURNS int LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  AS $$BEGIN PERFORM brin_desummarize_range('brin_idx', 1); RETURN 1; END$$;
-- Operators, a cast and a domain whose functions are volatile.
CREATE FUNCTION evil_op_fn(int, int) RETURNS bool LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM brin_desummarize_range('brin_idx', 0); RETURN true; END$$;
CREATE OPERATOR ===> (LEFTARG = int, RIGHTARG = int, FUNCTION = evil_op_fn);
CREATE TYPE guard_box AS (n int);
CREATE FUNCTION guard_box_plus(guard_box, int) RETURNS int LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM brin_summarize_range('brin_idx', 6); RETURN $2; END$$;
CREATE OPERATOR + (LEFTARG = guard_box, RIGHTARG = int, FUNCTION = guard_box_plus);
CREATE FUNCTION guard_box_to_int(guard_box) RETURNS int LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM pg_stat_reset(); RETURN 1; END$$;
CREATE CAST (guard_box AS int) WITH FUNCTION guard_box_to_int(guard_box);
CREATE FUNCTION guard_dom_check(int) RETURNS bool LANGUAGE plpgsql VOLATILE
  AS $$BEGIN
    PERFORM pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = '${BUSY_VICTIM_APP}' AND datname = current_database();
    RETURN true;
  END$$;
CREATE DOMAIN guard_dom AS int CHECK (guard_dom_check(VALUE));
CREATE VIEW evil_view AS SELECT evil_brin() AS x;
CREATE VIEW evil_view_outer AS SELECT x FROM evil_view;
-- ORDER BY … USING takes only the "<" or ">" of a btree operator family, and the sort calls
-- the family's comparison function, not the operator's. Families of their own, with no
-- operator class: a class for int with volatile members would make int an unsafe type, and
-- every table with an int column unreadable. <<< runs a volatile function itself; <~< does not.
CREATE FUNCTION evil_sort_fn(int, int) RETURNS bool LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM brin_summarize_range('brin_idx', 7); RETURN $1 < $2; END$$;
CREATE OPERATOR <<< (LEFTARG = int, RIGHTARG = int, FUNCTION = evil_sort_fn);
CREATE FUNCTION evil_sort_cmp(int, int) RETURNS int LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM brin_summarize_range('brin_idx', 7); RETURN btint4cmp($1, $2); END$$;
CREATE FUNCTION guard_int_lt(int, int) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT int4lt($1, $2)';
CREATE FUNCTION guard_int_eq(int, int) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT int4eq($1, $2)';
CREATE OPERATOR <~< (LEFTARG = int, RIGHTARG = int, FUNCTION = guard_int_lt);
-- The families' own equality operator (ORDER BY … USING needs one), so the built-in = joins no
-- family of ours.
CREATE OPERATOR =~= (LEFTARG = int, RIGHTARG = int, FUNCTION = guard_int_eq);
CREATE OPERATOR FAMILY guard_sort_fam USING btree;
ALTER OPERATOR FAMILY guard_sort_fam USING btree
  ADD OPERATOR 1 <<< (int, int), OPERATOR 3 =~= (int, int), FUNCTION 1 (int, int) evil_sort_cmp(int, int);
CREATE OPERATOR FAMILY guard_sneaky_fam USING btree;
ALTER OPERATOR FAMILY guard_sneaky_fam USING btree
  ADD OPERATOR 1 <~< (int, int), OPERATOR 3 =~= (int, int), FUNCTION 1 (int, int) evil_sort_cmp(int, int);
-- A type whose default btree operator class is volatile throughout. Its operators are not
-- named <, = …: one volatile < anywhere makes the guard refuse every <, the allowed reads too.
CREATE TYPE guard_m AS (n int);
CREATE FUNCTION guard_m_cmp(a guard_m, b guard_m) RETURNS int LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM gin_clean_pending_list('gin_idx'); RETURN btint4cmp(a.n, b.n); END$$;
CREATE FUNCTION guard_m_lt(a guard_m, b guard_m) RETURNS bool LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM gin_clean_pending_list('gin_idx'); RETURN a.n < b.n; END$$;
CREATE FUNCTION guard_m_le(a guard_m, b guard_m) RETURNS bool LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM gin_clean_pending_list('gin_idx'); RETURN a.n <= b.n; END$$;
CREATE FUNCTION guard_m_eq(a guard_m, b guard_m) RETURNS bool LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM gin_clean_pending_list('gin_idx'); RETURN a.n = b.n; END$$;
CREATE FUNCTION guard_m_ge(a guard_m, b guard_m) RETURNS bool LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM gin_clean_pending_list('gin_idx'); RETURN a.n >= b.n; END$$;
CREATE FUNCTION guard_m_gt(a guard_m, b guard_m) RETURNS bool LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM gin_clean_pending_list('gin_idx'); RETURN a.n > b.n; END$$;
CREATE OPERATOR <% (LEFTARG = guard_m, RIGHTARG = guard_m, FUNCTION = guard_m_lt);
CREATE OPERATOR <=% (LEFTARG = guard_m, RIGHTARG = guard_m, FUNCTION = guard_m_le);
CREATE OPERATOR =% (LEFTARG = guard_m, RIGHTARG = guard_m, FUNCTION = guard_m_eq);
CREATE OPERATOR >=% (LEFTARG = guard_m, RIGHTARG = guard_m, FUNCTION = guard_m_ge);
CREATE OPERATOR >% (LEFTARG = guard_m, RIGHTARG = guard_m, FUNCTION = guard_m_gt);
CREATE OPERATOR CLASS guard_m_ops DEFAULT FOR TYPE guard_m USING btree AS
  OPERATOR 1 <%, OPERATOR 2 <=%, OPERATOR 3 =%, OPERATOR 4 >=%, OPERATOR 5 >%, FUNCTION 1 guard_m_cmp(guard_m, guard_m);
CREATE TABLE guard_mt (m guard_m);
INSERT INTO guard_mt VALUES (ROW(2)), (ROW(1)), (ROW(3)), (ROW(1));
CREATE TYPE guard_wrap AS (m guard_m);
-- A table's own row type with a volatile default operator class (and, in WIDE_SQL, implicit
-- cast); its column is a plain int.
CREATE TABLE guard_rt (n int);
INSERT INTO guard_rt VALUES (2), (1), (1);
CREATE FUNCTION guard_rt_cmp(guard_rt, guard_rt) RETURNS int LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM gin_clean_pending_list('gin_idx'); RETURN btint4cmp($1.n, $2.n); END$$;
CREATE FUNCTION guard_rt_lt(guard_rt, guard_rt) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT int4lt($1.n, $2.n)';
CREATE FUNCTION guard_rt_eq(guard_rt, guard_rt) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT int4eq($1.n, $2.n)';
CREATE OPERATOR <%% (LEFTARG = guard_rt, RIGHTARG = guard_rt, FUNCTION = guard_rt_lt);
CREATE OPERATOR =%% (LEFTARG = guard_rt, RIGHTARG = guard_rt, FUNCTION = guard_rt_eq);
CREATE OPERATOR CLASS guard_rt_ops DEFAULT FOR TYPE guard_rt USING btree AS
  OPERATOR 1 <%%, OPERATOR 3 =%%, FUNCTION 1 guard_rt_cmp(guard_rt, guard_rt);
CREATE FUNCTION guard_rt_text(guard_rt) RETURNS text LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM brin_summarize_range('brin_idx', 11); RETURN $1.n::text; END$$;
-- A type with an implicit cast whose function is volatile (the cast in WIDE_SQL).
CREATE TYPE guard_ct AS (t text);
CREATE FUNCTION guard_ct_text(guard_ct) RETURNS text LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM brin_summarize_range('brin_idx', 8); RETURN $1.t; END$$;
CREATE TABLE guard_ctt (c guard_ct);
INSERT INTO guard_ctt VALUES (ROW('abc'));
-- A domain whose check is volatile, reached inside function bodies and through composites.
CREATE FUNCTION guard_dom_check2(int) RETURNS bool LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM brin_summarize_range('brin_idx', 9); RETURN true; END$$;
CREATE DOMAIN guard_vdom AS int CHECK (guard_dom_check2(VALUE));
CREATE FUNCTION returns_dom() RETURNS guard_vdom LANGUAGE sql STABLE AS 'SELECT 5';
CREATE FUNCTION plpgsql_dom_var() RETURNS int LANGUAGE plpgsql STABLE
  AS $$DECLARE v guard_vdom; BEGIN v := 5; RETURN 1; END$$;
CREATE TYPE guard_dt AS (d guard_vdom);
`;

/** Foreign tables: each program touches `file` (the snapshot's program_ran). The inheritance
 * parent lives outside public, where schema_to_xml('public') — an attack, run for real by the
 * reader role — would scan its foreign child. */
const foreignSql = (file: string) => `
CREATE EXTENSION file_fdw;
CREATE SERVER guard_files FOREIGN DATA WRAPPER file_fdw;
CREATE FOREIGN TABLE ft_prog (line text) SERVER guard_files OPTIONS (program 'touch ${file}');
CREATE FOREIGN TABLE ft_file (line text) SERVER guard_files OPTIONS (filename '/etc/hostname');
CREATE TABLE guard_parted (line text) PARTITION BY LIST (line);
CREATE FOREIGN TABLE ft_part PARTITION OF guard_parted DEFAULT SERVER guard_files OPTIONS (program 'touch ${file}');
CREATE SCHEMA guard_side;
CREATE TABLE guard_side.guard_parent (line text);
CREATE FOREIGN TABLE guard_side.ft_child () INHERITS (guard_side.guard_parent)
  SERVER guard_files OPTIONS (program 'touch ${file}');
`;

/** Objects whose mere presence makes the guard refuse reads the allowed-reads list holds, left
 * out of the database that list runs on: a volatile cast into text (the guard then refuses
 * every cast to text, information_schema's views included) and a volatile = (every =).
 * - implicit casts to text: length(c) calls length(guard_ct_text(c));
 * - a volatile = on a user type: CASE x WHEN y and JOIN USING call it with no operator in the
 *   statement. */
const WIDE_SQL = `
CREATE CAST (guard_rt AS text) WITH FUNCTION guard_rt_text(guard_rt) AS IMPLICIT;
CREATE CAST (guard_ct AS text) WITH FUNCTION guard_ct_text(guard_ct) AS IMPLICIT;
CREATE TYPE guard_e AS (n int);
CREATE FUNCTION guard_e_eq(guard_e, guard_e) RETURNS bool LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM brin_summarize_range('brin_idx', 10); RETURN $1.n = $2.n; END$$;
CREATE OPERATOR = (LEFTARG = guard_e, RIGHTARG = guard_e, FUNCTION = guard_e_eq);
CREATE TABLE guard_et (e guard_e);
INSERT INTO guard_et VALUES (ROW(1));
`;

const SNAPSHOT_SQL = `
SELECT
  (SELECT string_agg(id || ':' || coalesce(v, '-') || CASE WHEN xmin::text = '2' THEN ':frozen' ELSE '' END, ',' ORDER BY id) FROM guard_probe) AS rows,
  (SELECT last_value || ':' || is_called FROM guard_seq) AS sequence,
  (SELECT count(*) FROM pg_largeobject_metadata)::int AS large_objects,
  (SELECT coalesce(string_agg(slot_name, ',' ORDER BY slot_name), '') FROM pg_replication_slots
    WHERE left(slot_name, length(current_database())) = current_database()) AS slots,
  pg_conf_load_time()::text AS conf_loaded,
  EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = '${VICTIM_APP}' AND datname = current_database()) AS victim_alive,
  (SELECT string_agg(state, ',') FROM pg_stat_activity WHERE application_name = '${BUSY_VICTIM_APP}' AND datname = current_database()) AS busy_victim,
  (SELECT string_agg(i.blknum || '=' || i.value, ',' ORDER BY i.blknum)
    FROM generate_series((SELECT lastrevmappage + 1 FROM brin_metapage_info(get_raw_page('brin_idx', 0))),
                         (pg_relation_size('brin_idx') / 8192 - 1)::int) p,
         LATERAL brin_page_items(get_raw_page('brin_idx', p), 'brin_idx') i) AS brin_summaries,
  (SELECT string_agg(r.pages::text, ',') FROM brin_revmap_data(get_raw_page('brin_idx', 1)) r WHERE r.pages <> '(0,0)') AS brin_revmap,
  (SELECT n_pending_pages || '/' || n_pending_tuples FROM gin_metapage_info(get_raw_page('gin_idx', 0))) AS gin_pending,
  (SELECT stats_reset::text FROM pg_stat_database WHERE datname = current_database()) AS db_stats_reset,
  (SELECT stats_reset::text FROM pg_stat_archiver) AS archiver_stats_reset,
  (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))::int AS advisory_locks,
  (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'
    AND application_name NOT IN ('dbq', '${VICTIM_APP}', '${BUSY_VICTIM_APP}', '${SNAPSHOT_APP}'))::int AS stray_backends,
  (pg_stat_file($1, true)).size IS NOT NULL AS program_ran`;

interface Fixture {
  name: string;
  url: string;
  /** Superuser, in the fixture database: snapshots, restores, LISTEN. */
  db: pg.Client;
  notifications: number;
  victims: pg.Client[];
  /** The file the foreign tables' program touches (absent while the fixture is intact). */
  programFile: string;
}

let admin: pg.Client;
const fixtureNames: string[] = [];
const fixtures: Fixture[] = [];
const extraClients: pg.Client[] = [];
const engines: Engine[] = [];
let roleCreated = false;
/** random() after setseed(ATTACK_SEED), twice: what a seeded backend would answer. */
let seeded: [number, number];
let hostname: string;

async function startVictims(fx: Fixture): Promise<void> {
  const idle = await attacks.connect(fx.url, VICTIM_APP);
  const busy = await attacks.connect(fx.url, BUSY_VICTIM_APP);
  busy.query('SELECT pg_sleep(3600)').catch(() => {});
  fx.victims.push(idle, busy);
  await until('the busy victim', async () => {
    const r = await fx.db.query(`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE application_name = '${BUSY_VICTIM_APP}' AND datname = current_database() AND state = 'active' AND query LIKE 'SELECT pg_sleep%'`);
    return r.rows[0].n === 1;
  });
}

/** `wide: false` leaves out WIDE_SQL (for the database the allowed reads run on). */
async function createFixture(tag: string, opts: { wide?: boolean; sql?: string } = {}): Promise<Fixture> {
  const name = `${BASE}_${tag}`;
  fixtureNames.push(name);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = `postgres://postgres@127.0.0.1:5432/${name}`;
  const db = await attacks.connect(url, SNAPSHOT_APP);
  const programFile = `/tmp/dbq_guard_ft_prog_${name}`;
  fs.rmSync(programFile, { force: true });
  const fx: Fixture = { name, url, db, notifications: 0, victims: [], programFile };
  fixtures.push(fx);
  await db.query(SETUP_SQL);
  await db.query(foreignSql(programFile));
  if (opts.wide !== false) await db.query(WIDE_SQL);
  if (opts.sql !== undefined) await db.query(opts.sql);
  await db.query(`GRANT CONNECT ON DATABASE ${name} TO ${READER_ROLE}`);
  db.on('notification', () => fx.notifications++);
  await db.query(`LISTEN ${NOTIFY_CHANNEL}`);
  await startVictims(fx);
  return fx;
}

async function snapshot(fx: Fixture): Promise<attacks.Snapshot> {
  // pg_reload_conf and cancels land asynchronously (signals): give them a moment to show. Kept
  // as a wait: after most attacks nothing must change, and an absence has no event to wait for.
  await sleep(30);
  const r = await fx.db.query(SNAPSHOT_SQL, [fx.programFile]);
  return { ...r.rows[0], notifications: fx.notifications };
}

/** Back to the state DATA_SQL builds: every other backend in the database ended (pooled
 * connections, dblink connections, victims), slots and large objects dropped, the program's
 * file removed, tables rebuilt, victims started again. */
async function restore(fx: Fixture): Promise<void> {
  await fx.db.query(
    'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
  );
  for (const v of fx.victims.splice(0)) attacks.destroy(v);
  await until('backends to end', async () => {
    const r = await fx.db.query(
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    return r.rows[0].n === 0;
  });
  await fx.db.query(`SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
    WHERE left(slot_name, length(current_database())) = current_database() AND NOT active`);
  await fx.db.query('SELECT lo_unlink(oid) FROM pg_largeobject_metadata');
  fs.rmSync(fx.programFile, { force: true });
  await fx.db.query(DATA_SQL);
  await startVictims(fx);
}

function paramsFor(sql: string): unknown[] {
  const n = Math.max(0, ...[...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
  return Array.from({ length: n }, () => '/etc/hostname');
}

function isDefinerAttack(a: PgAttackV2): boolean {
  return SECURITY_DEFINER_FUNCTIONS.some((f) => a.sql.includes(f));
}

function isProgramAttack(a: PgAttackV2): boolean {
  return SERVER_PROGRAM_RELATIONS.some((r) => a.sql.includes(r));
}

function label(a: PgAttackV2): string {
  return `[${a.class}] ${a.sql}`;
}

// ---------------------------------------------------------------------------------------------
// Replaying the list
// ---------------------------------------------------------------------------------------------

interface Probe {
  random: number;
  searchPath: string;
  readOnlyDefault: string;
}

type Outcome = attacks.Outcome<PgAttackV2>;
/** The session probe, then random() again. */
type Runner = attacks.Runner<[Probe, number]>;

function replay(
  fx: Fixture,
  runner: Runner,
  list: readonly PgAttackV2[],
): Promise<{ outcomes: Outcome[]; first: attacks.Snapshot; last: attacks.Snapshot }> {
  return attacks.replay(
    {
      snapshot: () => snapshot(fx),
      restore: () => restore(fx),
      paramsFor,
      sessionChanges([base], [p, second]) {
        const session: string[] = [];
        if (p.random === seeded[0] && second === seeded[1]) session.push(`random() replays setseed(${ATTACK_SEED})`);
        if (p.searchPath !== base.searchPath) session.push(`search_path is ${p.searchPath}`);
        if (p.readOnlyDefault !== base.readOnlyDefault) session.push(`default_transaction_read_only is ${p.readOnlyDefault}`);
        return session;
      },
    },
    runner,
    list,
  );
}

const PROBE_SQL = "SELECT random() AS r, current_setting('search_path') AS sp, current_setting('default_transaction_read_only') AS ro";

function apiRunner(h: Harness, key: () => string, connectionId: string): Runner {
  return {
    async attack(sql, params) {
      const res = await h.call('POST', '/api/query', key(), { connectionId, sql, params, timeoutMs: 5000 });
      return { status: res.status, body: res.body };
    },
    async probe() {
      const a = await h.call('POST', '/api/query', key(), { connectionId, sql: PROBE_SQL, params: [] });
      const b = await h.call('POST', '/api/query', key(), { connectionId, sql: 'SELECT random() AS r', params: [] });
      if (a.status !== 200 || b.status !== 200) return `${a.status}/${b.status} ${JSON.stringify(a.status !== 200 ? a.body : b.body)}`;
      const [r, sp, ro] = a.body.data.rows[0];
      return [{ random: Number(r), searchPath: sp, readOnlyDefault: ro }, Number(b.body.data.rows[0][0])];
    },
  };
}

function engineRunner(engine: Engine): Runner {
  return attacks.engineRunner(engine, 5000, async (run) => {
    const a = await run(PROBE_SQL);
    const b = await run('SELECT random() AS r');
    const [r, sp, ro] = a.rows[0];
    return [{ random: Number(r), searchPath: String(sp), readOnlyDefault: String(ro) }, Number(b.rows[0][0])];
  });
}

function readerEngine(fx: Fixture, maxConnections = 1): Engine {
  const engine = attacks.readerEngine(fx.name, READER_ROLE, maxConnections);
  engines.push(engine);
  return engine;
}

const stateReport = (outcomes: Outcome[], pick: (o: Outcome) => string[]) => attacks.stateReport(outcomes, pick, label);

// ---------------------------------------------------------------------------------------------
// Suite
// ---------------------------------------------------------------------------------------------

let h: Harness;

beforeAll(async () => {
  hostname = fs.readFileSync('/etc/hostname', 'utf8');
  admin = await attacks.connect(attacks.ADMIN_URL, SNAPSHOT_APP);
  await attacks.createReaderRole(admin, READER_ROLE);
  roleCreated = true;
  seeded = await attacks.seededRandoms(ATTACK_SEED, SNAPSHOT_APP);
  h = await createHarness();
}, 60_000);

afterAll(async () => {
  const { attempt, done } = attacks.cleanup();
  await attempt('harness', async () => h?.close());
  for (const e of engines) await attempt('engine', () => e.close());
  for (const c of extraClients) attacks.destroy(c);
  for (const fx of fixtures) {
    await attempt(`${fx.name} client`, () => fx.db.end());
  }
  if (admin) {
    for (const name of fixtureNames) {
      await attempt(`slots of ${name}`, () =>
        admin.query(
          `SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE left(slot_name, length($1::text)) = $1 AND active_pid IS NOT NULL`,
          [name],
        ),
      );
      await attempt(`database ${name}`, () => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      await attempt(`slots of ${name}`, () =>
        admin.query(`SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE left(slot_name, length($1::text)) = $1`, [
          name,
        ]),
      );
    }
    for (const fx of fixtures) for (const v of fx.victims) attacks.destroy(v);
    for (const fx of fixtures) fs.rmSync(fx.programFile, { force: true });
    if (roleCreated) {
      await attempt('role', () => attacks.dropReaderRole(admin, READER_ROLE));
    }
    await attempt('admin', () => admin.end());
  }
  done();
}, 120_000);

describe('the attack list', () => {
  it('has at least 60 statements across every class', () => {
    const counts: Record<string, number> = {};
    for (const a of PG_ATTACKS_V2) counts[a.class] = (counts[a.class] ?? 0) + 1;
    expect(PG_ATTACKS_V2.length).toBeGreaterThanOrEqual(60);
    for (const c of [
      'attribute',
      'sql-text',
      'index-write',
      'session-state',
      'server',
      'user-defined',
      'value-type',
      'foreign-table',
      'classic',
    ]) {
      expect(counts[c] ?? 0, c).toBeGreaterThan(0);
    }
    expect(new Set(PG_ATTACKS_V2.map((a) => a.sql)).size).toBe(PG_ATTACKS_V2.length);
  });
});

describe('positive controls: the attacks are live for a superuser, and the snapshot sees them', () => {
  let fx: Fixture;

  beforeAll(async () => {
    fx = await createFixture('pc');
  }, 60_000);

  it('attribute notation reads a server file', async () => {
    const r = await fx.db.query("SELECT ('/etc/hostname'::text).pg_read_file AS f");
    expect(r.rows[0].f).toBe(hostname);
    const s = await fx.db.query("SELECT (ARRAY['/etc/hostname'])[1].pg_read_file AS f");
    expect(s.rows[0].f).toBe(hostname);
  });

  it('a file_fdw foreign table reads a server file', async () => {
    const r = await fx.db.query('SELECT line FROM ft_file');
    expect(r.rows.map((row) => row.line).join('\n')).toBe(hostname.trimEnd());
  });

  // Each runs in BEGIN READ ONLY … ROLLBACK on a fresh superuser connection: the effect that
  // outlives the rollback is what the snapshot must show.
  const CONTROLS: [sql: string, key: string][] = [
    ["SELECT brin_summarize_new_values('brin_idx')", 'brin_summaries'],
    ["SELECT ('brin_idx'::regclass).brin_summarize_new_values", 'brin_revmap'],
    ["SELECT brin_desummarize_range('brin_idx', 0)", 'brin_summaries'],
    ["SELECT gin_clean_pending_list('gin_idx')", 'gin_pending'],
    ["SELECT heap_force_kill('guard_probe'::regclass, ARRAY['(0,1)']::tid[])", 'rows'],
    ["SELECT heap_force_freeze('guard_probe'::regclass, ARRAY['(0,2)']::tid[])", 'rows'],
    ['SELECT pg_create_physical_replication_slot(current_database())', 'slots'],
    [
      `SELECT (SELECT pid FROM pg_stat_activity WHERE application_name = '${VICTIM_APP}' AND datname = current_database()).pg_terminate_backend`,
      'victim_alive',
    ],
    [
      `SELECT query_to_xml('SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = ''${BUSY_VICTIM_APP}'' AND datname = current_database()', true, true, '')`,
      'busy_victim',
    ],
    ['SELECT pg_stat_reset()', 'db_stats_reset'],
    ["SELECT pg_stat_reset_shared('archiver')", 'archiver_stats_reset'],
    ['SELECT pg_reload_conf()', 'conf_loaded'],
    [
      "SELECT * FROM dblink('dbname=' || current_database() || ' user=postgres host=127.0.0.1', 'DELETE FROM guard_probe WHERE id = 2 RETURNING id') AS t(id int)",
      'rows',
    ],
    ["SELECT dblink_connect('dbq_guard_persist', 'dbname=' || current_database() || ' user=postgres host=127.0.0.1')", 'stray_backends'],
    ['EXPLAIN SELECT liar_immutable()', 'brin_summaries'],
    ['SELECT evil_agg(id) FROM generate_series(1, 3) id', 'rows'],
    ['SELECT * FROM evil_view', 'brin_summaries'],
    ['SELECT 1 ===> 2', 'brin_summaries'],
    ['SELECT 1::guard_dom', 'busy_victim'],
    ['SELECT innocent()', 'brin_summaries'],
    ['SELECT 1 ===> ANY (SELECT 1)', 'brin_summaries'],
    ['SELECT 1 ===> ALL (SELECT 1)', 'brin_summaries'],
    ['SELECT id FROM guard_probe ORDER BY id USING <<<', 'brin_summaries'],
    // The operator's own function is harmless: what ran is its family's comparison function.
    ['SELECT id FROM guard_probe ORDER BY id USING <~<', 'brin_summaries'],
    ['SELECT * FROM evil_view_outer', 'brin_summaries'],
    ['SELECT returns_dom()', 'brin_summaries'],
    ['SELECT plpgsql_dom_var()', 'brin_summaries'],
    ['SELECT m FROM guard_mt ORDER BY m', 'gin_pending'],
    ['SELECT DISTINCT m FROM guard_mt', 'gin_pending'],
    ['SELECT m FROM guard_mt GROUP BY m', 'gin_pending'],
    ['SELECT count(DISTINCT m) FROM guard_mt', 'gin_pending'],
    ['SELECT GREATEST(m, m) FROM guard_mt', 'gin_pending'],
    ['SELECT m FROM guard_mt UNION SELECT m FROM guard_mt', 'gin_pending'],
    [`SELECT GREATEST('("(1)")'::guard_wrap, '("(2)")'::guard_wrap)`, 'gin_pending'],
    ['SELECT r FROM guard_rt r ORDER BY r', 'gin_pending'],
    ['SELECT length(r) FROM guard_rt r', 'brin_summaries'],
    ['SELECT length(c) FROM guard_ctt', 'brin_summaries'],
    ['SELECT upper(c) FROM guard_ctt', 'brin_summaries'],
    [`SELECT * FROM json_populate_record(NULL::guard_dt, '{"d": 5}')`, 'brin_summaries'],
    [`SELECT * FROM jsonb_to_record('{"d": 5}') AS t(d guard_vdom)`, 'brin_summaries'],
    ['SELECT CASE e WHEN e THEN 1 END FROM guard_et', 'brin_summaries'],
    ['SELECT * FROM guard_et a JOIN guard_et b USING (e)', 'brin_summaries'],
    ['SELECT * FROM ft_prog', 'program_ran'],
    ['SELECT * FROM guard_parted', 'program_ran'],
    ['SELECT * FROM guard_side.guard_parent', 'program_ran'],
  ];
  for (const [sql, key] of CONTROLS) {
    it(`${sql} in BEGIN READ ONLY … ROLLBACK changes ${key}`, async () => {
      const before = await snapshot(fx);
      const c = await attacks.connect(fx.url, 'dbq_guard_control');
      extraClients.push(c);
      try {
        await c.query('BEGIN READ ONLY');
        await c.query(sql);
        await c.query('ROLLBACK');
        // Some effects land asynchronously (signals): wait for this one to show.
        await until(`${key} to change`, async () => attacks.changedKeys(before, await snapshot(fx)).includes(key), 5_000);
      } finally {
        await restore(fx);
      }
    });
  }

  it('setseed and advisory locks outlive ROLLBACK; set_config does not', async () => {
    const c = await attacks.connect(fx.url, 'dbq_guard_control');
    extraClients.push(c);
    await c.query('BEGIN READ ONLY');
    await c.query(`SELECT setseed(${ATTACK_SEED}), pg_advisory_lock(4242), set_config('search_path', 'evil', false)`);
    await c.query('ROLLBACK');
    const a = await c.query('SELECT random() AS r');
    const b = await c.query('SELECT random() AS r');
    expect([Number(a.rows[0].r), Number(b.rows[0].r)]).toEqual(seeded);
    const locks = await fx.db.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = $1", [
      (c as any).processID,
    ]);
    expect(locks.rows[0].n).toBe(1);
    expect((await c.query('SHOW search_path')).rows[0].search_path).not.toBe('evil');
    await restore(fx);
  });

  it('volatility labels in pg_proc do not tell the whole story', async () => {
    const r = await fx.db.query(`SELECT proname, provolatile FROM pg_proc
      WHERE proname IN ('evil_agg', 'evil_sfunc', 'liar_stable', 'liar_immutable', 'innocent', 'crosstab', 'connectby', 'xpath_table', 'table_to_xml', 'schema_to_xml', 'txid_current')`);
    const vol = (name: string) => new Set(r.rows.filter((x) => x.proname === name).map((x) => x.provolatile));
    expect(vol('evil_agg')).toEqual(new Set(['i'])); // its state function:
    expect(vol('evil_sfunc')).toEqual(new Set(['v']));
    expect(vol('liar_stable')).toEqual(new Set(['s']));
    expect(vol('liar_immutable')).toEqual(new Set(['i']));
    expect(vol('innocent')).toEqual(new Set(['i']));
    // Functions that run SQL text and yet are STABLE in every overload: volatility alone would let them in.
    for (const f of ['crosstab', 'connectby', 'xpath_table', 'table_to_xml', 'schema_to_xml']) expect(vol(f), f).toEqual(new Set(['s']));
    expect(vol('txid_current')).toEqual(new Set(['s']));
  });

  it('a SECURITY DEFINER function writes index pages for the reader role, in BEGIN READ ONLY', async () => {
    const before = await snapshot(fx);
    const c = await attacks.connect(`postgres://${READER_ROLE}@127.0.0.1:5432/${fx.name}`, 'dbq_guard_control');
    extraClients.push(c);
    try {
      await c.query('BEGIN READ ONLY');
      await expect(c.query("SELECT brin_desummarize_range('brin_idx', 1)")).rejects.toThrow(/owner/);
      await c.query('ROLLBACK');
      await c.query('BEGIN READ ONLY');
      await c.query('SELECT evil_definer()');
      await c.query('ROLLBACK');
      expect(attacks.changedKeys(before, await snapshot(fx))).toContain('brin_summaries');
    } finally {
      await restore(fx);
    }
  });
});

describe('allowlist alone: a superuser connection, every attack through POST /api/query', () => {
  const modes = [
    { label: 'a read-only key', key: () => h.readerKey, readOnly: false },
    { label: 'an admin key on a readOnly connection', key: () => h.adminKey, readOnly: true },
  ];
  for (const mode of modes) {
    describe(`as ${mode.label}`, () => {
      let fx: Fixture;
      let result: Awaited<ReturnType<typeof replay>>;
      const connectionId = `v2-${mode.readOnly ? 'ro' : 'su'}`;

      beforeAll(async () => {
        fx = await createFixture(mode.readOnly ? 'ro' : 'su');
        const created = await h.call('POST', '/api/connections', h.adminKey, {
          name: connectionId,
          url: fx.url,
          maxConnections: 1,
          ...(mode.readOnly ? { readOnly: true } : {}),
        });
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        result = await replay(fx, apiRunner(h, mode.key, connectionId), PG_ATTACKS_V2);
      }, LONG);

      it('every attack is refused: 403, or 400 for several statements', () => {
        const wrong = result.outcomes
          .filter((o) => !(o.status === 403 || (o.status === 400 && o.attack.sql.includes(';'))))
          .map((o) => `${o.status} ${label(o.attack)}`);
        expect(wrong).toEqual([]);
      });

      it('every 403 names the function it refused', () => {
        const unnamed = result.outcomes
          .filter((o) => o.status === 403 && o.attack.fn !== undefined)
          .filter((o) => !JSON.stringify(o.body).toLowerCase().includes(o.attack.fn!.toLowerCase()))
          .map((o) => `${o.attack.fn}: ${JSON.stringify(o.body)} ← ${o.attack.sql}`);
        expect(unnamed).toEqual([]);
      });

      it('no attack changes database or server state, and the whole list leaves it as it was', () => {
        expect(stateReport(result.outcomes, (o) => o.state)).toEqual([]);
        expect(result.last).toEqual(result.first);
      });

      it('no attack leaves session state for the next request on the backend', () => {
        expect(stateReport(result.outcomes, (o) => o.session)).toEqual([]);
      });

      it('no response carries a server file', () => {
        const leaks = result.outcomes
          .filter((o) => o.status === 200 && JSON.stringify(o.body).includes(JSON.stringify(hostname).slice(1, -1)))
          .map((o) => label(o.attack));
        expect(leaks).toEqual([]);
      });
    });
  }

  describe('reads that must stay allowed for a read-only key', () => {
    const READS = [
      'SELECT (c.addr).city FROM guard_people c ORDER BY c.id',
      "SELECT (c.addr).city, (c.addr).zip FROM guard_people c WHERE (c.addr).city = 'Paris'",
      "SELECT (ROW('Lyon', '69001')::guard_addr).city",
      "SELECT (ROW(1, 'a')::guard_probe).v",
      "SELECT (p).id, (p).v FROM (SELECT ROW(2, 'b')::guard_probe AS p) s",
      'SELECT (ARRAY[1, 2, 3])[2]',
      'SELECT lower(v) FROM guard_probe ORDER BY id',
      "SELECT now(), date_trunc('day', now()), date_trunc('hour', TIMESTAMP '2024-01-02 03:04:05')",
      "SELECT to_tsvector('simple', 'hello world'), to_tsvector('english', v) FROM guard_probe",
      "SELECT jsonb_build_object('id', id, 'v', v) FROM guard_probe ORDER BY id",
      'SELECT random()',
      'SELECT random() AS a, random() AS b',
      'SELECT gen_random_uuid()',
      'SELECT clock_timestamp(), timeofday()',
      "SELECT relname FROM pg_class WHERE relkind = 'r' ORDER BY relname LIMIT 5",
      'SELECT pid, state, application_name FROM pg_stat_activity',
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
      'SELECT t.id, t.v FROM guard_probe t ORDER BY t.id',
      'SELECT g.* FROM guard_probe g WHERE g.id > 1',
      'SELECT count(*), max(id) FROM guard_probe',
      'WITH x AS (SELECT id FROM guard_probe) SELECT sum(id) FROM x',
      'SELECT id, row_number() OVER (ORDER BY id) FROM guard_probe',
      'EXPLAIN SELECT * FROM guard_probe WHERE id = 1',
      // Left at the default volatility (VOLATILE), but its body only computes: user code is
      // judged by what it does, in both directions.
      'SELECT guard_double(21)',
      // A volatile = on a user type elsewhere in the database does not touch = on integers.
      'SELECT id FROM guard_probe WHERE id = 3',
    ];
    let fx: Fixture;

    beforeAll(async () => {
      // Without WIDE_SQL: its volatile = and casts to text would make the guard refuse every =
      // and every cast to text here.
      fx = await createFixture('rd', { wide: false });
      const created = await h.call('POST', '/api/connections', h.adminKey, { name: 'v2-reads', url: fx.url, maxConnections: 1 });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
    }, 60_000);

    it(`${READS.length} reads answer 200 and change nothing`, async () => {
      const before = await snapshot(fx);
      expect(await attacks.refusedReads(h, 'v2-reads', READS)).toEqual([]);
      expect(await snapshot(fx)).toEqual(before);
    }, 60_000);
  });

  // The catalog is cached per connection. The guard promises it is at most CHECK_MS (1 s)
  // stale: any decision made more than 1 s after the last change check awaits a fresh one.
  // Within that second a read decided on the cached catalog may run a function made volatile
  // a moment ago outside dbq (checked by hand: `SELECT later()` right after the CREATE OR
  // REPLACE below answered 200 and ran it, as superuser). That is allowed by the promise: the
  // reader role (docs/security.md) is the layer that holds within that second, so only the
  // > 1 s case is asserted here.
  describe('a catalog changed outside dbq is seen after 1 s', () => {
    const STALE_SQL = `
CREATE FUNCTION later() RETURNS int LANGUAGE sql STABLE AS 'SELECT 1';
CREATE TABLE guard_late (id int);
INSERT INTO guard_late VALUES (1), (2), (3);
-- A type that compares with record_ops (harmless) until an operator class is made for it.
CREATE TYPE guard_q AS (n int);
CREATE FUNCTION guard_q_lt(guard_q, guard_q) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT int4lt($1.n, $2.n)';
CREATE FUNCTION guard_q_eq(guard_q, guard_q) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT int4eq($1.n, $2.n)';
CREATE FUNCTION guard_q_cmp(guard_q, guard_q) RETURNS int LANGUAGE plpgsql VOLATILE
  AS $$BEGIN PERFORM brin_summarize_range('brin_idx', 7); RETURN btint4cmp($1.n, $2.n); END$$;
CREATE OPERATOR <%@ (LEFTARG = guard_q, RIGHTARG = guard_q, FUNCTION = guard_q_lt);
CREATE OPERATOR =%@ (LEFTARG = guard_q, RIGHTARG = guard_q, FUNCTION = guard_q_eq);
CREATE TABLE guard_qt (q guard_q);
INSERT INTO guard_qt VALUES (ROW(2)), (ROW(1)), (ROW(3));
`;
    let fx: Fixture;
    const read = (sql: string) => h.call('POST', '/api/query', h.readerKey, { connectionId: 'v2-stale', sql, params: [] });

    beforeAll(async () => {
      fx = await createFixture('st', { sql: STALE_SQL });
      const created = await h.call('POST', '/api/connections', h.adminKey, { name: 'v2-stale', url: fx.url, maxConnections: 1 });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
    }, 60_000);

    /** Reads `first` (200: the catalog is cached, and checked — the wait before makes that
     * decision run the change check, so an earlier case's restore is behind us), runs `ddl` as
     * the superuser outside dbq, waits past CHECK_MS, then reads `then` as the read-only key:
     * it must be refused and leave the state as it was. */
    async function staleCase(first: string, ddl: string, then: string): Promise<{ status: number; body: unknown }> {
      // Real time on purpose here and below: the catalog change check's period is the behaviour.
      await sleep(1_100);
      const warm = await read(first);
      expect(warm.status, JSON.stringify(warm.body)).toBe(200);
      const before = await snapshot(fx);
      await fx.db.query(ddl);
      await sleep(1_100);
      const res = await read(then);
      const changed = attacks.changedKeys(before, await snapshot(fx));
      if (changed.length > 0) await restore(fx);
      expect({ status: res.status, changed }, `${then} → ${JSON.stringify(res.body)}`).toEqual({ status: 403, changed: [] });
      return res;
    }

    it('a function replaced by a volatile one is refused', async () => {
      const res = await staleCase(
        'SELECT later()',
        `CREATE OR REPLACE FUNCTION later() RETURNS int LANGUAGE plpgsql VOLATILE
           AS $$BEGIN PERFORM brin_summarize_range('brin_idx', 7); RETURN 1; END$$`,
        'SELECT later()',
      );
      expect(JSON.stringify(res.body)).toContain('later');
    });

    it('a column of an unsafe type added to a table is seen', async () => {
      await staleCase(
        'SELECT DISTINCT id FROM guard_late',
        'ALTER TABLE guard_late ADD COLUMN m guard_m; UPDATE guard_late SET m = ROW(id)::guard_m',
        'SELECT DISTINCT m FROM guard_late',
      );
    });

    it('a volatile default operator class made for a type already in a table is seen', async () => {
      await staleCase(
        'SELECT q FROM guard_qt ORDER BY q',
        `CREATE OPERATOR CLASS guard_q_ops DEFAULT FOR TYPE guard_q USING btree AS
           OPERATOR 1 <%@, OPERATOR 3 =%@, FUNCTION 1 guard_q_cmp(guard_q, guard_q)`,
        'SELECT q FROM guard_qt ORDER BY q',
      );
    });
  });
});

describe('database alone: the guard bypassed, every attack through the engine as a reader role', () => {
  let fx: Fixture;
  let engine: Engine;
  let result: Awaited<ReturnType<typeof replay>>;

  beforeAll(async () => {
    fx = await createFixture('db');
    engine = readerEngine(fx);
    result = await replay(fx, engineRunner(engine), PG_ATTACKS_V2);
  }, LONG);

  it('no attack changes database or server state (SECURITY DEFINER functions and program foreign tables apart)', () => {
    const changed = stateReport(
      result.outcomes.filter((o) => !isDefinerAttack(o.attack) && !isProgramAttack(o.attack)),
      (o) => o.state,
    );
    expect(changed).toEqual([]);
  });

  it('a SECURITY DEFINER function of the superuser is the one thing a reader role cannot hold back: the audit names it', async () => {
    // Inside it the reader acts as the function's owner, so the database layer alone lets it
    // write (the replay shows it did); the guard refuses it (the allowlist block above), and the
    // privilege audit of the reader credential reports it with the function's name.
    const changed = stateReport(
      result.outcomes.filter((o) => isDefinerAttack(o.attack)),
      (o) => o.state,
    );
    expect(changed.length).toBeGreaterThan(0);
    const access = await engine.readAccess!();
    expect(access.level).toBe('can_write');
    expect(access.findings.join('\n')).toMatch(/SECURITY DEFINER function.*evil_definer/);
  });

  it('a file_fdw program runs for any reader with SELECT on its table: only the guard holds it back', () => {
    // file_fdw checks the right to run a program (pg_execute_server_program) when `program` is
    // set, not when the table is read; pg_read_all_data grants SELECT on foreign tables, and
    // reading a partitioned table or an inheritance parent scans its foreign children. The
    // allowlist block above refuses these statements; the reader role cannot.
    const ran = result.outcomes.filter((o) => isProgramAttack(o.attack) && o.state.includes('program_ran'));
    expect(ran.map((o) => o.attack.sql).sort()).toEqual(
      PG_ATTACKS_V2.filter(isProgramAttack)
        .map((a) => a.sql)
        .sort(),
    );
  });

  it('no attack leaves session state for the next request on the pooled backend', () => {
    expect(stateReport(result.outcomes, (o) => o.session)).toEqual([]);
  });

  it('server files stay unreadable: every file-reading attack fails', () => {
    const fileReads = result.outcomes.filter((o) =>
      /pg_read_file|pg_read_binary_file|pg_stat_file|pg_ls_dir|lo_import|PG_READ_FILE/i.test(o.attack.sql),
    );
    expect(fileReads.length).toBeGreaterThan(10);
    expect(fileReads.filter((o) => o.status === 'ok').map((o) => `${label(o.attack)} → ${JSON.stringify(o.body)}`)).toEqual([]);
  });

  describe('session state does not reach the next request (one pooled backend)', () => {
    let single: Engine;
    const run = (sql: string) => single.execute({ sql, params: [], readOnly: true, timeoutMs: 5000, maxRows: 100, maxBytes: 1e6 });
    const pid = async () => Number((await run('SELECT pg_backend_pid()')).rows[0][0]);

    beforeAll(async () => {
      await restore(fx);
      single = readerEngine(fx, 1);
    }, 60_000);

    it(`setseed(${ATTACK_SEED}): the next request's random() is not the seeded sequence`, async () => {
      const pids = [await pid()];
      await run(`SELECT setseed(${ATTACK_SEED})`).catch(() => {});
      const a = Number((await run('SELECT random()')).rows[0][0]);
      const b = Number((await run('SELECT random()')).rows[0][0]);
      pids.push(await pid());
      expect([a, b], `backends ${pids.join(' → ')}`).not.toEqual(seeded);
    });

    it("set_config('search_path', 'evil', false) does not reach the next request", async () => {
      const sp = String((await run("SELECT current_setting('search_path')")).rows[0][0]);
      await run("SELECT set_config('search_path', 'evil', false)").catch(() => {});
      expect(String((await run("SELECT current_setting('search_path')")).rows[0][0])).toBe(sp);
    });

    it('pg_advisory_lock does not outlive the request', async () => {
      const backend = await pid();
      await run('SELECT pg_advisory_lock(4242)').catch(() => {});
      const held = await fx.db.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = $1", [backend]);
      expect(held.rows[0].n).toBe(0);
      // Another session can take the lock at once.
      const got = await fx.db.query('SELECT pg_try_advisory_lock(4242) AS ok');
      await fx.db.query('SELECT pg_advisory_unlock_all()');
      expect(got.rows[0].ok).toBe(true);
    });
  });
});
