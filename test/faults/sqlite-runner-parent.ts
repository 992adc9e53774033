// Not a test: the parent process of sqlite-runner-parent-killed.test.ts. It opens a dbq SQLite
// engine on the file in argv[2], warms one runner child and, with argv[3] === 'busy', starts a
// statement that runs for seconds; then it prints its children's pids and waits to be killed.
import { execFileSync } from 'node:child_process';
import { createEngine } from '../../src/engines/index.ts';

const [file, mode] = process.argv.slice(2);
const engine = createEngine({ engine: 'sqlite', database: file, host: null, port: null, user: null, password: null, ssl: false, maxConnections: 1, acquireTimeoutMs: 5_000, connectTimeoutMs: 5_000 });
const options = { params: [], readOnly: true, timeoutMs: 120_000, maxRows: 10, maxBytes: 1_000_000 };
await engine.execute({ ...options, sql: 'SELECT 1' });
if (mode === 'busy') {
  engine.execute({ ...options, sql: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000000) SELECT count(*) FROM c' }).catch(() => {});
  // The request reaches the child and its statement starts.
  await new Promise((resolve) => setTimeout(resolve, 300));
}
const children = execFileSync('pgrep', ['-P', String(process.pid)], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
console.log(JSON.stringify({ children }));
setInterval(() => {}, 60_000);
