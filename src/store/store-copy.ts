// `dbq store copy`: the SQLite store into an empty PostgreSQL store, for a team that outgrows
// one process. Table-driven: the tables and columns are read from the SQLite store itself, so a
// table a later migration adds is copied without this file knowing it; a table or column the
// PostgreSQL schema (made by the same migrations) lacks is refused by name rather than dropped.
// Not copied: the migrator's own bookkeeping (the target runs the same migrations) and the
// SQLite-only history search index (PostgreSQL searches with its trigram index instead).
// Everything lands in one PostgreSQL transaction, committed only when every table's count
// equals the source's: a failure leaves the target as empty as it was.
import fs from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { InvalidRequestError } from '../errors.ts';
import { STORE_FILE } from './backup.ts';
import { MIGRATION_LOCK_TABLE, MIGRATION_TABLE } from './migrations.ts';
import { openStore } from './store.ts';

/** Rows per INSERT: PostgreSQL takes at most 65,535 parameters a statement. */
const MAX_PARAMS = 60_000;
const MAX_BATCH_ROWS = 1_000;

/** Tables of the SQLite store that are not data to move, and why. */
function sqliteOnly(table: string): string | null {
  if (table === MIGRATION_TABLE || table === MIGRATION_LOCK_TABLE)
    return 'migration bookkeeping: the PostgreSQL store runs the same migrations';
  if (table === 'query_history_search_state' || table.startsWith('query_history_search_')) {
    return 'the SQLite history search index: the PostgreSQL store searches with its own trigram index';
  }
  return null;
}

/** Tables only the PostgreSQL store has (its change counter); they are not in the source. */
const POSTGRES_ONLY = new Set(['dbq_store_changes', MIGRATION_TABLE, MIGRATION_LOCK_TABLE]);

export interface TableCount {
  table: string;
  source: number;
  target: number;
}

export interface StoreCopyResult {
  tables: TableCount[];
  skipped: Array<{ table: string; reason: string }>;
  migration: string | null;
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Tables in an order where every table comes after those its foreign keys point to. */
function dependencyOrder(src: SqliteDatabase.Database, tables: string[]): string[] {
  const wanted = new Set(tables);
  const deps = new Map(
    tables.map((t) => [
      t,
      new Set(
        (src.prepare(`select "table" as parent from pragma_foreign_key_list(?)`).all(t) as { parent: string }[])
          .map((r) => r.parent)
          .filter((p) => p !== t && wanted.has(p)),
      ),
    ]),
  );
  const ordered: string[] = [];
  const placed = new Set<string>();
  while (ordered.length < tables.length) {
    const next = tables.filter((t) => !placed.has(t) && [...deps.get(t)!].every((p) => placed.has(p)));
    if (next.length === 0) {
      const stuck = tables.filter((t) => !placed.has(t));
      throw new InvalidRequestError(`The tables ${stuck.join(', ')} refer to each other in a cycle: dbq cannot order their copy.`, {
        stuck,
      });
    }
    for (const t of next) {
      ordered.push(t);
      placed.add(t);
    }
  }
  return ordered;
}

async function targetTables(client: pg.Client): Promise<Map<string, Map<string, { nullable: boolean; hasDefault: boolean }>>> {
  const { rows } = await client.query<{ table_name: string; column_name: string; is_nullable: string; column_default: string | null }>(
    `select table_name, column_name, is_nullable, column_default from information_schema.columns
      where table_schema = current_schema() order by table_name, ordinal_position`,
  );
  const tables = new Map<string, Map<string, { nullable: boolean; hasDefault: boolean }>>();
  for (const r of rows) {
    if (!tables.has(r.table_name)) tables.set(r.table_name, new Map());
    tables.get(r.table_name)!.set(r.column_name, { nullable: r.is_nullable === 'YES', hasDefault: r.column_default !== null });
  }
  return tables;
}

/** Refuses a target that is not an empty database or an empty dbq store, before anything is
 * created in it. */
async function assertEmptyTarget(url: string): Promise<void> {
  const client = await connect(url);
  try {
    const tables = await targetTables(client);
    if (tables.size === 0) return;
    if (!tables.has(MIGRATION_TABLE)) {
      const names = [...tables.keys()];
      throw new InvalidRequestError(
        `The target database is not empty and not a dbq store (it has ${names.length} table(s): ${names.slice(0, 5).join(', ')}${names.length > 5 ? ', …' : ''}); copy into a new, empty database.`,
        { tables: names.slice(0, 20) },
      );
    }
    const full: string[] = [];
    for (const table of tables.keys()) {
      if (POSTGRES_ONLY.has(table)) continue;
      const { rows } = await client.query<{ n: string }>(`select count(*) as n from ${quote(table)}`);
      if (Number(rows[0]!.n) > 0) full.push(`${table} (${rows[0]!.n} rows)`);
    }
    if (full.length > 0) {
      throw new InvalidRequestError(
        `The target PostgreSQL store is not empty: ${full.join(', ')}. dbq store copy goes only into an empty store (a store a dbq server has started on holds its default workspace); use a new database.`,
        { nonEmpty: full },
      );
    }
  } finally {
    await client.end();
  }
}

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  // A dropped connection is re-emitted as 'error' on the client; unlistened it would kill the
  // command instead of failing the query in progress.
  client.on('error', () => {});
  await client.connect();
  return client;
}

/**
 * Copies every table of the SQLite store in `dataDir` into the PostgreSQL store at `targetUrl`,
 * which must be empty. The source is read in one read transaction (one consistent snapshot,
 * never blocking a server's writes); the target is written in one transaction.
 */
export async function copySqliteStoreToPostgres(dataDir: string, targetUrl: string): Promise<StoreCopyResult> {
  const file = path.join(dataDir, STORE_FILE);
  if (!fs.existsSync(file)) throw new InvalidRequestError(`No dbq store at ${file}.`, { dataDir });
  await assertEmptyTarget(targetUrl);
  // The same migrations make the target's schema: open it once the way a server would.
  const made = await openStore({ dataDir, storeUrl: targetUrl });
  await made.close();

  const src = new SqliteDatabase(file, { fileMustExist: true });
  src.pragma('busy_timeout = 5000');
  src.defaultSafeIntegers(false);
  const client = await connect(targetUrl);
  try {
    src.exec('begin');
    const srcMigrations = (src.prepare(`select name from ${MIGRATION_TABLE} order by name`).all() as { name: string }[]).map((r) => r.name);
    const { rows: tgtMigrations } = await client.query<{ name: string }>(`select name from ${MIGRATION_TABLE} order by name`);
    const missing = srcMigrations.filter((n) => !tgtMigrations.some((r) => r.name === n));
    const behind = tgtMigrations.map((r) => r.name).filter((n) => !srcMigrations.includes(n));
    if (missing.length > 0 || behind.length > 0) {
      throw new InvalidRequestError(
        `The SQLite store and this dbq are at different migrations (${[...missing, ...behind].join(', ')}): run any dbq command on the SQLite store first (it migrates), then copy.`,
        { missing, behind },
      );
    }
    const all = (
      src.prepare(`select name from sqlite_master where type = 'table' and name not like 'sqlite\\_%' escape '\\' order by name`).all() as {
        name: string;
      }[]
    ).map((r) => r.name);
    const skipped = all.flatMap((table) => {
      const reason = sqliteOnly(table);
      return reason ? [{ table, reason }] : [];
    });
    const copied = all.filter((t) => !sqliteOnly(t));
    const target = await targetTables(client);
    const columnsOf = new Map<string, string[]>();
    for (const table of copied) {
      const there = target.get(table);
      if (!there) {
        throw new InvalidRequestError(
          `The SQLite store has a table "${table}" that the PostgreSQL schema of this dbq does not: it was not made by dbq's migrations, and dbq store copy will not drop it silently. Remove or rename it in the SQLite store (after a backup), then copy.`,
          { table },
        );
      }
      const cols = (src.prepare(`select name from pragma_table_info(?) order by cid`).all(table) as { name: string }[]).map((r) => r.name);
      const extra = cols.filter((c) => !there.has(c));
      if (extra.length > 0) {
        throw new InvalidRequestError(
          `The SQLite store's table "${table}" has column(s) ${extra.join(', ')} that the PostgreSQL schema lacks.`,
          {
            table,
            columns: extra,
          },
        );
      }
      const required = [...there].filter(([c, info]) => !cols.includes(c) && !info.nullable && !info.hasDefault).map(([c]) => c);
      if (required.length > 0) {
        throw new InvalidRequestError(
          `The PostgreSQL table "${table}" needs column(s) ${required.join(', ')} that the SQLite store lacks.`,
          {
            table,
            columns: required,
          },
        );
      }
      columnsOf.set(table, cols);
    }

    await client.query('begin');
    const counts: TableCount[] = [];
    try {
      for (const table of dependencyOrder(src, copied)) {
        const cols = columnsOf.get(table)!;
        const perBatch = Math.max(1, Math.min(MAX_BATCH_ROWS, Math.floor(MAX_PARAMS / cols.length)));
        const head = `insert into ${quote(table)} (${cols.map(quote).join(', ')}) values `;
        let batch: unknown[][] = [];
        const flush = async () => {
          if (batch.length === 0) return;
          const params: unknown[] = [];
          const tuples = batch.map((row) => `(${row.map((v) => `$${params.push(v)}`).join(', ')})`);
          await client.query(head + tuples.join(', '), params);
          batch = [];
        };
        const read = src.prepare(`select ${cols.map(quote).join(', ')} from ${quote(table)}`).raw(true);
        let source = 0;
        for (const row of read.iterate() as IterableIterator<unknown[]>) {
          batch.push(row);
          source++;
          if (batch.length >= perBatch) await flush();
        }
        await flush();
        const { rows } = await client.query<{ n: string }>(`select count(*) as n from ${quote(table)}`);
        counts.push({ table, source, target: Number(rows[0]!.n) });
      }
      const off = counts.filter((c) => c.source !== c.target);
      if (off.length > 0) {
        throw new InvalidRequestError(
          `Counts differ after the copy (${off.map((c) => `${c.table}: ${c.source} → ${c.target}`).join(', ')}); nothing was kept.`,
        );
      }
      await client.query('commit');
    } catch (err) {
      await client.query('rollback').catch(() => {});
      throw err;
    }
    counts.sort((a, b) => a.table.localeCompare(b.table));
    return { tables: counts, skipped, migration: srcMigrations.at(-1) ?? null };
  } finally {
    if (src.inTransaction) src.exec('commit');
    src.close();
    await client.end().catch(() => {});
  }
}
