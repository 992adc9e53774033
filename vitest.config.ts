import { configDefaults, defineConfig } from 'vitest/config';
import { SQLITE_TESTS, UNIT_TESTS } from './test/tiers.ts';

// Three projects, one per test tier (test/tiers.ts says what each may touch). `vitest run`
// (npm test) runs all three in one pool; `npm run test:unit|test:sqlite|test:integration`
// runs one. `integration` takes every test file the other two do not list, so a file missing
// from test/tiers.ts still runs (and test/test-tiers.test.ts fails until it is listed).
export default defineConfig({
  test: {
    // Engine tests share real PostgreSQL/MariaDB databases; files use their own
    // schemas/tables, but two forks keep load sane on a 2-core machine.
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    reporters: ['default', './test/support/summary-reporter.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: [...UNIT_TESTS], setupFiles: ['./test/support/unit-isolation.ts'] },
      },
      {
        extends: true,
        test: { name: 'sqlite', include: [...SQLITE_TESTS], setupFiles: ['./test/support/sqlite-isolation.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...UNIT_TESTS, ...SQLITE_TESTS],
        },
      },
    ],
  },
});
