// A PostgreSQL cluster of the test's own (initdb into a temp dir, pg_ctl on a free port), so a
// test can stop "the store" for real — `pg_ctl stop -m immediate`, the way a crash or a failover
// looks to dbq — without touching the machine's PostgreSQL that every other suite uses.
// PostgreSQL refuses to run as root: as root, the binaries run as the `postgres` user through
// runuser, in a directory that user owns. Also used by bench/faults.ts.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './processes.ts';

const run = promisify(execFile);
const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

export interface PrivatePostgres {
  port: number;
  /** postgres://postgres@127.0.0.1:<port>/<database> */
  url(database?: string): string;
  /** Starts (or restarts) the server; resolves once it accepts connections. */
  start(): Promise<void>;
  /** `immediate`: the postmaster and every backend quit at once, sockets closed, no checkpoint
   * (what a crash looks like to clients); `fast`: backends are terminated (57P01) first. */
  stop(mode?: 'immediate' | 'fast'): Promise<void>;
  /** Stops it if running and deletes its directory. */
  destroy(): Promise<void>;
}

function asOwner(bin: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  const isRoot = process.getuid?.() === 0;
  return isRoot ? run('runuser', ['-u', 'postgres', '--', path.join(BIN, bin), ...args]) : run(path.join(BIN, bin), args);
}

/** `serverOptions`: more `-c name=value` settings for the postmaster (e.g. ssl=on). */
export async function privatePostgres(opts: { serverOptions?: string } = {}): Promise<PrivatePostgres> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dbq-pg-'));
  if (process.getuid?.() === 0) {
    const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
    fs.chownSync(dir, Number(uid.stdout), Number(gid.stdout));
  }
  const data = path.join(dir, 'data');
  const port = await freePort();
  // fsync off: the outage is the stop, not lost writes of a crashed disk.
  await asOwner('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '--no-instructions']);
  let running = false;
  const handle: PrivatePostgres = {
    port,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    async start() {
      if (running) return;
      await asOwner('pg_ctl', [
        '-D',
        data,
        '-l',
        path.join(dir, 'log'),
        '-w',
        '-t',
        '30',
        '-o',
        `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50 ${opts.serverOptions ?? ''}`.trim(),
        'start',
      ]);
      running = true;
    },
    async stop(mode = 'immediate') {
      if (!running) return;
      await asOwner('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop']);
      running = false;
    },
    async destroy() {
      await handle.stop('immediate').catch(() => {});
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  await handle.start();
  return handle;
}

/** Creates a database in the cluster and returns its URL. */
export async function createDatabase(cluster: PrivatePostgres, name: string): Promise<string> {
  const c = new pg.Client({ connectionString: cluster.url() });
  await c.connect();
  try {
    await c.query(`CREATE DATABASE ${name}`);
  } finally {
    await c.end();
  }
  return cluster.url(name);
}
