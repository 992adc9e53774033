// Setup file of the `unit` tier (test/tiers.ts): a unit test needs no service, no network and
// no other process, so here every way out throws at once instead of waiting on a server that a
// laptop without PostgreSQL does not have. A test that trips this belongs in the sqlite or
// integration tier. Worker threads (the guard's off-thread parser) stay allowed: they are
// in-process.
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';

function refuse(what: string): () => never {
  return () => {
    throw new Error(`unit tier: ${what} is not allowed here; move this file to the sqlite or integration tier in test/tiers.ts`);
  };
}

net.Socket.prototype.connect = refuse('opening a socket (a database, Redis, fetch)') as typeof net.Socket.prototype.connect;
net.Server.prototype.listen = refuse('listening on a port') as typeof net.Server.prototype.listen;
const spawners = ['spawn', 'spawnSync', 'fork', 'exec', 'execSync', 'execFile', 'execFileSync'] as const;
for (const name of spawners) (childProcess as unknown as Record<string, unknown>)[name] = refuse(`child_process.${name}`);
// `import { spawn } from 'node:child_process'` reads the ESM view of the module; bring it in
// line with the patched CommonJS exports.
syncBuiltinESMExports();
