// MCP tool-call latency against plain REST, in one process and one run:
//   node --import tsx bench/mcp.ts [N] [postgres-url]
// Starts dbq on a temp data dir with a PostgreSQL connection, then times `execute_query
// SELECT 1` over the HTTP+SSE transport and over Streamable HTTP (the SDK's own clients), over
// the stateless 2026-07-28 revision (SDK v2 client) and `POST /api/query` with fetch
// (keep-alive), N sequential calls each after a warm-up. The calls are interleaved one by one
// (REST, SSE, Streamable, 2026-07-28, with the order rotating each turn)
// so drift — GC, the database, other load on the machine — hits all three alike.
// Target: an MCP tool call costs at most 1.5x the REST call.
//
// Soak mode — heap of one long session per transport:
//   node --import tsx bench/mcp.ts --soak 20000 [--sql 'SELECT 1'] [postgres-url]
// Runs dbq in a child process (test/support/mcp-heap-server.ts, --expose-gc), makes that many
// `execute_query` calls in one SSE session and then one Streamable HTTP session, and prints
// the server's heap after GC every 1,000 calls, and once the session is closed.
//
// Throughput mode — calls per second and the server's CPU per call, for each MCP revision:
//   node --import tsx bench/mcp.ts --throughput 3000 [postgres-url]
// Runs dbq in a child process (test/support/mcp-heap-server.ts) and makes that many sequential
// `execute_query SELECT 1` calls per mode — REST, the 2024-11-05 HTTP+SSE session, the
// 2025-11-25 Streamable HTTP session (SDK v1 clients) and the 2026-07-28 stateless revision
// (SDK v2 client) — in three rounds of blocks, the order rotating, so drift hits all alike.
// The server's CPU is read from /proc (user + system), so it is the server's alone.
//
// Schema-size mode — what schema discovery costs a model, in characters:
//   node --import tsx bench/mcp.ts --schema-sizes 200 [postgres-url]
// Creates a temp PostgreSQL database of that many tables (three targets: customers, orders,
// order_items), then prints the size of `tools/list` and of finding and describing the three
// targets with list_tables + describe_table against search_objects.
import { cliActor } from '../src/audit/audit.ts';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { option } from './support/args.ts';
import { loadConfig } from '../src/config.ts';
import { createConnection } from '../src/connections/connections.ts';
import { buildApp } from '../src/server/app.ts';
import { frontDoors } from '../src/server/front-doors.ts';
import { closeServices, createServices } from '../src/services.ts';
import { createApiKey } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { getWorkspace, setWorkspacePlan } from '../src/workspaces/workspaces.ts';
import { connectSoakClient, isolatedFetch, soak, startHeapServer, type SoakClient, type SoakTransport } from '../test/support/mcp-soak.ts';
import { cpuTicks } from '../test/support/processes.ts';

// Positional arguments are what is left once `--name value` options are taken out.
const positional = process.argv.slice(2).filter((arg, i, all) => !arg.startsWith('--') && !all[i - 1]?.startsWith('--'));
const SOAK = Number(option('soak', '0'));
const SCHEMA_TABLES = Number(option('schema-sizes', '0'));
const THROUGHPUT = Number(option('throughput', '0'));
const N = Number((SOAK || SCHEMA_TABLES || THROUGHPUT ? undefined : positional[0]) ?? 2000);
const PG_URL = (SOAK || SCHEMA_TABLES || THROUGHPUT ? positional[0] : positional[1]) ?? 'postgres://postgres@127.0.0.1:5432/test';
const WARMUP = 200;

type Call = () => Promise<void>;

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dbq-bench-mcp-'));
  const config = loadConfig({ DBQ_DATA_DIR: dataDir, DBQ_LOG_LEVEL: 'silent' });
  const svc = await createServices(config);
  // Unlimited plan: the bench measures latency, not the rate limiter.
  await setWorkspacePlan(svc.db, 'default', 'enterprise', cliActor());
  await createUser(svc.db, { workspace: 'default', email: 'bench@dbq.test', role: 'admin' }, cliActor());
  const { secret: key } = await createApiKey(svc.db, { workspace: 'default', email: 'bench@dbq.test', name: 'bench' });
  const ws = await getWorkspace(svc.db, 'default');
  await createConnection(
    { db: svc.db, secretBox: svc.secretBox, sqliteDir: config.sqliteDir },
    ws.id,
    { name: 'pg', url: PG_URL },
    cliActor(),
  );
  const app = await buildApp(svc, frontDoors());
  const origin = await app.listen({ port: 0, host: '127.0.0.1' });
  const headers = { authorization: `Bearer ${key}` };
  const args = { connectionId: 'pg', sql: 'SELECT 1' };

  const sse = new Client({ name: 'bench-sse', version: '1' });
  await sse.connect(new SSEClientTransport(new URL(`${origin}/sse`), { requestInit: { headers }, fetch: isolatedFetch }));
  const streamable = new Client({ name: 'bench-streamable', version: '1' });
  await streamable.connect(new StreamableHTTPClientTransport(new URL(`${origin}/mcp`), { requestInit: { headers }, fetch: isolatedFetch }));
  const modern = await connectSoakClient('modern', origin, key);
  // listTools once, as clients do, so the clients validate structuredContent like in real use.
  await sse.listTools();
  await streamable.listTools();
  await modern.listTools();

  const tool =
    (client: Client): Call =>
    async () => {
      const res = await client.callTool({ name: 'execute_query', arguments: args });
      if (res.isError) throw new Error(JSON.stringify(res.content));
    };
  const modes: [string, Call][] = [
    [
      'REST POST /api/query',
      async () => {
        const res = await fetch(`${origin}/api/query`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify(args),
        });
        if (res.status !== 200) throw new Error(`REST ${res.status}: ${await res.text()}`);
        await res.json();
      },
    ],
    ['MCP over SSE', tool(sse)],
    ['MCP over Streamable HTTP', tool(streamable)],
    ['MCP 2026-07-28 stateless', () => soak(modern, 1, args, 1, async () => {})],
  ];

  for (const [, call] of modes) for (let i = 0; i < WARMUP; i++) await call();
  const samples = new Map<string, number[]>(modes.map(([name]) => [name, []]));
  for (let i = 0; i < N; i++) {
    for (let k = 0; k < modes.length; k++) {
      const [name, call] = modes[(i + k) % modes.length];
      const t0 = performance.now();
      await call();
      samples.get(name)!.push(performance.now() - t0);
    }
  }

  const stats = modes.map(([name]) => {
    const s = [...samples.get(name)!].sort((a, b) => a - b);
    return { name, n: s.length, p50: quantile(s, 0.5), p99: quantile(s, 0.99), mean: s.reduce((a, b) => a + b, 0) / s.length };
  });
  const rest = stats[0];
  const ms = (v: number) => v.toFixed(3).padStart(8);
  console.log(`\nexecute_query SELECT 1 on PostgreSQL, ${N} sequential calls per mode after ${WARMUP} warm-up, Node ${process.version}\n`);
  console.log(
    `${'mode'.padEnd(26)} ${'n'.padStart(5)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'mean ms'.padStart(8)}  p50 x REST  p99 x REST`,
  );
  for (const s of stats) {
    console.log(
      `${s.name.padEnd(26)} ${String(s.n).padStart(5)} ${ms(s.p50)} ${ms(s.p99)} ${ms(s.mean)}  ${(s.p50 / rest.p50).toFixed(2).padStart(9)}x ${(s.p99 / rest.p99).toFixed(2).padStart(10)}x`,
    );
  }
  const worst = Math.max(...stats.slice(1).map((s) => s.p50 / rest.p50));
  console.log(`\ntarget: MCP p50 <= 1.5x REST p50 -> ${worst <= 1.5 ? 'met' : 'NOT met'} (worst ${worst.toFixed(2)}x)`);

  await sse.close();
  await streamable.close();
  await modern.end();
  await app.close();
  await closeServices(svc);
  fs.rmSync(dataDir, { recursive: true, force: true });
}

async function soakMain(): Promise<void> {
  const sql = option('sql', 'SELECT 1');
  const every = 1000;
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
  const growth = (bytes: number) => `${bytes >= 0 ? '+' : ''}${mb(bytes)}`;
  console.log(
    `\nexecute_query ${JSON.stringify(sql)} on PostgreSQL, ${SOAK} calls in one session per transport after ${WARMUP} warm-up, Node ${process.version}`,
  );
  console.log('server heap after GC, MB (growth since the warm-up)\n');
  const server = await startHeapServer(PG_URL);
  try {
    for (const transport of ['sse', 'streamable', 'modern'] as SoakTransport[]) {
      const client = await connectSoakClient(transport, server.origin, server.key);
      await client.listTools();
      const args = { connectionId: 'pg', sql };
      await soak(client, WARMUP, args, WARMUP, async () => {});
      const start = (await server.heap()).heapUsed;
      const t0 = performance.now();
      console.log(
        `${transport.padEnd(10)} ${'calls'.padStart(6)} ${'heap'.padStart(7)} ${'growth'.padStart(7)} ${'KB/call'.padStart(8)} ${'rss'.padStart(7)}`,
      );
      console.log(`${''.padEnd(10)} ${'0'.padStart(6)} ${mb(start).padStart(7)}`);
      let previous = start;
      await soak(client, SOAK, args, every, async (done) => {
        const { heapUsed, rss } = await server.heap();
        const perCall = ((heapUsed - previous) / every / 1024).toFixed(2);
        previous = heapUsed;
        console.log(
          `${''.padEnd(10)} ${String(done).padStart(6)} ${mb(heapUsed).padStart(7)} ${growth(heapUsed - start).padStart(7)} ${perCall.padStart(8)} ${mb(rss).padStart(7)}`,
        );
      });
      const seconds = (performance.now() - t0) / 1000;
      await client.end();
      const { heapUsed } = await server.heap();
      console.log(
        `${''.padEnd(10)} closed ${mb(heapUsed).padStart(7)} ${growth(heapUsed - start).padStart(7)}   (${seconds.toFixed(1)} s, ${(SOAK / seconds).toFixed(0)} calls/s)\n`,
      );
    }
  } finally {
    await server.stop();
  }
}

async function throughputMain(): Promise<void> {
  const rounds = 3;
  const perBlock = Math.ceil(THROUGHPUT / rounds);
  const server = await startHeapServer(PG_URL);
  const args = { connectionId: 'pg', sql: 'SELECT 1' };
  try {
    const rest = async () => {
      const res = await fetch(`${server.origin}/api/query`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' },
        body: JSON.stringify(args),
      });
      if (res.status !== 200) throw new Error(`REST ${res.status}: ${await res.text()}`);
      await res.json();
    };
    const clients: SoakClient[] = [];
    const mcp = async (transport: SoakTransport): Promise<Call> => {
      const client = await connectSoakClient(transport, server.origin, server.key);
      clients.push(client);
      // As clients do: the list first, so they check structuredContent against it.
      await client.listTools();
      return () => soak(client, 1, args, 1, async () => {});
    };
    const modes: [string, Call][] = [['REST POST /api/query', rest]];
    for (const [name, transport] of [
      ['MCP 2024-11-05 HTTP+SSE session', 'sse'],
      ['MCP 2025-11-25 Streamable session', 'streamable'],
      ['MCP 2026-07-28 stateless', 'modern'],
    ] as const) {
      // A dbq from before a revision was served (run from an older checkout to compare) skips it.
      const call = await mcp(transport).catch((err: unknown) => console.log(`${name}: not served (${String(err).slice(0, 80)})`));
      if (call) modes.push([name, call]);
    }
    for (const [, call] of modes) for (let i = 0; i < WARMUP; i++) await call();
    const totals = new Map(modes.map(([name]) => [name, { calls: 0, ms: 0, ticks: 0 }]));
    for (let round = 0; round < rounds; round++) {
      for (let k = 0; k < modes.length; k++) {
        const [name, call] = modes[(round + k) % modes.length];
        const ticks0 = cpuTicks(server.pid);
        const t0 = performance.now();
        for (let i = 0; i < perBlock; i++) await call();
        const total = totals.get(name)!;
        total.ms += performance.now() - t0;
        total.ticks += cpuTicks(server.pid) - ticks0;
        total.calls += perBlock;
      }
    }
    console.log(
      `\nexecute_query SELECT 1 on PostgreSQL, ${perBlock * rounds} sequential calls per mode (${rounds} rounds, after ${WARMUP} warm-up), server in its own process, Node ${process.version}\n`,
    );
    console.log(`${'mode'.padEnd(36)} ${'calls/s'.padStart(8)} ${'server CPU µs/call'.padStart(19)}  ${'x REST CPU'.padStart(10)}`);
    const restCpu = (() => {
      const t = totals.get(modes[0][0])!;
      return (t.ticks * 10_000) / t.calls;
    })();
    for (const [name] of modes) {
      const t = totals.get(name)!;
      const cpu = (t.ticks * 10_000) / t.calls;
      console.log(
        `${name.padEnd(36)} ${((t.calls / t.ms) * 1000).toFixed(0).padStart(8)} ${cpu.toFixed(0).padStart(19)}  ${(cpu / restCpu).toFixed(2).padStart(9)}x`,
      );
    }
    for (const client of clients) await client.end();
  } finally {
    await server.stop();
  }
}

async function schemaSizesMain(): Promise<void> {
  const { default: pg } = await import('pg');
  const server = new URL(PG_URL);
  const dbName = `dbq_bench_schema_${process.pid}`;
  const adminUrl = Object.assign(new URL(server.href), { pathname: '/postgres' }).href;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const dbUrl = Object.assign(new URL(server.href), { pathname: `/${dbName}` }).href;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dbq-bench-schema-'));
  try {
    const db = new pg.Client({ connectionString: dbUrl });
    await db.connect();
    const areas = ['sales', 'billing', 'hr', 'inventory', 'marketing', 'support', 'finance', 'shipping', 'crm', 'analytics', 'legal', 'it'];
    const nouns = [
      'events',
      'accounts',
      'invoices',
      'payments',
      'contacts',
      'tickets',
      'campaigns',
      'shipments',
      'products',
      'employees',
      'audit',
      'ledger',
      'budgets',
      'leads',
      'returns',
      'stock',
      'warehouses',
      'regions',
      'tasks',
      'notes',
    ];
    const fillers = areas.flatMap((a) => nouns.map((n) => `${a}_${n}`)).slice(0, SCHEMA_TABLES - 3);
    const ddl = [
      'CREATE TABLE customers (id bigserial PRIMARY KEY, name text NOT NULL, email varchar(200) UNIQUE, country char(2), created_at timestamptz NOT NULL DEFAULT now())',
      'CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id bigint NOT NULL REFERENCES customers(id), status varchar(20) NOT NULL, total numeric(12,2), placed_at timestamptz NOT NULL DEFAULT now())',
      'CREATE TABLE order_items (id bigserial PRIMARY KEY, order_id bigint NOT NULL REFERENCES orders(id), sku varchar(40) NOT NULL, qty integer NOT NULL, price numeric(12,2) NOT NULL)',
      ...fillers.map(
        (t) =>
          `CREATE TABLE ${t} (id bigserial PRIMARY KEY, name text, status varchar(20), amount numeric(12,2), owner_id integer, notes text, created_at timestamptz, updated_at timestamptz)`,
      ),
    ];
    await db.query(ddl.join(';\n'));
    await db.end();

    const config = loadConfig({ DBQ_DATA_DIR: dataDir, DBQ_LOG_LEVEL: 'silent' });
    const svc = await createServices(config);
    await setWorkspacePlan(svc.db, 'default', 'enterprise', cliActor());
    await createUser(svc.db, { workspace: 'default', email: 'bench@dbq.test', role: 'admin' }, cliActor());
    const { secret: key } = await createApiKey(svc.db, { workspace: 'default', email: 'bench@dbq.test', name: 'bench' });
    const ws = await getWorkspace(svc.db, 'default');
    await createConnection(
      { db: svc.db, secretBox: svc.secretBox, sqliteDir: config.sqliteDir },
      ws.id,
      { name: 'big', url: dbUrl },
      cliActor(),
    );
    const app = await buildApp(svc, frontDoors());
    const origin = await app.listen({ port: 0, host: '127.0.0.1' });
    const client = new Client({ name: 'bench-schema', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }),
    );

    // "wire": the JSON-RPC result as sent; "text": the text content a client hands the model.
    type Size = { wire: number; text: number };
    const measure = async (calls: [string, Record<string, unknown>][]): Promise<Size & { calls: number }> => {
      const size = { wire: 0, text: 0, calls: calls.length };
      for (const [name, args] of calls) {
        const res = await client.callTool({ name, arguments: { connectionId: 'big', ...args } });
        if (res.isError) throw new Error(JSON.stringify(res.content));
        size.wire += JSON.stringify(res).length;
        size.text += (res.content as { text: string }[]).reduce((n, c) => n + (c.text?.length ?? 0), 0);
      }
      return size;
    };
    const { tools } = await client.listTools();
    const listChars = JSON.stringify({ tools }).length;
    const searchToolChars = JSON.stringify(tools.find((t) => t.name === 'search_objects')).length;
    const describe = (table: string): [string, Record<string, unknown>] => ['describe_table', { table }];
    const rows: [string, Size & { calls: number }][] = [
      [
        'list_tables + 3x describe_table',
        await measure([['list_tables', {}], describe('customers'), describe('orders'), describe('order_items')]),
      ],
      [
        '2x search_objects names + 3x describe_table',
        await measure([
          ['search_objects', { pattern: 'customer' }],
          ['search_objects', { pattern: 'order' }],
          describe('customers'),
          describe('orders'),
          describe('order_items'),
        ]),
      ],
      [
        '2x search_objects detail=full',
        await measure([
          ['search_objects', { pattern: 'customers', kind: 'table', detail: 'full' }],
          ['search_objects', { pattern: 'order', kind: 'table', detail: 'full' }],
        ]),
      ],
      ['search_objects names only ("order")', await measure([['search_objects', { pattern: 'order' }]])],
      ['list_tables alone', await measure([['list_tables', {}]])],
    ];
    console.log(
      `\nSchema discovery on PostgreSQL, ${SCHEMA_TABLES} tables (targets customers, orders, order_items), characters, Node ${process.version}\n`,
    );
    console.log(`tools/list: ${listChars} chars (${tools.length} tools; search_objects' entry ${searchToolChars})\n`);
    console.log(`${'walk'.padEnd(46)} ${'calls'.padStart(5)} ${'wire chars'.padStart(11)} ${'text chars'.padStart(11)}  x first`);
    const base = rows[0][1].text;
    for (const [name, s] of rows) {
      console.log(
        `${name.padEnd(46)} ${String(s.calls).padStart(5)} ${String(s.wire).padStart(11)} ${String(s.text).padStart(11)}  ${(s.text / base).toFixed(3)}`,
      );
    }
    await client.close();
    await app.close();
    await closeServices(svc);
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

(SCHEMA_TABLES ? schemaSizesMain() : SOAK ? soakMain() : THROUGHPUT ? throughputMain() : main()).catch((err) => {
  console.error(err);
  process.exit(1);
});
