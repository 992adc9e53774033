// Every table a migrated store has is either listed with its sealed columns or named as holding
// none (src/secrets/sealed-columns.ts): a feature that adds a table fails here first, before a
// rotation could leave its secrets under a key that is thrown away. A table in neither list
// makes `dbq secret rotate` refuse, naming it, with nothing changed.
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SEALED_COLUMNS, unclassifiedTables } from '../src/secrets/sealed-columns.ts';
import { rotateSecretKey } from '../src/secrets/rotate.ts';
import { openStore, type Store } from '../src/store/store.ts';
import { tempDir } from './support/databases.ts';

let dataDir: string;
let store: Store;

beforeAll(async () => {
  dataDir = tempDir('dbq-rotate-tables-');
  store = await openStore({ dataDir, storeUrl: null });
  fs.writeFileSync(path.join(dataDir, 'secret.key'), `${'ab'.repeat(32)}\n`, { mode: 0o600 });
});
afterAll(async () => {
  await store.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('sealed columns', () => {
  it('classify every table of a migrated store', async () => {
    const tables = (await store.db.introspection.getTables({ withInternalKyselyTables: true })).map((t) => t.name);
    expect(unclassifiedTables(tables)).toEqual([]);
    for (const col of SEALED_COLUMNS) {
      const table = (await store.db.introspection.getTables()).find((t) => t.name === col.table);
      // A listed table a later migration renames would silently be skipped.
      if (table)
        expect(
          table.columns.map((c) => c.name),
          col.table,
        ).toContain(col.column);
    }
    expect(tables).toContain('connections');
  });

  it('a table in neither list makes the rotation refuse by name and change nothing', async () => {
    await sql`create table mystery_vault (id text primary key, sealed text)`.execute(store.db);
    try {
      await expect(rotateSecretKey(store, { dataDir, configuredKey: null, newKey: null })).rejects.toThrow(
        /table\(s\) mystery_vault that dbq secret rotate does not know: .*Nothing was changed/,
      );
      expect(fs.readFileSync(path.join(dataDir, 'secret.key'), 'utf8')).toBe(`${'ab'.repeat(32)}\n`);
      expect(fs.existsSync(path.join(dataDir, 'secret.key.new'))).toBe(false);
    } finally {
      await sql`drop table mystery_vault`.execute(store.db);
    }
  });
});
