// Not a test: the parent process of sqlite-runner-parent-killed.test.ts. It opens a dbq SQLite
// engine on the file in argv[2], warms one runner child and, with argv[3] === 'busy', starts a
// statement that runs for seconds; then it prints its children's pids and waits to be killed.
import { execFileSync } from 'node:child_process';
import { createEngine } from '../../src/engines/index.ts';
import { cpuTicks } from '../support/processes.ts';

const [file, mode] = process.argv.slice(2);
const engine = createEngine({
  engine: 'sqlite',
  database: file,
  host: null,
  port: null,
  user: null,
  password: null,
  ssl: false,
  maxConnections: 1,
  acquireTimeoutMs: 5_000,
  connectTimeoutMs: 5_000,
});
const options = { params: [], readOnly: true, timeoutMs: 120_000, maxRows: 10, maxBytes: 1_000_000 };
await engine.execute({ ...options, sql: 'SELECT 1' });
const children = execFileSync('pgrep', ['-P', String(process.pid)], { encoding: 'utf8' })
  .split('\n')
  .filter(Boolean)
  .map(Number);
if (mode === 'busy') {
  const before = children.map(cpuTicks);
  engine
    .execute({
      ...options,
      sql: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000000) SELECT count(*) FROM c',
    })
    .catch(() => {});
  // The statement has started once the idle child spends CPU (two clock ticks: 20 ms).
  const deadline = Date.now() + 10_000;
  while (!children.some((pid, i) => cpuTicks(pid) - before[i] >= 2)) {
    if (Date.now() > deadline) throw new Error('the runner child did not start the statement');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
console.log(JSON.stringify({ children }));
setInterval(() => {}, 60_000);
