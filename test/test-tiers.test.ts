// The test tiers stay true: every test file is in exactly one tier of test/tiers.ts,
// no tier names a file that is gone, vitest's projects are built from those lists, and the unit
// tier really cannot reach a server or start a process. Without this, a new test that needs
// PostgreSQL would sit in no tier, or `npm run test:unit` would quietly start waiting on one.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import config from '../vitest.config.ts';
import { INTEGRATION_TESTS, SQLITE_TESTS, UNIT_TESTS } from './tiers.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function testFiles(): string[] {
  return (fs.readdirSync(path.join(ROOT, 'test'), { recursive: true }) as string[])
    .map((f) => `test/${f.split(path.sep).join('/')}`)
    .filter((f) => f.endsWith('.test.ts'))
    .sort();
}

describe('test tiers', () => {
  const tiers = { unit: UNIT_TESTS, sqlite: SQLITE_TESTS, integration: INTEGRATION_TESTS };

  it('put every test file in exactly one tier', () => {
    const listed = new Map<string, string[]>();
    for (const [tier, files] of Object.entries(tiers)) {
      for (const f of files) listed.set(f, [...(listed.get(f) ?? []), tier]);
    }
    const unlisted = testFiles().filter((f) => !listed.has(f));
    expect(unlisted, 'add each to UNIT_TESTS, SQLITE_TESTS or INTEGRATION_TESTS in test/tiers.ts').toEqual([]);
    const twice = [...listed].filter(([, t]) => t.length > 1).map(([f, t]) => `${f}: ${t.join(', ')}`);
    expect(twice).toEqual([]);
  });

  it('name only files that exist', () => {
    const present = new Set(testFiles());
    const gone = Object.values(tiers)
      .flat()
      .filter((f) => !present.has(f));
    expect(gone, 'remove these from test/tiers.ts').toEqual([]);
  });

  it('are the projects vitest runs, on the shared two-fork pool', () => {
    const test = config.test!;
    expect(test.pool).toBe('forks');
    expect(test.poolOptions?.forks?.maxForks).toBe(2);
    const projects = (test.projects ?? []) as { test: { name: string; include: string[]; exclude?: string[] } }[];
    expect(projects.map((p) => p.test.name)).toEqual(['unit', 'sqlite', 'integration']);
    expect(projects[0].test.include).toEqual([...UNIT_TESTS]);
    expect(projects[1].test.include).toEqual([...SQLITE_TESTS]);
    // integration is "the rest": a file nobody listed still runs in npm test.
    expect(projects[2].test.include).toEqual(['test/**/*.test.ts']);
    expect(projects[2].test.exclude).toEqual(expect.arrayContaining([...UNIT_TESTS, ...SQLITE_TESTS]));
  });
});

describe('the unit tier', () => {
  it('refuses sockets, servers and child processes at once', async () => {
    expect(() => net.connect(5432, '127.0.0.1')).toThrow(/unit tier/);
    expect(() => http.createServer().listen(0)).toThrow(/unit tier/);
    expect(() => spawn('true')).toThrow(/unit tier/);
    expect(() => execFile('true')).toThrow(/unit tier/);
    const failed = (await fetch('http://127.0.0.1:8089/').catch((e: unknown) => e)) as Error;
    expect(String(failed.cause)).toMatch(/unit tier/);
  });
});
