// What the catalog change check (src/engines/postgres/postgres-catalog-freshness.ts) does not see, held
// to what its header claims, on the real server:
// - only the catalogs it watches: every catalog the load reads must be one of them;
// - not in-place updates (heap_inplace_update keeps xmin): in the watched catalogs PostgreSQL
//   makes them only to statistics and to flags cleared once their object is gone, and the load
//   reads none of those columns;
// - frozen rows keep their raw xmin (so after wraparound one can alias a recent id: the check
//   then compares its content).
import fs from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WATCHED_CATALOGS } from '../src/engines/postgres/postgres-catalog-freshness.ts';
import { freshPostgresDatabase } from './support/databases.ts';
import { until } from './support/wait.ts';

/** The columns PostgreSQL 15 updates in place in the watched catalogs. */
const IN_PLACE = ['relpages', 'reltuples', 'relallvisible', 'relfrozenxid', 'relminmxid', 'relhasindex', 'relhasrules', 'relhastriggers'];

/** The load's SQL: the files beside the cache that read the catalog. */
const LOAD_SOURCES = ['src/engines/postgres/postgres-catalog.ts', 'src/engines/postgres/postgres-catalog-rows.ts'].filter((f) =>
  fs.existsSync(f),
);

let db: { url: string; drop(): Promise<void> };
let admin: pg.Client;

beforeAll(async () => {
  db = await freshPostgresDatabase();
  admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
});

afterAll(async () => {
  await admin?.end();
  await db?.drop();
});

/** Every row of the watched catalogs by (catalog, ctid, xmin): the same key after a command is
 * the same tuple version, so a different content means an in-place update. */
async function tuples(c: pg.Client): Promise<Map<string, Record<string, unknown>>> {
  const out = new Map<string, Record<string, unknown>>();
  for (const catalog of WATCHED_CATALOGS) {
    const r = await c.query(`SELECT ctid::text AS ctid, xmin::text AS xmin, to_jsonb(t) AS row FROM pg_catalog.${catalog} t`);
    for (const row of r.rows) out.set(`${catalog} ${row.ctid} ${row.xmin}`, row.row);
  }
  return out;
}

describe('catalog change check: its blind spots are the documented ones', () => {
  it('watches every catalog the load reads', async () => {
    const catalogs = new Set(
      (await admin.query("SELECT relname FROM pg_class WHERE relnamespace = 'pg_catalog'::regnamespace AND relkind = 'r'")).rows.map((r) =>
        String(r.relname),
      ),
    );
    expect(LOAD_SOURCES.length).toBeGreaterThan(0);
    const read = new Set<string>();
    for (const file of LOAD_SOURCES) {
      for (const name of fs.readFileSync(file, 'utf8').match(/\bpg_[a-z_]+\b/g) ?? []) if (catalogs.has(name)) read.add(name);
    }
    expect(read.size).toBeGreaterThan(10);
    expect([...read].filter((name) => !(WATCHED_CATALOGS as readonly string[]).includes(name))).toEqual([]);
  });

  it('in-place updates touch statistics and stale flags only, and the load reads none of them', async () => {
    await admin.query(`
      CREATE TABLE p (id int PRIMARY KEY, v text);
      CREATE TABLE kid () INHERITS (p);
      CREATE TABLE r (a int);
      CREATE RULE r_ins AS ON INSERT TO r DO INSTEAD NOTHING;
      CREATE FUNCTION trg() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;
      CREATE TRIGGER t1 BEFORE INSERT ON r FOR EACH ROW EXECUTE FUNCTION trg();
      CREATE TABLE q (a int, b int);
      CREATE STATISTICS qs ON a, b FROM q;
      CREATE INDEX q_a ON q (a);
      INSERT INTO q SELECT g, g FROM generate_series(1, 1000) g;
      INSERT INTO p SELECT g, 'x' FROM generate_series(1, 1000) g;
      CREATE TABLE s (a int);
      CREATE INDEX s_a ON s (a);
      CREATE TABLE w (a int);
      INSERT INTO w SELECT generate_series(1, 100);
      CREATE VIEW v AS SELECT * FROM q;`);
    // CREATE INDEX CONCURRENTLY waits for this older transaction after writing its pg_index row
    // (not yet valid): the "before" picture holds that row, so its later flag changes count.
    const blocker = new pg.Client({ connectionString: db.url });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('SELECT pg_current_xact_id()');
    const cic = admin.query('CREATE INDEX CONCURRENTLY w_a ON w (a)');
    const other = new pg.Client({ connectionString: db.url });
    await other.connect();
    await until(
      'the index row of CREATE INDEX CONCURRENTLY',
      async () => Boolean((await other.query("SELECT 1 FROM pg_class WHERE relname = 'w_a'")).rowCount),
      5_000,
      50,
    );
    // `admin` is busy with the CREATE INDEX.
    const before = await tuples(other);
    await blocker.query('COMMIT');
    await blocker.end();
    await cic;
    await other.end();
    for (const sql of [
      'ANALYZE',
      'VACUUM',
      'DROP RULE r_ins ON r',
      'DROP TRIGGER t1 ON r',
      'DROP INDEX q_a',
      'DROP INDEX s_a',
      'VACUUM r',
      'VACUUM q',
      'VACUUM s',
      'DROP TABLE kid',
      'ANALYZE p',
      'VACUUM p',
      'CREATE INDEX q_c ON q (a)',
      'REINDEX INDEX CONCURRENTLY q_c',
      'VACUUM FREEZE',
      'ANALYZE',
    ]) {
      await admin.query(sql);
    }
    const after = await tuples(admin);
    const changed = new Set<string>();
    for (const [key, row] of before) {
      const now = after.get(key);
      if (!now) continue;
      for (const column of Object.keys(row)) if (JSON.stringify(row[column]) !== JSON.stringify(now[column])) changed.add(column);
    }
    // The battery did make in-place updates (else it would prove nothing).
    expect([...changed]).toEqual(expect.arrayContaining(['reltuples', 'relhasindex', 'relhasrules', 'relhastriggers']));
    expect([...changed].filter((c) => !IN_PLACE.includes(c))).toEqual([]);
    for (const file of LOAD_SOURCES) {
      const text = fs.readFileSync(file, 'utf8');
      expect(
        IN_PLACE.filter((c) => new RegExp(`\\b${c}\\b`).test(text)),
        file,
      ).toEqual([]);
    }
  }, 120_000);

  it("VACUUM FREEZE leaves a row's xmin as it was (so an old frozen row can alias a new id)", async () => {
    await admin.query('CREATE TABLE frozen_probe (a int); INSERT INTO frozen_probe VALUES (1)');
    const xmin = async () => String((await admin.query('SELECT xmin::text AS x FROM frozen_probe')).rows[0].x);
    const raw = await xmin();
    await admin.query('VACUUM FREEZE frozen_probe');
    expect(await xmin()).toBe(raw);
    expect(raw).not.toBe('2');
  });
});
