// The change stamp of a PostgreSQL connection's catalog: what the guard's cache
// (src/guard/postgres-catalog-cache.ts) compares so that no decision uses a catalog that misses a
// change committed more than its check interval before the decision asked, whatever the order
// in which transactions took their ids and committed. This file reads and compares stamps; the
// guard decides when.
//
// Why not "row counts and the newest xmin": a transaction that took its id before the catalog
// was read and commits after it (CREATE OR REPLACE … VOLATILE, late) changes neither; nor does
// one whose id is older than a later commit's. After xid wraparound the newest xmin can stay put.
//
// What a reference is (readFingerprint, taken first in the load's transaction, so every later
// read of the load sees at least what it saw), from one statement's snapshot S:
//   - the row count of every watched catalog;
//   - the window: each visible row whose inserting transaction id X lies in [S.xmin, S.xmax],
//     as (catalog, X, md5 of the whole row), in one digest;
//   - N (the next transaction id, 64-bit), S.xmin, S.xmax, and which server and database.
// A check (a new snapshot C, one statement) finds the catalogs unchanged only if the server is
// the same, the counts are equal, no visible row has X > S.xmax, and the rows with X in
// [S.xmin, S.xmax] digest to the same window. Why that sees every committed change:
//   - A row visible at C but not at S was inserted by a transaction not committed in S, so X is
//     at least S.xmin (all older ones had ended) and below C.xmax. Above S.xmax it is caught as
//     newer; inside the window it is a row the window did not hold. This holds for a late
//     commit, for a subtransaction's id (pg_current_snapshot() lists no subtransactions, so
//     pg_visible_in_snapshot() wrongly calls one visible) and for any commit order.
//   - Every other row visible at C has X < S.xmin, so it was visible at S too. Equal counts and
//     an equal window then leave no room for a row of S to have gone (a deletion, or the old
//     version an UPDATE replaced): the rows are the same, row for row.
// xmin is 32 bits: X is rebuilt as N - age(xmin), exact for every id within 2^31 of N. A
// reference older than XID_HORIZON ids is not trusted at all (reload). Frozen rows keep their
// raw xmin (PostgreSQL 9.4+; VACUUM FREEZE leaves `xmin` as it was), so after wraparound an old
// frozen row can alias an id in the window; then its whole content is in the digest, and a row
// with the same id and the same content is the same catalog row. Bootstrap rows (xmin 1) have
// age() = INT_MAX: never recent.
//
// Not seen: in-place updates (heap_inplace_update keeps xmin). In PostgreSQL 15 they touch, in
// the watched catalogs, only pg_class's relpages, reltuples, relallvisible, relfrozenxid,
// relminmxid, and the clearing of relhasindex, relhasrules, relhastriggers once the index, rule
// or trigger is already gone (VACUUM, ANALYZE, CREATE INDEX); none of them changes what a read
// runs, and the load reads none (test/catalog-check-blind-spots.test.ts finds them on the real
// server). The load is never older than its reference either: see readFingerprint.
//
// Cost: one scan of each watched catalog reading xmin only; rows are hashed only when recent
// (bench:catalog prints it).
import { createHash } from 'node:crypto';

export type CatalogStateQuery = (text: string, values?: unknown[]) => Promise<{ rows: Record<string, unknown>[] }>;

/** Every catalog the load reads (postgres-catalog-rows.ts), plus pg_am (a table's access method
 * runs when it is read). test/catalog-check-blind-spots.test.ts fails if the load reads a
 * catalog missing here. */
export const WATCHED_CATALOGS = [
  'pg_proc',
  'pg_aggregate',
  'pg_language',
  'pg_operator',
  'pg_type',
  'pg_range',
  'pg_cast',
  'pg_opclass',
  'pg_opfamily',
  'pg_amop',
  'pg_amproc',
  'pg_am',
  'pg_namespace',
  'pg_extension',
  'pg_depend',
  'pg_class',
  'pg_attribute',
  'pg_attrdef',
  'pg_constraint',
  'pg_index',
  'pg_inherits',
  'pg_partitioned_table',
  'pg_rewrite',
  'pg_policy',
  'pg_statistic_ext',
  'pg_foreign_table',
  'pg_foreign_server',
  'pg_foreign_data_wrapper',
] as const;

/** A reference this many transaction ids behind the server is not compared, only reloaded:
 * well inside the 2^31 within which a 32-bit xmin maps back to one 64-bit id. */
const XID_HORIZON = 1n << 30n;
const XID_SPACE = 1n << 32n;

/** What the catalogs were at one snapshot; see the header. */
export interface CatalogReference {
  /** Postmaster start time and database oid: a restart, failover or restored copy is another
   * server, whose transaction ids say nothing about this one's. */
  server: string;
  /** The next transaction id (64-bit) when it was taken. */
  next: bigint;
  xmin: bigint;
  xmax: bigint;
  /** `catalog:rows,…` */
  counts: string;
  /** sha256 of the sorted `catalog:X:md5(row)` of the rows with X in [xmin, xmax]. */
  window: string;
}

/** Per watched catalog its row count and the ctids of the visible rows whose transaction id is
 * at least `since` or the snapshot's xmin (whichever is older): d = N - id is `age(xmin)` (N is
 * fixed for the transaction), and `& 4294967295` makes it unsigned, so ids "ahead" of N (frozen
 * rows aliasing across wraparound) count as far behind. The scan reads xmin and ctid only. */
function stateSql(since: string): string {
  const catalogs = WATCHED_CATALOGS.map(
    (catalog) => `
  SELECT '${catalog}' AS catalog, pg_catalog.count(*) AS rows,
         pg_catalog.array_agg(c.ctid::pg_catalog.text)
           FILTER (WHERE (pg_catalog.age(c.xmin)::pg_catalog.int8 & 4294967295) <= (SELECT reach FROM h)) AS recent
  FROM pg_catalog.${catalog} c`,
  );
  return /* SQL */ `
WITH k AS (SELECT pg_catalog.pg_current_snapshot() AS snap, pg_catalog.age('3'::pg_catalog.xid) AS age3),
h AS (SELECT snap, age3,
        (age3::pg_catalog.int8 + 3 - LEAST(${since}, pg_catalog.pg_snapshot_xmin(snap)::pg_catalog.text::pg_catalog.int8)) & 4294967295 AS reach
      FROM k)
SELECT h.snap::pg_catalog.text AS snapshot, h.age3, pg_catalog.current_setting('transaction_isolation') AS isolation,
       pg_catalog.date_part('epoch', pg_catalog.pg_postmaster_start_time())::pg_catalog.text || '/' ||
         (SELECT d.oid::pg_catalog.int8 FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database()) AS server,
       x.catalog, x.rows, x.recent
FROM h CROSS JOIN (${catalogs.join('\n  UNION ALL')}) x`;
}

/** For a load: rows at or after the snapshot's own xmin. */
const REFERENCE = stateSql('NULL::pg_catalog.int8');
/** For a check: rows at or after the reference's xmin too ($1). */
const CHECK = stateSql('$1::pg_catalog.int8');

/** The recent rows whole (d and md5 of the row), by ctid: a second statement, so the state must
 * be read in a REPEATABLE READ transaction (one snapshot for both). Most checks find no recent
 * row and skip it; kept out of the state query, it costs that query nothing to plan. */
function recentRowsSql(catalogs: readonly string[]): string {
  return catalogs
    .map(
      (catalog, i) => /* SQL */ `
SELECT '${catalog}' AS catalog, pg_catalog.age(t.xmin)::pg_catalog.int8 & 4294967295 AS d, pg_catalog.md5(t::pg_catalog.text) AS digest
FROM pg_catalog.${catalog} t WHERE t.ctid = ANY ($${i + 1}::pg_catalog.tid[])`,
    )
    .join('\nUNION ALL');
}

/** What one state query saw, 64-bit ids rebuilt. */
export interface CatalogState {
  server: string;
  next: bigint;
  xmin: bigint;
  xmax: bigint;
  counts: string;
  /** `catalog:X:md5(row)` of every recent row. */
  recent: { catalog: string; xid: bigint; entry: string }[];
}

function mod(a: bigint, m: bigint): bigint {
  return ((a % m) + m) % m;
}

/** The ctids of a `recent` column: a text[] (node-postgres' default parsers) or its literal
 * `{"(0,1)","(4,2)"}` (dbq's text-only parsers). */
export function ctidsOf(value: unknown): string[] {
  if (value === null || value === undefined) return [];
  return (Array.isArray(value) ? value.join(' ') : String(value)).match(/\(\d+,\d+\)/g) ?? [];
}

/** Rebuilds 64-bit ids from the state query's rows and the recent rows' (exported for the xid
 * arithmetic's tests). */
export function parseState(rows: Record<string, unknown>[], recentRows: Record<string, unknown>[]): CatalogState {
  const first = rows[0];
  if (!first) throw new Error('catalog state query returned no rows');
  const [xmin, xmax] = String(first.snapshot)
    .split(':', 2)
    .map((part) => BigInt(part));
  // age('3') = N - 3 as a signed 32-bit number; N is at or after xmax and within 2^32 of it.
  const next32 = mod(BigInt(String(first.age3)) + 3n, XID_SPACE);
  const next = xmax + mod(next32 - xmax, XID_SPACE);
  const recent = recentRows.map((row) => {
    const catalog = String(row.catalog);
    const xid = next - BigInt(String(row.d));
    return { catalog, xid, entry: `${catalog}:${xid}:${String(row.digest)}` };
  });
  return {
    server: String(first.server),
    next,
    xmin,
    xmax,
    counts: rows.map((row) => `${String(row.catalog)}:${String(row.rows)}`).join(','),
    recent,
  };
}

/** The state query, then the recent rows if there are any. */
async function readState(query: CatalogStateQuery, since: bigint | null): Promise<{ state: CatalogState; snapshot: string }> {
  const { rows } = since === null ? await query(REFERENCE) : await query(CHECK, [since.toString()]);
  const withRecent = rows.map((row) => ({ catalog: String(row.catalog), ctids: ctidsOf(row.recent) })).filter((c) => c.ctids.length > 0);
  let recentRows: Record<string, unknown>[] = [];
  if (withRecent.length > 0) {
    const isolation = String(rows[0]?.isolation);
    if (isolation !== 'repeatable read' && isolation !== 'serializable') {
      throw new Error(`the catalog state must be read in a REPEATABLE READ transaction, not ${isolation}`);
    }
    recentRows = (
      await query(
        recentRowsSql(withRecent.map((c) => c.catalog)),
        withRecent.map((c) => c.ctids),
      )
    ).rows;
  }
  return { state: parseState(rows, recentRows), snapshot: String(rows[0]?.snapshot) };
}

function windowDigest(state: CatalogState, from: bigint, to: bigint): string {
  const entries = state.recent
    .filter((r) => r.xid >= from && r.xid <= to)
    .map((r) => r.entry)
    .sort();
  return createHash('sha256').update(entries.join('\n')).digest('hex');
}

/** The reference a state stands for on its own (after a load, or a check that found no change). */
export function referenceOf(state: CatalogState): CatalogReference {
  return {
    server: state.server,
    next: state.next,
    xmin: state.xmin,
    xmax: state.xmax,
    counts: state.counts,
    window: windowDigest(state, state.xmin, state.xmax),
  };
}

/** Null when anything may have changed since `ref`; else the newer reference to keep. */
export function compareState(ref: CatalogReference, state: CatalogState): CatalogReference | null {
  if (state.server !== ref.server) return null;
  // Ids only move forward on one server; backwards means another history (a promoted replica).
  if (state.next < ref.next || state.xmax < ref.xmax) return null;
  if (state.next - ref.xmin >= XID_HORIZON) return null;
  if (state.counts !== ref.counts) return null;
  if (state.recent.some((r) => r.xid > ref.xmax)) return null;
  if (windowDigest(state, ref.xmin, ref.xmax) !== ref.window) return null;
  return referenceOf(state);
}

/** Backends holding the lock of a transaction id that the snapshot ($1) calls committed, and
 * none it calls running: transactions past their commit that have not yet sent their catalog
 * cache invalidations (PostgreSQL sends them after the commit becomes visible, before it lets
 * go of its locks). $2 is N, so 32-bit ids map to 64-bit as in the state query. A backend that
 * also holds a running id is a running transaction with subtransactions, not one committing. */
const COMMITTING = /* SQL */ `
SELECT pg_catalog.count(*) AS committing FROM (
  SELECT l.pid FROM pg_catalog.pg_locks l
  WHERE l.locktype = 'transactionid' AND l.granted AND l.pid IS NOT NULL AND l.pid <> pg_catalog.pg_backend_pid()
  GROUP BY l.pid
  HAVING pg_catalog.bool_and(pg_catalog.pg_visible_in_snapshot(
    ($2::pg_catalog.int8 - (pg_catalog.age(l.transactionid)::pg_catalog.int8 & 4294967295))::pg_catalog.text::pg_catalog.xid8,
    $1::pg_catalog.pg_snapshot))) c`;

/** Locks a relation this transaction has not locked yet: PostgreSQL reads the invalidations
 * queued since it last looked when it takes a new lock (the reference locked the watched
 * catalogs, not this one). */
const TAKE_INVALIDATIONS = /* SQL */ `SELECT 1 FROM pg_catalog.pg_description WHERE false`;

const COMMITTING_POLL_MS = 5;

/** The load's reference, read first in its transaction (before any other catalog read): every
 * later read of the load sees at least this snapshot, so whatever it misses is newer than the
 * reference and the next check sees it. The transaction must be REPEATABLE READ with an empty
 * search_path (withCatalogSession in postgres.ts).
 *
 * Deparsing functions (pg_get_functiondef, pg_get_viewdef, pg_get_expr) read the backend's
 * catalog caches, not the snapshot. A transaction is visible a moment before it sends the
 * invalidations of those caches, so a pooled backend could still hold the version it replaced
 * while the reference already counts it as loaded. So, before returning, this waits until no
 * transaction the reference sees committed still holds its id's lock (it is released after the
 * invalidations are sent), then has the backend read them. Not covered: COMMIT PREPARED (its
 * locks belong to no backend) and a hot standby's replay (no such locks to see). */
export async function readFingerprint(query: CatalogStateQuery): Promise<CatalogReference> {
  const { state, snapshot } = await readState(query, null);
  while (Number((await query(COMMITTING, [snapshot, state.next.toString()])).rows[0]?.committing) > 0) {
    await new Promise((resolve) => setTimeout(resolve, COMMITTING_POLL_MS));
  }
  await query(TAKE_INVALIDATIONS);
  return referenceOf(state);
}

/** Null when the catalogs may have changed since `ref`, else the newer reference. */
export async function checkFingerprint(query: CatalogStateQuery, ref: CatalogReference): Promise<CatalogReference | null> {
  return compareState(ref, (await readState(query, ref.xmin)).state);
}
