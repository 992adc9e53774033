// `dbq secret rotate`: every sealed value in the store (sealed-columns.ts) re-sealed under a new
// key. Built so that no secret is lost wherever it stops:
//  1. the new key is written beside the old one (secret.key.new, fsynced) before anything is
//     re-sealed, so a key that sealed something is always on disk;
//  2. every value is re-sealed in one store transaction that holds writers off; each value
//     already under the new key is left as it is, so a second run finishes what a first began;
//  3. only after the commit does secret.key.new replace secret.key (an atomic rename).
// Until 3, servers on the data dir open with both keys (secret-box.ts loadSecretBox), and a run
// stopped anywhere is finished by running the command again. With DBQ_SECRET_KEY there is no
// file: the new key comes from the operator, step 2 is the whole rotation, and the operator
// then gives every process the new key.
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { sql, type Kysely, type Transaction } from 'kysely';
import { InvalidRequestError } from '../errors.ts';
import type { Store } from '../store/store.ts';
import { createKeyRing, createSecretBox, KEY_FILE, NEXT_KEY_FILE, parseSecretKey, type SecretBox } from './secret-box.ts';
import { SEALED_COLUMNS, unclassifiedTables } from './sealed-columns.ts';

export interface RotationOptions {
  dataDir: string;
  /** DBQ_SECRET_KEY, or null when the data dir's key file is in use. */
  configuredKey: string | null;
  /** The new key: required with DBQ_SECRET_KEY; otherwise made here (or the one an interrupted
   * rotation left beside the key file). */
  newKey: Buffer | null;
  /** For tests of an interruption: runs after the re-sealing committed, before the key file is
   * replaced. */
  afterReseal?: () => void | Promise<void>;
}

export interface RotationResult {
  /** Per sealed column: values re-sealed now, and values found already under the new key. */
  columns: Array<{ table: string; column: string; resealed: number; alreadyNew: number }>;
  /** An interrupted rotation's new key was found and used. */
  resumed: boolean;
  /** The key file replaced; null with DBQ_SECRET_KEY. */
  keyFile: string | null;
}

async function storeTables(db: Kysely<any>): Promise<string[]> {
  const tables = await db.introspection.getTables({ withInternalKyselyTables: true });
  return tables.map((t) => t.name);
}

/** Writes `key` as `file` (which must not exist), durably, never readable by others. */
function writeKeyFile(file: string, key: Buffer): void {
  const temp = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(temp, 'wx', 0o600);
  try {
    fs.writeSync(fd, `${key.toString('hex')}\n`);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.linkSync(temp, file);
  } finally {
    fs.rmSync(temp, { force: true });
  }
  syncDir(path.dirname(file));
}

function syncDir(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function readKey(file: string): Buffer | null {
  if (!fs.existsSync(file)) return null;
  const key = parseSecretKey(fs.readFileSync(file, 'utf8'));
  if (!key) throw new InvalidRequestError(`${file} does not hold a 32-byte key (64 hex characters): dbq will not guess.`, { file });
  return key;
}

/** Holds other writers off the store for the transaction, so no value is sealed under the old
 * key behind the re-sealing's back. */
async function holdWriters(tx: Transaction<any>, kind: Store['kind'], tables: string[]): Promise<void> {
  if (kind === 'postgres') {
    // EXCLUSIVE lets servers read (and so open secrets) but not write, until the commit.
    for (const table of tables) await sql`lock table ${sql.table(table)} in exclusive mode`.execute(tx);
  } else {
    // A write statement, even one matching no row, takes SQLite's write lock at once; without it
    // the transaction would start as a reader and could fail to upgrade when a server wrote first.
    await sql`update connections set secret = secret where 0 = 1`.execute(tx);
  }
}

/** The store's tables, once every one is known to hold sealed values or none. Checked before a
 * new key is written: once secret.key.new exists servers seal with it, so it is never removed. */
async function assertClassified(db: Kysely<any>): Promise<string[]> {
  const present = await storeTables(db);
  const unknown = unclassifiedTables(present);
  if (unknown.length > 0) {
    throw new InvalidRequestError(
      `The store has table(s) ${unknown.join(', ')} that dbq secret rotate does not know: they may hold sealed secrets, which a rotation would leave under the old key. Nothing was changed; this dbq cannot rotate that store's key.`,
      { tables: unknown },
    );
  }
  return present;
}

/** Re-seals every sealed value not yet under `next`, in one transaction. */
async function resealAll(store: Store, old: SecretBox, next: SecretBox): Promise<RotationResult['columns']> {
  const db = store.db as unknown as Kysely<any>;
  const present = new Set(await assertClassified(db));
  const columns = SEALED_COLUMNS.filter((c) => present.has(c.table));
  return db.transaction().execute(async (tx) => {
    await holdWriters(
      tx,
      store.kind,
      columns.map((c) => c.table),
    );
    const counts: RotationResult['columns'] = [];
    for (const col of columns) {
      const rows = (await tx
        .selectFrom(col.table)
        .select([...col.key, col.column])
        .where(col.column, 'is not', null)
        .execute()) as Array<Record<string, unknown>>;
      let resealed = 0;
      let alreadyNew = 0;
      for (const row of rows) {
        const sealed = String(row[col.column]);
        const boundTo = col.boundTo(row);
        try {
          next.open(sealed, boundTo);
          alreadyNew++;
          continue;
        } catch {
          // Not under the new key yet.
        }
        let plain: string;
        try {
          plain = old.open(sealed, boundTo);
        } catch {
          const id = col.key.map((k) => String(row[k])).join(', ');
          throw new InvalidRequestError(
            `${col.table}.${col.column} of ${id} opens with neither the current key nor the new one: nothing was changed. Was the store sealed under another key (restored without its key file)?`,
            { table: col.table, column: col.column, row: id },
          );
        }
        let update = tx.updateTable(col.table).set({ [col.column]: next.seal(plain, boundTo) });
        for (const k of col.key) update = update.where(k, '=', row[k]);
        await update.execute();
        resealed++;
      }
      counts.push({ table: col.table, column: col.column, resealed, alreadyNew });
    }
    return counts;
  });
}

export async function rotateSecretKey(store: Store, opts: RotationOptions): Promise<RotationResult> {
  await assertClassified(store.db as unknown as Kysely<any>);
  if (opts.configuredKey) {
    const old = parseSecretKey(opts.configuredKey);
    if (!old) throw new InvalidRequestError('DBQ_SECRET_KEY must be 32 bytes as 64 hex or 44 base64 characters');
    if (!opts.newKey) {
      throw new InvalidRequestError(
        'DBQ_SECRET_KEY is set, so the new key comes from you: pipe it (64 hex characters, e.g. from `openssl rand -hex 32`) to dbq secret rotate --new-key-stdin.',
      );
    }
    if (opts.newKey.equals(old)) throw new InvalidRequestError('The new key is the key in use: give a different one.');
    // The new key first: a second run after an interrupted one finds most values already moved.
    const columns = await resealAll(store, createKeyRing([opts.newKey, old]), createSecretBox(opts.newKey));
    return { columns, resumed: false, keyFile: null };
  }

  const keyFile = path.join(opts.dataDir, KEY_FILE);
  const nextFile = path.join(opts.dataDir, NEXT_KEY_FILE);
  const old = readKey(keyFile);
  if (!old) throw new InvalidRequestError(`No key file at ${keyFile}: there is no key to rotate (is this the data dir dbq serves?).`);
  let next = readKey(nextFile);
  const resumed = next !== null;
  if (next && opts.newKey && !next.equals(opts.newKey)) {
    throw new InvalidRequestError(
      `An interrupted rotation left ${nextFile}, and values may already be sealed under it: run dbq secret rotate again without --new-key-stdin to finish that rotation first.`,
    );
  }
  if (!next) {
    next = opts.newKey ?? randomBytes(32);
    if (next.equals(old)) throw new InvalidRequestError('The new key is the key in use: give a different one.');
    writeKeyFile(nextFile, next);
  }
  const opener = createKeyRing([next, old]);
  const sealer = createSecretBox(next);
  const columns = await resealAll(store, opener, sealer);
  await opts.afterReseal?.();
  fs.renameSync(nextFile, keyFile);
  syncDir(opts.dataDir);
  // A server that sealed a value under the old key just before it saw secret.key.new may have
  // written it after the commit: one more pass moves it too.
  const late = await resealAll(store, opener, sealer);
  for (const c of columns) c.resealed += late.find((l) => l.table === c.table && l.column === c.column)?.resealed ?? 0;
  return { columns, resumed, keyFile };
}
