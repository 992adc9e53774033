// JSON bodies of 1 MB, mostly `[`, were once parsed (120–190 ms of JSON.parse each)
// and walked before any key was checked on the MCP doors, whose authentication runs in the
// handler: four such requests held /healthz 0.5–0.75 s. The body parser now scans the text once
// before JSON.parse and refuses nesting deeper than MAX_JSON_DEPTH at the first bracket too
// many, on every door: REST, both MCP transports, the web app's JSON endpoints. Proven on a
// listening server in this process, with the event loop's longest hold measured in it and
// /healthz polled over HTTP meanwhile.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, MAX_JSON_VALUES, scanJsonText } from '../src/server/json-body.ts';
import { PARAM_OBJECT_DEPTH } from '../src/query/run.ts';
import { heldBesideHealthz } from './support/loop-hold.ts';
import { createMcpHarness, type McpHarness } from './support/mcp-harness.ts';

// Generous for two shared cores under other test files' load (a loaded run descheduled this
// process for 50–80 ms at a time), yet below the 120–190 ms one deep body cost on an idle one.
const HOLD_LIMIT_MS = 100;
const BRACKETS = '['.repeat(1_000_000);

let m: McpHarness;

beforeAll(async () => {
  m = await createMcpHarness();
}, 60_000);
afterAll(async () => {
  await m?.close();
});

async function post(path: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(`${m.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body,
  });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

const held = (work: () => Promise<unknown>) => heldBesideHealthz(m.origin, HOLD_LIMIT_MS, work);

function expectTooDeep(res: { status: number; body: any }): void {
  expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(400);
  expect(res.body).toMatchObject({ success: false, code: 'invalid_request', details: { maxDepth: MAX_JSON_DEPTH } });
  expect(res.body.error).toMatch(/^Invalid request: the JSON body nests deeper than 64 levels/);
}

describe('1 MB of `[` is refused at the 65th bracket, on every door', () => {
  it('REST with a key: 400 before JSON.parse; without one: 401 (authentication runs before the body is read)', async () => {
    let answer: { status: number; body: any } | undefined;
    const { loopMs, healthMs } = await held(async () => {
      answer = await post('/api/query', BRACKETS, { authorization: `Bearer ${m.h.readerKey}` });
    });
    expectTooDeep(answer!);
    expect(loopMs).toBeLessThan(HOLD_LIMIT_MS);
    expect(healthMs).toBeLessThan(250);
    expect((await post('/api/query', BRACKETS)).status).toBe(401);
  }, 60_000);

  it('MCP Streamable HTTP and SSE messages: 400 before authentication, no key needed to be refused', async () => {
    const { loopMs } = await held(async () => {
      expectTooDeep(await post('/mcp', BRACKETS));
      expectTooDeep(await post('/mcp', BRACKETS, { authorization: `Bearer ${m.h.readerKey}` }));
      expectTooDeep(await post('/messages?sessionId=00000000-0000-4000-8000-000000000000', BRACKETS));
      expectTooDeep(await post('/w/default/mcp', BRACKETS));
    });
    expect(loopMs).toBeLessThan(HOLD_LIMIT_MS);
  }, 60_000);

  it('the web app JSON endpoints (sign-in, no session needed) the same', async () => {
    const res = await m.h.app.inject({
      method: 'POST',
      url: '/ui/api/login',
      headers: { 'content-type': 'application/json' },
      payload: BRACKETS,
    });
    expectTooDeep({ status: res.statusCode, body: JSON.parse(res.body) });
  });

  it('four at once, from nobody, leave /healthz answering', async () => {
    const { loopMs, healthMs } = await held(async () => {
      const answers = await Promise.all([
        post('/mcp', BRACKETS),
        post('/mcp', BRACKETS),
        post('/mcp', BRACKETS),
        post('/messages?sessionId=x', BRACKETS),
      ]);
      for (const a of answers) expectTooDeep(a);
    });
    expect(loopMs).toBeLessThan(HOLD_LIMIT_MS);
    expect(healthMs).toBeLessThan(250);
  }, 60_000);

  it('nested objects, and brackets inside strings do not count', async () => {
    expectTooDeep(await post('/mcp', '{"a":'.repeat(100_000)));
    // 90,000 brackets inside a string are text: this is a valid, shallow body.
    const quoted = await post('/api/query', JSON.stringify({ connectionId: 'lite', sql: `SELECT length('${'['.repeat(90_000)}') AS n` }), {
      authorization: `Bearer ${m.h.readerKey}`,
    });
    expect(quoted.status, JSON.stringify(quoted.body).slice(0, 300)).toBe(200);
    expect(quoted.body.data.rows).toEqual([[90_000]]);
  }, 60_000);
});

describe(`more than ${MAX_JSON_VALUES} values are refused before JSON.parse`, () => {
  const M = 1024 * 1024;
  it('1 MiB of `{}` (350,000 objects: 250–800 ms of JSON.parse and GC) to /mcp with no key: 400 at once', async () => {
    const objects =
      '[' +
      Array(Math.floor(M / 3) - 10)
        .fill('{}')
        .join(',') +
      ']';
    let answer: { status: number; body: any } | undefined;
    const { loopMs, healthMs } = await held(async () => {
      answer = await post('/mcp', objects);
    });
    expect(answer!.status).toBe(400);
    expect(answer!.body).toMatchObject({ code: 'invalid_request', details: { maxValues: MAX_JSON_VALUES } });
    // A top-level array: no field to name.
    expect(answer!.body.error).toBe(`Invalid request: the JSON body holds more than ${MAX_JSON_VALUES} values`);
    expect(loopMs).toBeLessThan(HOLD_LIMIT_MS);
    expect(healthMs).toBeLessThan(250);
  }, 60_000);

  it('a wide query parameter is named; 45,000 array elements (a PostgreSQL array parameter) still bind', async () => {
    const wide = await post(
      '/api/query',
      JSON.stringify({ connectionId: 'pg', sql: 'SELECT cardinality($1::int[]) AS n', params: [Array(60_000).fill(1)] }),
      { authorization: `Bearer ${m.h.adminKey}` },
    );
    expect(wide.status).toBe(400);
    expect(wide.body.details.field).toBe('params');
    const ok = await post(
      '/api/query',
      JSON.stringify({ connectionId: 'pg', sql: 'SELECT cardinality($1::int[]) AS n', params: [Array(45_000).fill(1)] }),
      { authorization: `Bearer ${m.h.adminKey}` },
    );
    expect(ok.status, JSON.stringify(ok.body).slice(0, 300)).toBe(200);
    expect(ok.body.data.rows).toEqual([[45_000]]);
  }, 60_000);
});

describe('depth up to the limit is accepted where a route takes arbitrary JSON (query params)', () => {
  function nestedObject(levels: number): unknown {
    let v: unknown = 1;
    for (let i = 0; i < levels; i++) v = { a: v };
    return v;
  }

  it(`an object parameter ${PARAM_OBJECT_DEPTH} levels deep is bound and comes back`, async () => {
    const deep = nestedObject(PARAM_OBJECT_DEPTH);
    const res = await post('/api/query', JSON.stringify({ connectionId: 'pg', sql: 'SELECT $1::jsonb AS v', params: [deep] }), {
      authorization: `Bearer ${m.h.adminKey}`,
    });
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
    expect(res.body.data.rows[0][0]).toEqual(deep);
  });

  it(`a body exactly ${MAX_JSON_DEPTH} deep passes the parser (the params check answers); ${MAX_JSON_DEPTH + 1} does not`, async () => {
    // body { params: [ x ] }: two levels, then x.
    const at = (levels: number) => JSON.stringify({ connectionId: 'pg', sql: 'SELECT $1::jsonb AS v', params: [nestedObject(levels - 2)] });
    const limit = await post('/api/query', at(MAX_JSON_DEPTH), { authorization: `Bearer ${m.h.readerKey}` });
    expect(limit.status).toBe(400);
    expect(limit.body.error).toContain(`nests deeper than ${PARAM_OBJECT_DEPTH} levels`);
    expect(limit.body.details.field).toMatch(/^params\[0\]\.a\.a/);
    const over = await post('/api/query', at(MAX_JSON_DEPTH + 1), { authorization: `Bearer ${m.h.readerKey}` });
    expectTooDeep(over);
    expect(over.body.details.field).toBe('params[0]');
  });

  it('MCP at depth 30 reaches the tool (JSON-RPC, arguments, params, value)', async () => {
    const client = await m.connect('streamable', m.h.adminKey);
    const deep = nestedObject(30);
    const result = await client.callTool({
      name: 'execute_query',
      arguments: { connectionId: 'pg', sql: 'SELECT $1::jsonb AS v', params: [deep] },
    });
    expect(result.isError, JSON.stringify(result.content).slice(0, 300)).toBeFalsy();
  });
});

describe('the scan', () => {
  it('finds forbidden keys, escaped ones too, with the path, without walking the parsed value', () => {
    expect(scanJsonText('{"params":[{"__proto__":{"x":1}}]}')).toEqual({
      kind: 'forbidden',
      key: '__proto__',
      path: 'params[0].__proto__',
    });
    expect(scanJsonText('[1,{"\\u005f\\u005fproto\\u005f\\u005f":1}]')).toEqual({
      kind: 'forbidden',
      key: '__proto__',
      path: '[1].__proto__',
    });
    expect(scanJsonText('{"a":{"constructor":{"b":1,"prototype":{}}}}')).toEqual({
      kind: 'forbidden',
      key: 'constructor.prototype',
      path: 'a.constructor.prototype',
    });
    expect(scanJsonText('{"constructor":1,"prototype":{}}')).toEqual({ kind: 'ok' });
    expect(scanJsonText('{"s":"__proto__","t":"a\\"{[\\\\","__proto":{"constructor":[{"prototype":1}]}}')).toEqual({ kind: 'ok' });
  });

  it('is linear: 1 MiB bodies of every shape scan in well under the time JSON.parse takes', () => {
    const M = 1024 * 1024;
    const shapes = {
      'escaped quotes': JSON.stringify({ sql: '"'.repeat(M / 2 - 20) }),
      'one backslash at the end, many strings':
        '[' +
        Array(M / 8)
          .fill('"ab"')
          .join(',') +
        ',"\\\\"]',
      'escaped keys': '{' + Array.from({ length: 60_000 }, (_, i) => `"\\u0041${i}":1`).join(',') + '}',
      'wide, 60 deep':
        '['.repeat(60) +
        Array(M / 2 - 200)
          .fill('0')
          .join(',') +
        ']'.repeat(60),
    };
    for (const [name, text] of Object.entries(shapes)) {
      // No value limit here: what is timed is the scan over the whole text.
      scanJsonText(text, MAX_JSON_DEPTH, Infinity);
      const times = [0, 1, 2].map(() => {
        const started = performance.now();
        expect(scanJsonText(text, MAX_JSON_DEPTH, Infinity).kind, name).toBe('ok');
        return performance.now() - started;
      });
      // Alone ~3–15 ms on these two cores; quadratic behaviour would take seconds.
      expect(Math.min(...times), name).toBeLessThan(150);
    }
  });
});
