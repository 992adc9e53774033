// Real dbq processes for the multi-process tests and the scale bench: `dbq serve` and CLI
// commands as child processes (bin/dbq …), a private
// redis-server on its own port for tests that take Redis away, and the shared environment
// (one PostgreSQL store, one DBQ_SECRET_KEY) that lets several processes serve the same
// workspaces. Every process started here is stopped by its handle, never by name.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// bin/dbq, as users run it: the compiled build when current, the sources through tsx otherwise.
const ENTRY = path.join(ROOT, 'bin/dbq');

export const MACHINE_REDIS_URL = 'redis://127.0.0.1:6379';

/** User and system CPU clock ticks (10 ms each) process `pid` has used so far (Linux): a busy
 * child is told from an idle one by these growing. */
export function cpuTicks(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** Environment for processes that share one store: same store URL, same secret key. */
export function sharedEnv(opts: {
  storeUrl: string;
  dataDir: string;
  redisUrl?: string | null;
  extra?: Record<string, string>;
}): Record<string, string> {
  const env: Record<string, string> = {
    DBQ_STORE_URL: opts.storeUrl,
    DBQ_DATA_DIR: opts.dataDir,
    DBQ_SECRET_KEY: randomBytes(32).toString('hex'),
    DBQ_REDIS_KEY_PREFIX: `dbqtest:${process.pid}:${randomBytes(4).toString('hex')}`,
    DBQ_LOG_LEVEL: 'warn',
    ...opts.extra,
  };
  if (opts.redisUrl) env.DBQ_REDIS_URL = opts.redisUrl;
  return env;
}

/** A child environment: the parent's PATH and the like, but none of its DBQ_* settings. */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DBQ_')));
  return { ...base, ...env };
}

export interface DbqProcess {
  url: string;
  /** pino lines (JSON) the process wrote, parsed when possible. */
  logs: Array<Record<string, unknown>>;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts `dbq serve --port 0` and resolves once it prints the URL it serves. */
export async function startDbq(env: Record<string, string>): Promise<DbqProcess> {
  const child = spawn(process.execPath, [ENTRY, 'serve', '--port', '0', '--host', '127.0.0.1'], {
    cwd: ROOT,
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  let buffered = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`dbq serve did not start in 30 s: ${stderr}`)), 30_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        const served = /dbq is serving (http:\/\/\S+)/.exec(line);
        if (served) {
          clearTimeout(timer);
          resolve(served[1].replace('localhost', '127.0.0.1'));
        }
        if (line.startsWith('{')) {
          try {
            logs.push(JSON.parse(line) as Record<string, unknown>);
          } catch {
            // a partial or non-JSON line is not a log record
          }
        }
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`dbq serve exited with ${code}: ${stderr}`));
    });
  });
  return {
    url,
    logs,
    child,
    stop: () => stopChild(child),
  };
}

function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill(signal);
  });
}

/** Runs one `dbq … --json` command and returns its parsed output. */
export function runCli(env: Record<string, string>, ...args: string[]): Promise<any> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [ENTRY, ...args, '--json'], { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr!.on('data', (c: Buffer) => (err += c.toString('utf8')));
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`dbq ${args.join(' ')} exited with ${code}: ${err}${out}`));
      try {
        resolve(JSON.parse(out));
      } catch {
        reject(new Error(`dbq ${args.join(' ')} printed no JSON: ${out}`));
      }
    });
  });
}

export interface HttpAnswer {
  status: number;
  body: any;
  headers: Headers;
}

/** One HTTP call with an optional Bearer key and JSON body. */
export async function http(
  method: string,
  url: string,
  key: string | null,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<HttpAnswer> {
  const res = await fetch(url, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // non-JSON body stays text
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export interface PrivateRedis {
  url: string;
  port: number;
  /** Starts (or restarts) the server on the same port; resolves once it answers PING. */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** SIGSTOP: the server keeps every connection open and answers nothing (a hung Redis, not a
   * dead one); resume() is SIGCONT. */
  pause(): void;
  resume(): void;
}

/**
 * A redis-server of this test's own on a free port, so a test can take "Redis going away"
 * without disturbing the machine's Redis that other suites use.
 */
export async function privateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  const handle: PrivateRedis = {
    url,
    port,
    async start() {
      if (child && child.exitCode === null) return;
      child = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
        { stdio: 'ignore' },
      );
      const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => {});
      try {
        for (let i = 0; i < 100; i++) {
          try {
            if (probe.status !== 'ready') await probe.connect();
            if ((await probe.ping()) === 'PONG') return;
          } catch {
            probe.disconnect();
            await new Promise((r) => setTimeout(r, 50));
          }
        }
        throw new Error(`redis-server on ${port} did not start`);
      } finally {
        probe.disconnect();
      }
    },
    async stop() {
      if (child) await stopChild(child, 'SIGKILL');
      child = null;
    },
    pause() {
      if (child && child.exitCode === null) child.kill('SIGSTOP');
    },
    resume() {
      if (child && child.exitCode === null) child.kill('SIGCONT');
    },
  };
  await handle.start();
  return handle;
}

/** Deletes every key under a prefix (what a test run wrote into the machine's Redis). */
export async function deleteRedisKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

export function removeDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}
