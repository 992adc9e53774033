// The rig of bench/ratio.ts: stores provisioned in-process, dbq and the bare proxy as child
// processes carrying the event-loop probe (loop-probe.mjs), MCP sessions opened over plain
// HTTP, and the reading of a CPU profile. dbq runs from any checkout (`root`): the bench's own
// by default, or a scratch copy carrying experimental toggles, so an ablation never touches src/.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { cliActor } from '../../src/audit/audit.ts';
import { loadConfig } from '../../src/config.ts';
import { createConnection } from '../../src/connections/connections.ts';
import { createLogger } from '../../src/logger.ts';
import { closeServices, createServices } from '../../src/services.ts';
import { createApiKey } from '../../src/workspaces/api-keys.ts';
import { createUser } from '../../src/workspaces/users.ts';
import { ensureDefaultWorkspace, getWorkspace, setWorkspacePlan } from '../../src/workspaces/workspaces.ts';
import { freePort } from '../../test/support/processes.ts';
import { cpuSeconds, startChild } from './processes.ts';

const PROBE = pathToFileURL(path.resolve('bench/support/loop-probe.mjs')).href;

/** Provisions a store (SQLite in env.DBQ_DATA_DIR unless env.DBQ_STORE_URL) with an enterprise
 * default workspace (no plan limit: the bench measures the query path), an admin user, a
 * read-only key and connection `pg`. Returns the key's secret. */
export async function provision(env: Record<string, string>, targetUrl: string, pool: number): Promise<string> {
  const svc = await createServices(loadConfig(env), { logger: createLogger('warn') });
  try {
    await ensureDefaultWorkspace(svc.db);
    await setWorkspacePlan(svc.db, 'default', 'enterprise', cliActor());
    await createUser(svc.db, { workspace: 'default', email: 'bench@dbq.test', role: 'admin' }, cliActor());
    const { secret } = await createApiKey(svc.db, {
      workspace: 'default',
      email: 'bench@dbq.test',
      name: 'bench',
      scope: { readOnly: true },
    });
    const ws = await getWorkspace(svc.db, 'default');
    await createConnection(
      { db: svc.db, secretBox: svc.secretBox, sqliteDir: svc.config.sqliteDir },
      ws.id,
      { name: 'pg', url: targetUrl, maxConnections: pool },
      cliActor(),
    );
    return secret;
  } finally {
    await closeServices(svc);
  }
}

export interface LoopStats {
  p50: number;
  p99: number;
  max: number;
  /** The garbage collector's main-thread pauses since the previous report, ms. */
  gcMs: number;
}

export interface Server {
  label: string;
  url: string;
  pid: number;
  /** CPU seconds (user + system) used so far. */
  cpu(): number;
  /** The event loop's delay since the previous call (the probe's histogram, then reset). */
  loop(): Promise<LoopStats>;
  stop(): Promise<void>;
}

function probeFile(): string {
  return path.join(os.tmpdir(), `dbq-loop-${process.pid}-${Math.random().toString(36).slice(2, 8)}.json`);
}

function probeReader(pid: number, file: string): () => Promise<LoopStats> {
  let seq = 0;
  return async () => {
    process.kill(pid, 'SIGUSR2');
    for (let i = 0; i < 300; i++) {
      try {
        const r = JSON.parse(fs.readFileSync(file, 'utf8')) as LoopStats & { seq: number };
        if (r.seq > seq) {
          seq = r.seq;
          return r;
        }
      } catch {
        // not written yet
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return { p50: NaN, p99: NaN, max: NaN, gcMs: NaN };
  };
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** `dbq serve` of the checkout at `root` (its bin/dbq, so its compiled build when current),
 * with the probe preloaded and `execArgv` given to node (e.g. --cpu-prof, which NODE_OPTIONS
 * refuses). None of this process's DBQ_* settings leak in. */
export async function startDbqAt(label: string, root: string, env: Record<string, string>, execArgv: string[] = []): Promise<Server> {
  const file = probeFile();
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DBQ_') && k !== 'NODE_OPTIONS'));
  const child = spawn(process.execPath, [...execArgv, path.join(root, 'bin/dbq'), 'serve', '--port', '0', '--host', '127.0.0.1'], {
    cwd: root,
    env: { ...base, ...env, BENCH_LOOP_PROBE_FILE: file, NODE_OPTIONS: `--import ${PROBE}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${label}: dbq serve did not start in 60 s: ${stderr}`)), 60_000);
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      const served = /dbq is serving (http:\/\/\S+)/.exec(out);
      if (served) {
        clearTimeout(timer);
        resolve(served[1].replace('localhost', '127.0.0.1'));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${label}: dbq serve exited with ${code}: ${stderr}`));
    });
  });
  const loop = probeReader(child.pid!, file);
  return {
    label,
    url,
    pid: child.pid!,
    cpu: () => cpuSeconds(child.pid!),
    loop,
    async stop() {
      await stopChild(child);
      fs.rmSync(file, { force: true });
    },
  };
}

/** bench/support/bare-proxy.ts (Fastify + pg, nothing else) with the probe preloaded. */
export async function startBare(targetUrl: string, pool: number): Promise<Server> {
  const file = probeFile();
  const port = await freePort();
  const child = await startChild(path.resolve('bench/support/bare-proxy.ts'), [String(port), targetUrl, String(pool)], {
    BENCH_LOOP_PROBE_FILE: file,
    NODE_OPTIONS: `--import ${PROBE}`,
  });
  return {
    label: 'bare',
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    cpu: () => cpuSeconds(child.pid!),
    loop: probeReader(child.pid!, file),
    async stop() {
      await stopChild(child);
      fs.rmSync(file, { force: true });
    },
  };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** POST with a keep-alive agent; resolves with the status, the response headers and the body. */
export function post(
  url: string,
  body: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 500, headers: res.headers, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** `count` Streamable HTTP sessions on `origin` (JSON answers: dbq's sessions use
 * enableJsonResponse), each initialized as a client does; the returned function makes one
 * `execute_query` call on a free session and is true when it answered without isError. */
export async function mcpCaller(
  origin: string,
  key: string,
  count: number,
  args: Record<string, unknown>,
): Promise<() => Promise<boolean>> {
  const base = { authorization: `Bearer ${key}`, accept: 'application/json, text/event-stream' };
  const free: string[] = [];
  for (let i = 0; i < count; i++) {
    const init = await post(
      `${origin}/mcp`,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'bench-ratio', version: '1' } },
      }),
      base,
    );
    const id = init.headers['mcp-session-id'];
    if (init.status !== 200 || typeof id !== 'string') throw new Error(`MCP initialize answered ${init.status}: ${init.body}`);
    const headers = { ...base, 'mcp-session-id': id, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION };
    const ack = await post(`${origin}/mcp`, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers);
    if (ack.status >= 300) throw new Error(`MCP notifications/initialized answered ${ack.status}: ${ack.body}`);
    free.push(id);
  }
  let next = 1;
  const body = (n: number) =>
    JSON.stringify({ jsonrpc: '2.0', id: n, method: 'tools/call', params: { name: 'execute_query', arguments: args } });
  return async () => {
    const id = free.pop();
    if (id === undefined) throw new Error('more concurrent MCP calls than sessions');
    try {
      const r = await post(`${origin}/mcp`, body(next++), {
        ...base,
        'mcp-session-id': id,
        'mcp-protocol-version': LATEST_PROTOCOL_VERSION,
      });
      return r.status === 200 && r.body.includes('"result"') && !r.body.includes('"isError":true');
    } finally {
      free.push(id);
    }
  };
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

/** Self time per function of a V8 .cpuprofile, counting only samples taken between `from` and
 * `to` (µs on the monotonic clock, which V8's profile timestamps and process.hrtime share), so
 * start-up and shutdown stay out. Shares are of the samples in the window, idle included. */
export function topSelfTime(
  file: string,
  from: number,
  to: number,
  top: number,
): { rows: Array<{ name: string; share: number }>; modules: Array<{ name: string; share: number }>; samples: number; idle: number } {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    nodes: ProfileNode[];
    samples: number[];
    timeDeltas: number[];
    startTime: number;
  };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const counts = new Map<string, number>();
  const perModule = new Map<string, number>();
  let t = profile.startTime;
  let total = 0;
  let idle = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    if (t < from || t > to) continue;
    const frame = byId.get(profile.samples[i])!.callFrame;
    total++;
    if (frame.functionName === '(idle)') idle++;
    const where = frame.url ? ` ${shortUrl(frame.url)}:${frame.lineNumber + 1}` : '';
    const name = `${frame.functionName || '(anonymous)'}${where}`;
    counts.set(name, (counts.get(name) ?? 0) + 1);
    const module = frame.url ? moduleOf(frame.url) : frame.functionName.startsWith('(') ? frame.functionName : '(native)';
    perModule.set(module, (perModule.get(module) ?? 0) + 1);
  }
  const ranked = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, n]) => ({ name, share: n / Math.max(1, total) }));
  return { rows: ranked(counts), modules: ranked(perModule), samples: total, idle };
}

/** A package (node_modules/<name>), dbq's own file, or node's internals as one. */
function moduleOf(url: string): string {
  const short = shortUrl(url);
  if (url.startsWith('node:')) return 'node: internals';
  if (url.includes('node_modules/')) {
    const parts = short.split('/');
    return `node_modules/${parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]}`;
  }
  return short;
}

function shortUrl(url: string): string {
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const dist = url.indexOf('/dist/server/');
  if (dist >= 0) return url.slice(dist + 1);
  return url.replace(/^file:\/\/.*?\/(src|bench)\//, '$1/');
}
