// dbq migrate status lists applied and pending migrations without running any, and a store
// migrated by a newer dbq (a migration this code does not know) stops serve and every admin
// command with a message that says so, leaving the store untouched.
import fs from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationProvider } from '../src/store/migrations.ts';
import { tempDir } from './support/databases.ts';
import { runDbq } from './support/cli.ts';

let dataDir: string;
let known: string[];
const storeFile = () => path.join(dataDir, 'dbq.sqlite');
const recorded = (): string[] => {
  const db = new SqliteDatabase(storeFile(), { readonly: true });
  try {
    return (db.prepare('select name from dbq_migrations order by name').all() as { name: string }[]).map((r) => r.name);
  } finally {
    db.close();
  }
};
const write = (sql: string, ...params: unknown[]) => {
  const db = new SqliteDatabase(storeFile());
  try {
    db.prepare(sql).run(...params);
  } finally {
    db.close();
  }
};

beforeAll(async () => {
  dataDir = tempDir('dbq-migrate-');
  known = Object.keys(await migrationProvider.getMigrations()).sort();
  const made = await runDbq(dataDir, ['--init', 'workspace', 'list']);
  expect(made.code, made.stderr).toBe(0);
});
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

describe('dbq migrate status', { timeout: 120_000 }, () => {
  it('lists every known migration as applied on a current store, none pending', async () => {
    const res = await runDbq(dataDir, ['migrate', 'status', '--json']);
    expect(res.code, res.stderr).toBe(0);
    const status = JSON.parse(res.stdout);
    expect(status.applied.map((m: { name: string }) => m.name)).toEqual(known);
    expect(status.pending).toEqual([]);
    expect(status.unknown).toEqual([]);
    const human = await runDbq(dataDir, ['migrate', 'status']);
    expect(human.stdout).toContain(`Applied (${known.length}):`);
    expect(human.stdout).toContain('Pending (0):');
  });

  it('lists a migration the store has not run as pending, and runs nothing itself', async () => {
    const last = known.at(-1)!;
    const at = new SqliteDatabase(storeFile(), { readonly: true });
    const row = at.prepare('select * from dbq_migrations where name = ?').get(last) as { name: string; timestamp: string };
    at.close();
    write('delete from dbq_migrations where name = ?', last);
    try {
      const res = await runDbq(dataDir, ['migrate', 'status', '--json']);
      expect(res.code, res.stderr).toBe(0);
      expect(JSON.parse(res.stdout).pending).toEqual([last]);
      const human = await runDbq(dataDir, ['migrate', 'status']);
      expect(human.stdout).toMatch(new RegExp(`Pending \\(1\\): applied when dbq serve next starts:\\n  ${last}`));
      expect(recorded()).not.toContain(last);
    } finally {
      write('insert into dbq_migrations (name, timestamp) values (?, ?)', row.name, row.timestamp);
    }
  });

  it('--help says what it lists and that it changes nothing', async () => {
    const res = await runDbq(dataDir, ['migrate', 'status', '--help']);
    expect(res.stdout).toContain('applied and those pending');
    expect(res.stdout).toContain('without changing anything');
  });
});

describe('a store newer than the code', { timeout: 120_000 }, () => {
  const future = '9999_from_a_newer_dbq';

  beforeAll(() => write('insert into dbq_migrations (name, timestamp) values (?, ?)', future, new Date().toISOString()));
  afterAll(() => write('delete from dbq_migrations where name = ?', future));

  it('migrate status names the unknown migration and exits 1', async () => {
    const res = await runDbq(dataDir, ['migrate', 'status']);
    expect(res.code).toBe(1);
    expect(res.stdout).toContain('Unknown to this dbq (1): the store was migrated by a newer version');
    expect(res.stdout).toContain(future);
  });

  it('dbq serve refuses to start, saying the store is newer and what to do', async () => {
    const before = recorded();
    const res = await runDbq(dataDir, ['serve', '--port', '0'], { env: { DBQ_LOG_LEVEL: 'warn' } });
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain(`This store is newer than this dbq: it has run migration ${future}, which this version does not know`);
    expect(res.stderr).toContain('docs/upgrading.md');
    expect(res.stdout).not.toContain('dbq is serving');
    expect(recorded()).toEqual(before);
  });

  it('an admin command refuses the same way', async () => {
    const res = await runDbq(dataDir, ['workspace', 'list']);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('This store is newer than this dbq');
  });
});
