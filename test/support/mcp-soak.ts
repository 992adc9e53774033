// Many tool calls in one MCP session against a dbq in its own process, with that process's
// heap read between them (test/mcp-session-heap.test.ts, `bench/mcp.ts --soak`). The server
// is test/support/mcp-heap-server.ts, forked with --expose-gc; its heap comes over IPC. With
// PROF_DIR set, the server also writes a CPU profile there (--cpu-prof) when it exits.
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';

const SERVER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'mcp-heap-server.ts');

/** `modern`: the 2026-07-28 revision (SDK v2 client, no session); the others 2025-era sessions. */
export type SoakTransport = 'sse' | 'streamable' | 'modern';

/** What a soak needs of a client, whichever SDK it comes from. */
export interface SoakClient {
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<object>;
  listTools(): Promise<unknown>;
  /** Ends the session (a Streamable HTTP one with DELETE: close() alone leaves it to the idle
   * sweep) and closes the client. */
  end(): Promise<void>;
}

// The SDK's client transports pass one connection-wide AbortSignal to every fetch; undici
// adds an abort listener per request and drops it only at GC, so a long run piles up
// thousands (MaxListenersExceededWarning). Each request gets its own signal here, bridged to
// the transport's — the client-side fix, so a run measures dbq and not that pile-up.
export const isolatedFetch: typeof fetch = async (url, init) => {
  const parent = init?.signal;
  if (!parent) return fetch(url, init);
  const own = new AbortController();
  const onAbort = () => own.abort(parent.reason);
  if (parent.aborted) own.abort(parent.reason);
  else parent.addEventListener('abort', onAbort, { once: true });
  try {
    return await fetch(url, { ...init, signal: own.signal });
  } finally {
    parent.removeEventListener('abort', onAbort);
  }
};

export interface HeapServer {
  origin: string;
  /** The server's process id (for reading its CPU time). */
  pid: number;
  /** Admin key of workspace `default`. */
  key: string;
  /** The server's heap after garbage collection, in bytes. */
  heap(): Promise<{ heapUsed: number; rss: number }>;
  /** Writes a .heapsnapshot of the server to `file`. */
  snapshot(file: string): Promise<string>;
  stop(): Promise<void>;
}

/** Forks the heap server (its connection `pg` is `pgUrl`, by default the machine's PostgreSQL). */
export async function startHeapServer(pgUrl?: string): Promise<HeapServer> {
  const child: ChildProcess = fork(SERVER, pgUrl ? [pgUrl] : [], {
    execArgv: ['--expose-gc', '--import', 'tsx', ...(process.env.PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PROF_DIR}`] : [])],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const next = <T>(t: string): Promise<T> =>
    new Promise((resolve, reject) => {
      const onMessage = (m: { t: string }) => {
        if (m.t !== t) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(m as T);
      };
      const onExit = (code: number | null) => {
        child.off('message', onMessage);
        reject(new Error(`mcp-heap-server exited with ${code}`));
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const { origin, key } = await next<{ origin: string; key: string }>('ready');
  return {
    origin,
    pid: child.pid!,
    key,
    async heap() {
      const reply = next<{ heapUsed: number; rss: number }>('heap');
      child.send({ t: 'heap' });
      return reply;
    },
    async snapshot(file) {
      const reply = next<{ file: string }>('snapshot');
      child.send({ t: 'snapshot', file });
      return (await reply).file;
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ t: 'stop' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** An SDK client on one session of `transport` (or, `modern`, a v2 client pinned to 2026-07-28),
 * its requests isolated from the transport's signal. */
export async function connectSoakClient(transport: SoakTransport, origin: string, key: string): Promise<SoakClient> {
  const requestInit = { headers: { authorization: `Bearer ${key}` } };
  if (transport === 'modern') {
    const client = new ModernClient({ name: 'soak-modern', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new ModernTransport(new URL(`${origin}/mcp`), { requestInit, fetch: isolatedFetch }));
    return Object.assign(client, { end: () => client.close() });
  }
  const client = new Client({ name: `soak-${transport}`, version: '1' });
  if (transport === 'sse') {
    await client.connect(new SSEClientTransport(new URL(`${origin}/sse`), { requestInit, fetch: isolatedFetch }));
    return Object.assign(client, { end: () => client.close() });
  }
  const streamable = new StreamableHTTPClientTransport(new URL(`${origin}/mcp`), { requestInit, fetch: isolatedFetch });
  await client.connect(streamable);
  return Object.assign(client, {
    end: async () => {
      await streamable.terminateSession().catch(() => {});
      await client.close();
    },
  });
}

/** `n` sequential `execute_query` calls with `args`; `onEvery(done)` after each `every` calls. */
export async function soak(
  client: SoakClient,
  n: number,
  args: Record<string, unknown>,
  every: number,
  onEvery: (done: number) => Promise<void>,
): Promise<void> {
  for (let i = 1; i <= n; i++) {
    const res = (await client.callTool({ name: 'execute_query', arguments: args })) as { isError?: boolean; content?: unknown };
    if (res.isError) throw new Error(`call ${i}: ${JSON.stringify(res.content)}`);
    if (i % every === 0) await onEvery(i);
  }
}
