// A dbq server in a process of its own, for measuring its heap while a client drives it
// (test/mcp-session-heap.test.ts, `bench/mcp.ts --soak`). Run it with `fork` and
// `--expose-gc`:
//   node --expose-gc --import tsx test/support/mcp-heap-server.ts [postgres-url]
// It builds the app as `dbq serve` does (store, services, every front door) on a temp data
// dir, with an admin key of workspace `default` and a PostgreSQL connection `pg` (the
// machine's server unless a URL is given); it listens on 127.0.0.1 and sends
// `{ origin, key }` over IPC.
// Asked `{ t: 'heap' }`, it collects garbage until the heap stops shrinking and answers
// `{ t: 'heap', heapUsed, rss }`; asked `{ t: 'snapshot', file }`, it writes a heap snapshot
// there (for comparing retained objects by constructor) and answers `{ t: 'snapshot', file }`.
// The measurement travels over IPC, never through an HTTP endpoint of the product.
import { cliActor } from '../../src/audit/audit.ts';
import fs from 'node:fs';
import { setImmediate as tick } from 'node:timers/promises';
import v8 from 'node:v8';
import { loadConfig } from '../../src/config.ts';
import { createConnection } from '../../src/connections/connections.ts';
import { buildApp } from '../../src/server/app.ts';
import { frontDoors } from '../../src/server/front-doors.ts';
import { closeServices, createServices } from '../../src/services.ts';
import { createApiKey } from '../../src/workspaces/api-keys.ts';
import { createUser } from '../../src/workspaces/users.ts';
import { getWorkspace, setWorkspacePlan } from '../../src/workspaces/workspaces.ts';
import { PG_URL, tempDir } from './databases.ts';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc || !process.send) throw new Error('run with --expose-gc, as a forked child (IPC)');
const pgUrl = process.argv[2] ?? PG_URL;

const dataDir = tempDir('dbq-heap-');
const config = loadConfig({ DBQ_DATA_DIR: dataDir, DBQ_LOG_LEVEL: 'silent' });
const svc = await createServices(config);
// The plan's request limit is not under test; an enterprise plan has none.
await setWorkspacePlan(svc.db, 'default', 'enterprise', cliActor());
await createUser(svc.db, { workspace: 'default', email: 'heap@dbq.test', role: 'admin' }, cliActor());
const { secret: key } = await createApiKey(svc.db, { workspace: 'default', email: 'heap@dbq.test', name: 'heap' });
const ws = await getWorkspace(svc.db, 'default');
await createConnection(
  { db: svc.db, secretBox: svc.secretBox, sqliteDir: config.sqliteDir },
  ws.id,
  { name: 'pg', url: pgUrl },
  cliActor(),
);
const app = await buildApp(svc, frontDoors());
const origin = await app.listen({ port: 0, host: '127.0.0.1' });

/** The heap once garbage collection stops freeing anything (weak callbacks and finalizers
 * run between passes, so one gc() is not always enough). */
async function settledHeap(): Promise<number> {
  let last = Infinity;
  for (let i = 0; i < 10; i++) {
    gc!();
    await tick();
    const used = process.memoryUsage().heapUsed;
    if (used >= last - 64 * 1024) return used;
    last = used;
  }
  return last;
}

process.on('message', (m: { t: string; file?: string }) => {
  if (m.t === 'heap') {
    void settledHeap().then((heapUsed) => process.send!({ t: 'heap', heapUsed, rss: process.memoryUsage().rss }));
  } else if (m.t === 'snapshot' && m.file) {
    gc!();
    process.send!({ t: 'snapshot', file: v8.writeHeapSnapshot(m.file) });
  } else if (m.t === 'stop') {
    void (async () => {
      await app.close();
      await closeServices(svc);
      fs.rmSync(dataDir, { recursive: true, force: true });
      process.exit(0);
    })();
  }
});
// The parent gone (a test killed mid-run) takes this server with it.
process.on('disconnect', () => process.exit(0));
process.send({ t: 'ready', origin, key });
