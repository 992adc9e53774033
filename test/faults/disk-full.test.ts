// A full disk used to answer SELECTs with a bare 500 (every query writes its history
// entry, and the store's SQLITE_FULL fell through as an internal error). A real full disk here:
// a small tmpfs mounted for this file (the suite runs as root), filled to the last byte by a
// filler file, holding either dbq's data dir (its SQLite store) or a SQLite connection's file.
// Every answer is 507 storage_full saying which, logged as a warning without a stack, and the
// next request after the filler is deleted works.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, tempDir, workspaceSqliteDir, type Harness } from '../support/harness.ts';

interface FullDisk {
  dir: string;
  fill(): void;
  free(): void;
  unmount(): void;
}

/** A tmpfs of `sizeMb` at a new directory. Throws when mounting is not allowed (not root). */
function mountSmallDisk(sizeMb: number): FullDisk {
  const dir = tempDir('dbq-full-disk-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m,mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    fs.rmdirSync(dir);
    throw err;
  }
  const filler = path.join(dir, 'filler');
  return {
    dir,
    fill() {
      const fd = fs.openSync(filler, 'a');
      try {
        for (const chunk of [Buffer.alloc(256 * 1024), Buffer.alloc(4096), Buffer.alloc(1)]) {
          try {
            for (;;) fs.writeSync(fd, chunk);
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
          }
        }
      } finally {
        fs.closeSync(fd);
      }
    },
    free() {
      fs.rmSync(filler, { force: true });
    },
    unmount() {
      try {
        execFileSync('umount', [dir], { stdio: 'pipe' });
      } catch {
        // a handle still open (a runner child not yet gone): detach now, freed when it closes
        execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

function canMount(): boolean {
  try {
    mountSmallDisk(1).unmount();
    return true;
  } catch {
    return false;
  }
}

const mountable = canMount();
if (!mountable) console.warn('disk-full tests skipped: mounting a tmpfs needs root');

function levelOf(lines: string[], code: string): number[] {
  return lines.filter((l) => l.includes(`"code":"${code}"`)).map((l) => JSON.parse(l).level as number);
}

describe.skipIf(!mountable)("dbq's store on a full disk", () => {
  let disk: FullDisk;
  let h: Harness;
  const logs: string[] = [];
  const targets = tempDir('dbq-full-targets-');

  beforeAll(async () => {
    disk = mountSmallDisk(16);
    // The store fills up; the SQLite connection's own file is elsewhere, on a disk with room.
    h = await createHarness({ DBQ_DATA_DIR: disk.dir, DBQ_SQLITE_DIR: targets }, { logs });
    const db = new Database(path.join(workspaceSqliteDir(h, 'default'), 'roomy.db'));
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
    db.close();
    expect((await h.call('POST', '/api/connections', h.adminKey, { name: 'roomy', url: 'sqlite:roomy.db' })).status).toBe(201);
  });

  afterAll(async () => {
    await h?.close();
    disk?.unmount();
    fs.rmSync(targets, { recursive: true, force: true });
  });

  it('a SELECT answers 507 storage_full naming the store, never 500; with space again it works', async () => {
    disk.fill();
    const answers = [];
    for (let i = 0; i < 5; i++) {
      answers.push(
        await h.call('POST', '/api/query', h.readerKey, { connectionId: 'roomy', sql: `SELECT ${i} AS n /* ${'x'.repeat(20_000)} */` }),
      );
    }
    expect(answers.map((a) => a.status)).not.toContain(500);
    // Readiness reads only: a full disk does not take the process out of the balancer.
    expect((await h.call('GET', '/readyz', null)).status).toBe(200);
    expect(answers[0].status, JSON.stringify(answers[0].body)).toBe(507);
    expect(answers[0].body).toMatchObject({
      success: false,
      code: 'storage_full',
      error: "Insufficient storage: dbq's store could not write (no space left on its disk)",
      details: { where: 'store' },
    });

    const write = await h.call('POST', '/api/query', h.adminKey, {
      connectionId: 'roomy',
      sql: 'INSERT INTO t (v) VALUES (?)',
      params: ['never'],
    });
    expect(write.status, JSON.stringify(write.body)).toBe(507);
    expect(write.body.code).toBe('storage_full');
    // A write's history entry is written before it runs: with no room for it, nothing ran.
    const db = new Database(path.join(workspaceSqliteDir(h, 'default'), 'roomy.db'), { readonly: true });
    expect(db.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 0 });
    db.close();

    // 5xx the operator must act on, not dbq's bug: a warning, never an error with a stack.
    expect(levelOf(logs, 'storage_full').length).toBeGreaterThan(0);
    expect(levelOf(logs, 'storage_full').every((level) => level === 40)).toBe(true);
    expect(logs.filter((l) => JSON.parse(l).level >= 50)).toEqual([]);

    disk.free();
    const after = await h.call('POST', '/api/query', h.readerKey, { connectionId: 'roomy', sql: 'SELECT 42 AS n' });
    expect(after.status, JSON.stringify(after.body)).toBe(200);
    expect(after.body.data.rows).toEqual([[42]]);
  });
});

describe.skipIf(!mountable)("a SQLite connection's file on a full disk", () => {
  let disk: FullDisk;
  let h: Harness;

  beforeAll(async () => {
    disk = mountSmallDisk(16);
    // The store has room; the connection's file is on the disk that fills up.
    h = await createHarness({ DBQ_SQLITE_DIR: disk.dir });
    const db = new Database(path.join(workspaceSqliteDir(h, 'default'), 'cramped.db'));
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
    db.close();
    expect((await h.call('POST', '/api/connections', h.adminKey, { name: 'cramped', url: 'sqlite:cramped.db' })).status).toBe(201);
  });

  afterAll(async () => {
    await h?.close();
    disk?.unmount();
  });

  it('an INSERT answers 507 storage_full naming the database, its history says so, and with space again it works', async () => {
    disk.fill();
    const big = 'y'.repeat(90_000);
    const full = await h.call('POST', '/api/query', h.adminKey, {
      connectionId: 'cramped',
      sql: 'INSERT INTO t (v) VALUES (?)',
      params: [big],
    });
    expect(full.status, JSON.stringify(full.body)).toBe(507);
    expect(full.body).toMatchObject({
      code: 'storage_full',
      error: 'Insufficient storage: the SQLite database could not write (no space left on its disk)',
      details: { where: 'database' },
    });
    const history = await h.call('GET', `/api/query/history?limit=5`, h.adminKey);
    const entry = history.body.data.entries.find((e: { sql: string }) => e.sql.startsWith('INSERT INTO t'));
    expect(entry).toMatchObject({ status: 'failed', error: full.body.error });

    // Reads that need no room still answer.
    const read = await h.call('POST', '/api/query', h.readerKey, { connectionId: 'cramped', sql: 'SELECT count(*) AS n FROM t' });
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body.data.rows).toEqual([[0]]);

    disk.free();
    const after = await h.call('POST', '/api/query', h.adminKey, {
      connectionId: 'cramped',
      sql: 'INSERT INTO t (v) VALUES (?)',
      params: [big],
    });
    expect(after.status, JSON.stringify(after.body)).toBe(200);
    expect(after.body.data.affectedRows).toBe(1);
  });
});
