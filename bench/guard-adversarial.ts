// bench/guard-adversarial: what adversarial 100 KB statements cost the guard.
// For each input and dialect: the guard's wall time (classifyStatement: long text goes to the
// worker thread), the longest the event loop was held meanwhile (a 1 ms ticker), and the
// baseline measured in the same run — the dialect's parser alone, on the event loop, on the
// same text (what the guard would cost had it stayed in-thread). Targets: event loop < 50 ms.
//
// Then every door of a listening dbq in this process: curated tool
// `pattern`s that backtracked for 85–114 s (`^(a+)+$`, `^(\w+\s?)*$`, …) sent as a tools-only
// key's values, and 1 MB JSON bodies (mostly `[`, deep objects, wide arrays) sent before any
// key is checked where the door allows. For each door and input: the answer, its wall time and
// the event loop's longest hold (perf_hooks.monitorEventLoopDelay, worst of three requests),
// beside the same door's trivial request measured in the same run. Target: ~10 ms.
// Usage: node --import tsx bench/guard-adversarial.ts [--doors-only]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import Database from 'better-sqlite3';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadModule, parseSync } from 'libpg-query';
import { cliActor } from '../src/audit/audit.ts';
import { loadConfig } from '../src/config.ts';
import { createConnection } from '../src/connections/connections.ts';
import { ENGINE_NAMES, type EngineName } from '../src/engines/engine.ts';
import { buildApp } from '../src/server/app.ts';
import { frontDoors } from '../src/server/front-doors.ts';
import { closeServices, createServices } from '../src/services.ts';
import { classifyStatement } from '../src/guard/guard.ts';
import { createApiKey } from '../src/workspaces/api-keys.ts';
import { createUser } from '../src/workspaces/users.ts';
import { getWorkspace, setWorkspacePlan } from '../src/workspaces/workspaces.ts';
import { loopHeldDuring } from './support/loop-hold.ts';

const SIZE = 99_000;
const INPUTS: Record<string, string> = {
  'empty statements (30k `;`)': 'SELECT 1;' + "'';".repeat(Math.floor((SIZE - 9) / 3)),
  'deep parentheses (30k)': 'SELECT ' + '('.repeat(30_000) + '1' + ')'.repeat(30_000),
  '20k-item IN list': 'SELECT 1 WHERE 1 IN (' + Array.from({ length: 20_000 }, (_, i) => i % 1000).join(',') + ')',
  'long identifier': 'SELECT ' + 'a'.repeat(SIZE),
  'long comment': 'SELECT 1 /*' + 'x'.repeat(SIZE) + '*/',
  'long string': "SELECT '" + 'x'.repeat(SIZE) + "'",
  '9k function calls': 'SELECT ' + Array.from({ length: 9_000 }, () => 'lower(a)').join(','),
};

const requireParser = createRequire(import.meta.url);
type Astify = { astify(text: string, opts: { database: string }): unknown };

function rawParse(engine: EngineName, sql: string): void {
  try {
    if (engine === 'postgres') parseSync(sql);
    else {
      const { Parser } = requireParser(`node-sql-parser/build/${engine === 'mysql' ? 'mysql' : 'sqlite'}`) as { Parser: new () => Astify };
      new Parser().astify(sql, { database: engine === 'mysql' ? 'mysql' : 'sqlite' });
    }
  } catch {
    // A parse error is a result too: the time is what counts.
  }
}

const DOORS_ONLY = process.argv.includes('--doors-only');
await loadModule();
for (const engine of ENGINE_NAMES) await classifyStatement(engine, `SELECT ${'1 + '.repeat(5_000)}1`);
const rows: string[] = [];
for (const engine of DOORS_ONLY ? [] : ENGINE_NAMES) {
  for (const [name, sql] of Object.entries(INPUTS)) {
    let wall = 0;
    const loop = await loopHeldDuring(async () => {
      const started = performance.now();
      await classifyStatement(engine, sql + ' '.repeat(Math.floor(Math.random() * 8)));
      wall = performance.now() - started;
    });
    const started = performance.now();
    rawParse(engine, sql);
    const baseline = performance.now() - started;
    rows.push(`| ${engine} | ${name} | ${sql.length} | ${wall.toFixed(1)} | ${loop.toFixed(1)} | ${baseline.toFixed(1)} |`);
  }
}
if (!DOORS_ONLY) {
  process.stdout.write(
    [
      'guard-adversarial: ms per statement (the event-loop column is the target: < 50 ms)',
      '',
      '| dialect | input | chars | guard wall | event loop held | baseline: parser alone, in-thread |',
      '|---|---|---:|---:|---:|---:|',
      ...rows,
      '',
    ].join('\n'),
  );
}

// ---- Doors: patterns and JSON bodies against a listening dbq ----

const EVIL_PATTERNS: { name: string; pattern: string; value: string }[] = [
  { name: 'nested_plus', pattern: '^(a+)+$', value: 'a'.repeat(50_000) + '!' },
  { name: 'words', pattern: '^(\\w+\\s?)*$', value: 'word '.repeat(20_000) + '!' },
  { name: 'overlap', pattern: '(x+x+)+y', value: 'x'.repeat(100_000) },
  { name: 'alternation', pattern: '^(a|aa)+$', value: 'a'.repeat(30_000) + 'b' },
];
const MIB = 1024 * 1024;
const JSON_BODIES: { name: string; body: string }[] = [
  { name: '1 MB of `[`', body: '['.repeat(1_000_000) },
  { name: '1 MB of `{"a":`', body: '{"a":'.repeat(200_000) },
  {
    name: '1 MiB of `0,`, 60 deep (524,000 values)',
    body:
      '['.repeat(60) +
      Array(MIB / 2 - 200)
        .fill('0')
        .join(',') +
      ']'.repeat(60),
  },
  {
    name: '1 MiB of `{}` and one escaped key (was walked)',
    body:
      '[' +
      Array(Math.floor(MIB / 3) - 20)
        .fill('{}')
        .join(',') +
      ',{"\\u0061":1}]',
  },
  {
    name: '49,000 objects, 60 deep (under both limits: parsed)',
    body: '['.repeat(60) + Array(49_000).fill('{}').join(',') + ']'.repeat(60),
  },
  { name: '1 MiB string (parsed)', body: JSON.stringify({ connectionId: 'lite', sql: 'x'.repeat(MIB - 60) }) },
];

interface DoorRow {
  door: string;
  input: string;
  chars: number;
  answer: string;
  wallMs: number;
  heldMs: number;
  baselineMs: number;
}

/** The event loop's longest hold while `work` runs, in ms: the larger of what
 * monitorEventLoopDelay saw (the hold plus its 1 ms resolution) and a 1 ms ticker's longest gap. */
async function loopHold(work: () => Promise<unknown>): Promise<{ heldMs: number; wallMs: number; answer: unknown }> {
  let answer: unknown;
  let wallMs = 0;
  const heldMs = await loopHeldDuring(
    async () => {
      const started = performance.now();
      answer = await work();
      wallMs = performance.now() - started;
    },
    { histogramResolutionMs: 1 },
  );
  return { heldMs, wallMs, answer };
}

/** Worst of three. */
async function worstOf(work: () => Promise<string>): Promise<{ heldMs: number; wallMs: number; answer: string }> {
  let worst = { heldMs: 0, wallMs: 0, answer: '' };
  for (let i = 0; i < 3; i++) {
    const r = await loopHold(work);
    if (r.heldMs >= worst.heldMs) worst = { heldMs: r.heldMs, wallMs: r.wallMs, answer: String(r.answer) };
  }
  return worst;
}

async function doors(): Promise<DoorRow[]> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dbq-bench-doors-'));
  const config = loadConfig({ DBQ_DATA_DIR: dataDir, DBQ_LOG_LEVEL: 'silent' });
  const svc = await createServices(config);
  const out: DoorRow[] = [];
  const clients: Client[] = [];
  let app: Awaited<ReturnType<typeof buildApp>> | undefined;
  try {
    await setWorkspacePlan(svc.db, 'default', 'enterprise', cliActor());
    await createUser(svc.db, { workspace: 'default', email: 'admin@bench.test', role: 'admin', password: 'correct horse' }, cliActor());
    await createUser(svc.db, { workspace: 'default', email: 'agent@bench.test', role: 'read_only' }, cliActor());
    const admin = (await createApiKey(svc.db, { workspace: 'default', email: 'admin@bench.test', name: 'admin' })).secret;
    const agent = (
      await createApiKey(svc.db, { workspace: 'default', email: 'agent@bench.test', name: 'agent', scope: { toolsOnly: true } })
    ).secret;
    fs.mkdirSync(path.join(config.sqliteDir, 'default'), { recursive: true });
    new Database(path.join(config.sqliteDir, 'default', 'bench.db')).close();
    const ws = await getWorkspace(svc.db, 'default');
    await createConnection(
      { db: svc.db, secretBox: svc.secretBox, sqliteDir: config.sqliteDir },
      ws.id,
      { name: 'lite', url: 'sqlite:bench.db' },
      cliActor(),
    );
    app = await buildApp(svc, frontDoors());
    const origin = await app.listen({ port: 0, host: '127.0.0.1' });

    const post = async (url: string, body: string, headers: Record<string, string> = {}): Promise<string> => {
      const res = await fetch(`${origin}${url}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body,
      });
      const text = await res.text();
      let code = '';
      try {
        code = (JSON.parse(text) as { code?: string }).code ?? '';
      } catch {
        // not an envelope
      }
      return `${res.status}${code ? ` ${code}` : ''}`;
    };
    for (const evil of [...EVIL_PATTERNS, { name: 'trivial', pattern: '^[a-z]+$', value: 'abc' }]) {
      const res = await post(
        '/api/tools',
        JSON.stringify({
          name: evil.name,
          description: evil.pattern,
          connectionId: 'lite',
          sql: 'SELECT length(:s) AS n',
          parameters: [{ name: 's', type: 'string', pattern: evil.pattern, required: true }],
        }),
        { authorization: `Bearer ${admin}` },
      );
      if (!res.startsWith('201')) throw new Error(`defining ${evil.name}: ${res}`);
    }

    // Web: an admin's browser session (cookie + CSRF token).
    const login = await fetch(`${origin}/ui/api/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'admin@bench.test', password: 'correct horse' }),
    });
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0];
    const csrf = ((await login.json()) as { data: { csrfToken: string } }).data.csrfToken;
    const web = { cookie, 'x-csrf-token': csrf };

    const connect = async (transport: 'sse' | 'streamable'): Promise<Client> => {
      const client = new Client({ name: `bench-${transport}`, version: '1' });
      const requestInit = { headers: { authorization: `Bearer ${agent}` } };
      await client.connect(
        transport === 'sse'
          ? new SSEClientTransport(new URL(`${origin}/sse`), { requestInit })
          : new StreamableHTTPClientTransport(new URL(`${origin}/mcp`), { requestInit }),
      );
      clients.push(client);
      return client;
    };
    const mcp = { sse: await connect('sse'), streamable: await connect('streamable') };
    const call = (client: Client, name: string, value: string) => async () => {
      const res = await client.callTool({ name, arguments: { s: value } });
      return res.isError ? 'tool error' : 'ok';
    };
    const run = (headers: Record<string, string>, base: string) => (name: string, value: string) => () =>
      post(`${base}/${name}/run`, JSON.stringify({ params: { s: value } }), headers);

    // Patterns, per door; the baseline is the same door running the trivial tool.
    const patternDoors: [string, (name: string, value: string) => () => Promise<string>][] = [
      ['REST /api/tools/{name}/run (tools-only key)', run({ authorization: `Bearer ${agent}` }, '/api/tools')],
      ['MCP Streamable HTTP tools/call (tools-only key)', (n, v) => call(mcp.streamable, n, v)],
      ['MCP HTTP+SSE tools/call (tools-only key)', (n, v) => call(mcp.sse, n, v)],
      ['web /ui/api/tools/{name}/run (session)', run(web, '/ui/api/tools')],
    ];
    for (const [door, request] of patternDoors) {
      for (let i = 0; i < 5; i++) await request('trivial', 'abc')(); // warm
      const baseline = await worstOf(request('trivial', 'abc'));
      for (const evil of EVIL_PATTERNS) {
        const r = await worstOf(request(evil.name, evil.value));
        out.push({
          door,
          input: `pattern ${evil.pattern}`,
          chars: evil.value.length,
          answer: r.answer,
          wallMs: r.wallMs,
          heldMs: r.heldMs,
          baselineMs: baseline.heldMs,
        });
      }
    }

    // JSON bodies, per door, with no key where the door reads the body before its key (MCP,
    // web sign-in); REST authenticates before reading the body, so it gets a key. The baseline
    // is the same door's smallest request.
    const jsonDoors: [string, string, Record<string, string>, string][] = [
      [
        'REST POST /api/query (key)',
        '/api/query',
        { authorization: `Bearer ${admin}` },
        JSON.stringify({ connectionId: 'lite', sql: 'SELECT 1' }),
      ],
      ['MCP POST /mcp (no key)', '/mcp', {}, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' })],
      [
        'MCP POST /messages (no key)',
        '/messages?sessionId=00000000-0000-4000-8000-000000000000',
        {},
        JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      ],
      ['web POST /ui/api/login (no session)', '/ui/api/login', {}, JSON.stringify({ email: 'nobody@bench.test', password: 'x' })],
    ];
    for (const [door, url, headers, trivial] of jsonDoors) {
      for (let i = 0; i < 5; i++) await post(url, trivial, headers);
      const baseline = await worstOf(() => post(url, trivial, headers));
      for (const { name, body } of JSON_BODIES) {
        const r = await worstOf(() => post(url, body, headers));
        out.push({
          door,
          input: `JSON ${name}`,
          chars: body.length,
          answer: r.answer,
          wallMs: r.wallMs,
          heldMs: r.heldMs,
          baselineMs: baseline.heldMs,
        });
      }
    }
  } finally {
    // Closing may wait on unref'd timers (the history writer's flush); with nothing else left,
    // the process would end on the unsettled top-level await before the table is printed.
    const keepAlive = setInterval(() => undefined, 1_000);
    for (const c of clients) await c.close().catch(() => undefined);
    await app?.close();
    await closeServices(svc);
    clearInterval(keepAlive);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  return out;
}

const doorRows = await doors();
process.stdout.write(
  [
    "guard-adversarial doors: the event loop's worst hold per request (worst of three), ms; target ~10 ms",
    '',
    '| door | input | chars | answer | wall | event loop held | baseline: trivial request, same door |',
    '|---|---|---:|---|---:|---:|---:|',
    ...doorRows.map(
      (r) =>
        `| ${r.door} | ${r.input} | ${r.chars} | ${r.answer} | ${r.wallMs.toFixed(1)} | ${r.heldMs.toFixed(1)} | ${r.baselineMs.toFixed(1)} |`,
    ),
    '',
  ].join('\n'),
);
