// POST /api/query/export, small results: the three formats byte for byte (RFC 4180 quoting,
// NULL vs '', JSON values), the same values as /query on every engine, the same permission,
// guard and history rules, errors before the first byte as envelopes and after it as an
// NDJSON error line or a cut stream, maxRows and the DBQ_EXPORT_MAX_ROWS/BYTES caps.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportInputSchema, openExport } from '../src/query/export.ts';
import { authenticateKey } from '../src/workspaces/api-keys.ts';
import { readCsv } from './support/export-client.ts';
import { createHarness, MYSQL_URL, PG_URL, workspaceSqliteDir, type Harness } from './support/harness.ts';

let h: Harness;
let base: string;

beforeAll(async () => {
  h = await createHarness();
  fs.writeFileSync(path.join(workspaceSqliteDir(h, 'default'), 'fmt.db'), '');
  for (const [name, body] of [
    ['pg', { url: PG_URL }],
    ['my', { url: MYSQL_URL }],
    ['lite', { engine: 'sqlite', database: 'fmt.db' }],
  ] as const) {
    const res = await h.call('POST', '/api/connections', h.adminKey, { name, ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  base = await h.app.listen({ host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await h?.close();
});

async function exportRaw(key: string, body: Record<string, unknown>, url = '/api/query/export') {
  const res = await h.app.inject({
    method: 'POST',
    url,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
  return { status: res.statusCode, headers: res.headers, text: res.body };
}

function ndjson(text: string): any[] {
  return text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l));
}

async function csvRecords(text: string): Promise<{ fields: string[]; quoted: boolean[] }[]> {
  const out: { fields: string[]; quoted: boolean[] }[] = [];
  const { endedCleanly } = await readCsv(new Response(text).body!, (fields, quoted) => out.push({ fields, quoted }));
  expect(endedCleanly).toBe(true);
  return out;
}

async function history(marker: string): Promise<any[]> {
  return (await h.call('GET', `/api/query/history?search=${encodeURIComponent(marker)}`, h.adminKey)).body.data.entries;
}

const MIXED = {
  pg: `SELECT 1 AS i, 9007199254740993::int8 AS big, 'a,b' AS comma, 'say "hi"' AS quote, E'line1\\r\\nline2' AS nl, '' AS empty,
       NULL::text AS nul, true AS b, '{"k":[1,2]}'::jsonb AS j, ARRAY[1,2] AS arr, '2024-01-02'::date AS d, 1.5::numeric AS n`,
  my: `SELECT 1 AS i, CAST(9007199254740993 AS SIGNED) AS big, 'a,b' AS comma, 'say "hi"' AS quote, 'line1\\r\\nline2' AS nl, '' AS empty,
       NULL AS nul, TRUE AS b, JSON_OBJECT('k', JSON_ARRAY(1, 2)) AS j, NULL AS arr, DATE '2024-01-02' AS d, CAST(1.5 AS DECIMAL(4,1)) AS n`,
  lite: `SELECT 1 AS i, 9007199254740993 AS big, 'a,b' AS comma, 'say "hi"' AS quote, 'line1' || char(13, 10) || 'line2' AS nl, '' AS empty,
       NULL AS nul, 1 AS b, '{"k":[1,2]}' AS j, NULL AS arr, '2024-01-02' AS d, 1.5 AS n`,
};

describe('formats', () => {
  for (const conn of ['pg', 'my', 'lite'] as const) {
    it(`${conn}: NDJSON and JSON carry exactly the values and columns of /query`, async () => {
      const sql = MIXED[conn];
      const q = (await h.call('POST', '/api/query', h.readerKey, { connectionId: conn, sql })).body.data;
      const nd = await exportRaw(h.readerKey, { connectionId: conn, sql, format: 'ndjson' });
      expect(nd.status, nd.text).toBe(200);
      expect(nd.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
      expect(nd.headers['content-disposition']).toMatch(/^attachment; filename="q_[0-9a-z]+\.ndjson"$/);
      expect(nd.text.endsWith('\n')).toBe(true);
      expect(ndjson(nd.text)).toEqual([{ columns: q.columns }, ...q.rows]);
      const js = await exportRaw(h.readerKey, { connectionId: conn, sql, format: 'json' });
      expect(js.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(JSON.parse(js.text)).toEqual({ columns: q.columns, rows: q.rows });
    });
  }

  it("CSV is RFC 4180: header row, CRLF, quoting only where needed, NULL empty and '' quoted", async () => {
    const res = await exportRaw(h.readerKey, { connectionId: 'pg', sql: MIXED.pg, format: 'csv' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8; header=present');
    expect(res.text).toBe(
      'i,big,comma,quote,nl,empty,nul,b,j,arr,d,n\r\n' +
        '1,9007199254740993,"a,b","say ""hi""","line1\r\nline2","",,true,"{""k"":[1,2]}","[1,2]",2024-01-02,1.5\r\n',
    );
    const [header, row] = await csvRecords(res.text);
    expect(header.fields).toEqual(['i', 'big', 'comma', 'quote', 'nl', 'empty', 'nul', 'b', 'j', 'arr', 'd', 'n']);
    expect(row.fields).toEqual([
      '1',
      '9007199254740993',
      'a,b',
      'say "hi"',
      'line1\r\nline2',
      '',
      '',
      'true',
      '{"k":[1,2]}',
      '[1,2]',
      '2024-01-02',
      '1.5',
    ]);
    expect(row.quoted[5]).toBe(true);
    expect(row.quoted[6]).toBe(false);
  });

  it('column names are quoted like values; rowFormat objects gives objects in NDJSON and JSON', async () => {
    const sql = `SELECT 1 AS "a,b", 2 AS "x"`;
    expect((await exportRaw(h.readerKey, { connectionId: 'pg', sql, format: 'csv' })).text).toBe('"a,b",x\r\n1,2\r\n');
    const nd = ndjson((await exportRaw(h.readerKey, { connectionId: 'pg', sql, format: 'ndjson', rowFormat: 'objects' })).text);
    expect(nd[1]).toEqual({ 'a,b': 1, x: 2 });
    const js = JSON.parse((await exportRaw(h.readerKey, { connectionId: 'pg', sql, format: 'json', rowFormat: 'objects' })).text);
    expect(js.rows).toEqual([{ 'a,b': 1, x: 2 }]);
  });

  it('an empty result is a header and nothing else', async () => {
    const sql = 'SELECT 1 AS a WHERE false';
    expect((await exportRaw(h.readerKey, { connectionId: 'pg', sql, format: 'csv' })).text).toBe('a\r\n');
    expect(ndjson((await exportRaw(h.readerKey, { connectionId: 'pg', sql, format: 'ndjson' })).text)).toEqual([
      { columns: [{ name: 'a', type: 'int4' }] },
    ]);
    expect(JSON.parse((await exportRaw(h.readerKey, { connectionId: 'pg', sql, format: 'json' })).text)).toEqual({
      columns: [{ name: 'a', type: 'int4' }],
      rows: [],
    });
  });

  it('format defaults to NDJSON; the /api/v1 and /w/{slug} aliases export too', async () => {
    const body = { connectionId: 'lite', sql: 'SELECT 1 AS one' };
    for (const url of ['/api/query/export', '/api/v1/query/export', '/w/default/api/query/export']) {
      const res = await exportRaw(h.readerKey, body, url);
      expect(res.status, url).toBe(200);
      expect(ndjson(res.text)).toEqual([{ columns: [{ name: 'one', type: '' }] }, [1]]);
    }
  });
});

it('is described in OpenAPI with the async query routes', async () => {
  const paths = Object.keys((await h.call('GET', '/api/openapi.json', null)).body.paths);
  expect(paths).toEqual(
    expect.arrayContaining(['/api/query/export', '/api/query/running', '/api/query/{queryId}', '/api/query/{queryId}/cancel']),
  );
});

describe('same rules as /query', () => {
  it('history: one succeeded entry with the rows streamed', async () => {
    const marker = `fmt_hist_${Date.now()}`;
    const res = await exportRaw(h.readerKey, {
      connectionId: 'pg',
      sql: `SELECT g /* ${marker} */ FROM generate_series(1, 1234) g`,
      format: 'csv',
    });
    expect(res.status).toBe(200);
    const entries = await history(marker);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      status: 'succeeded',
      rowCount: 1234,
      statementType: 'SELECT',
      source: 'api',
      queryId: res.headers['x-query-id'],
    });
  });

  it('a reader exporting a write: 403 envelope, rejected in the history, nothing ran', async () => {
    const marker = `fmt_write_${Date.now()}`;
    const res = await exportRaw(h.readerKey, { connectionId: 'pg', sql: `DELETE FROM fmt_nothing /* ${marker} */`, format: 'csv' });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.text)).toMatchObject({ success: false, code: 'insufficient_permissions' });
    expect((await history(marker))[0]).toMatchObject({ status: 'rejected' });
  });

  it('a function with side effects is not a read for an export either', async () => {
    const res = await exportRaw(h.readerKey, { connectionId: 'pg', sql: "SELECT set_config('work_mem', '1MB', false)", format: 'ndjson' });
    expect(res.status).toBe(403);
  });

  it('invalid requests are 400 envelopes: two statements, bad format, unknown field, maxRows past the cap', async () => {
    for (const body of [
      { connectionId: 'pg', sql: 'SELECT 1; SELECT 2' },
      { connectionId: 'pg', sql: 'SELECT 1', format: 'xml' },
      { connectionId: 'pg', sql: 'SELECT 1', async: true },
      { connectionId: 'pg', sql: 'SELECT 1', maxRows: h.config.exportMaxRows + 1 },
    ]) {
      const res = await exportRaw(h.readerKey, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(JSON.parse(res.text).code).toBe('invalid_request');
    }
    expect((await exportRaw(h.readerKey, { connectionId: 'nope', sql: 'SELECT 1' })).status).toBe(404);
    expect((await exportRaw('dbq_not_a_key', { connectionId: 'pg', sql: 'SELECT 1' })).status).toBe(401);
  });
});

describe('errors', () => {
  it('before the first byte: an ordinary envelope with its status (422 failed, 504 timed out)', async () => {
    const marker = `fmt_syntax_${Date.now()}`;
    const res = await exportRaw(h.adminKey, { connectionId: 'pg', sql: `SELECT * FROM fmt_no_such_table /* ${marker} */`, format: 'csv' });
    expect(res.status).toBe(422);
    expect(res.headers['content-type']).toContain('application/json');
    expect(JSON.parse(res.text)).toMatchObject({ success: false, code: 'query_failed', details: { sqlState: '42P01' } });
    expect((await history(marker))[0]).toMatchObject({ status: 'failed' });
    const slow = await exportRaw(h.adminKey, { connectionId: 'pg', sql: 'SELECT pg_sleep(3)', timeoutMs: 200 });
    expect(slow.status).toBe(504);
    expect(JSON.parse(slow.text).code).toBe('query_timeout');
  });

  // Division by zero at g = 60000: the cursor has already delivered the first batches.
  const failing = `SELECT g, 1 / (g - 60000) AS inv FROM generate_series(1, 100000) g`;

  it('after the first byte, NDJSON ends with an error line; the history says failed', async () => {
    const marker = `fmt_late_${Date.now()}`;
    const res = await exportRaw(h.adminKey, { connectionId: 'pg', sql: `${failing} /* ${marker} */`, format: 'ndjson' });
    expect(res.status).toBe(200);
    const lines = ndjson(res.text);
    expect(lines[0]).toHaveProperty('columns');
    expect(lines.length).toBeGreaterThan(2);
    expect(lines.at(-1)).toMatchObject({ error: 'division by zero', code: 'query_failed' });
    expect(lines.slice(1, -1).every((l) => Array.isArray(l))).toBe(true);
    const [entry] = await history(marker);
    expect(entry).toMatchObject({ status: 'failed', error: 'division by zero' });
    expect(entry.rowCount).toBe(lines.length - 2);
  });

  it('POST /query/{id}/cancel of an export: NDJSON ends with a query_canceled line, history canceled', async () => {
    const marker = `fmt_cancel_${Date.now()}`;
    // fetch resolves once the headers, sent with the first chunk, are in: the stream has begun.
    const res = await fetch(`${base}/api/query/export`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.readerKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ connectionId: 'pg', sql: `SELECT generate_series(1, 100000000) AS g /* ${marker} */`, format: 'ndjson' }),
    });
    expect(res.status).toBe(200);
    const id = res.headers.get('x-query-id');
    // Keep reading, so the stream can reach its end once the statement stops.
    const body = res.text();
    const running = await h.call('GET', '/api/query/running', h.readerKey);
    expect(running.body.data.queries.map((q: any) => q.queryId)).toContain(id);
    const cancel = await h.call('POST', `/api/query/${id}/cancel`, h.readerKey);
    expect(cancel.body.data).toMatchObject({ queryId: id, status: 'canceled' });
    const text = await body;
    expect(JSON.parse(text.trimEnd().split('\n').at(-1)!)).toEqual({ error: 'Query was canceled', code: 'query_canceled' });
    expect((await history(marker))[0]).toMatchObject({ status: 'canceled' });
  });

  it('a body dropped before its first read still closes the cursor and writes a canceled entry', async () => {
    const marker = `fmt_unread_${Date.now()}`;
    const principal = await authenticateKey(h.svc.db, h.readerKey);
    const input = exportInputSchema.parse({ connectionId: 'pg', sql: `SELECT generate_series(1, 1000000) AS g /* ${marker} */` });
    const opened = await openExport(h.svc, principal, input, { source: 'api' });
    expect(h.svc.running.list(principal).map((q) => q.queryId)).toContain(opened.queryId);
    await opened.chunks.return(undefined);
    expect((await history(marker))[0]).toMatchObject({ status: 'canceled', queryId: opened.queryId });
    expect(h.svc.running.list(principal).map((q) => q.queryId)).not.toContain(opened.queryId);
  });

  for (const format of ['csv', 'json'] as const) {
    it(`after the first byte, ${format} is cut: the client sees an incomplete transfer`, async () => {
      const marker = `fmt_cut_${format}_${Date.now()}`;
      const res = await fetch(`${base}/api/query/export`, {
        method: 'POST',
        headers: { authorization: `Bearer ${h.adminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ connectionId: 'pg', sql: `${failing} /* ${marker} */`, format }),
      });
      expect(res.status).toBe(200);
      await expect(res.text()).rejects.toThrow();
      expect((await history(marker))[0]).toMatchObject({ status: 'failed', error: 'division by zero' });
    });
  }
});

describe('limits', () => {
  const thousand = 'SELECT g FROM generate_series(1, 1000) g';

  it("maxRows: NDJSON and JSON say truncated; a CSV cut by the client's own maxRows ends cleanly", async () => {
    const nd = ndjson((await exportRaw(h.readerKey, { connectionId: 'pg', sql: thousand, maxRows: 10, format: 'ndjson' })).text);
    expect(nd).toHaveLength(12);
    expect(nd.at(-1)).toEqual({ truncated: true, rowCount: 10 });
    const js = JSON.parse((await exportRaw(h.readerKey, { connectionId: 'pg', sql: thousand, maxRows: 10, format: 'json' })).text);
    expect(js).toMatchObject({ truncated: true, rowCount: 10 });
    expect(js.rows).toHaveLength(10);
    const csv = await exportRaw(h.readerKey, { connectionId: 'pg', sql: thousand, maxRows: 10, format: 'csv' });
    expect(await csvRecords(csv.text)).toHaveLength(11);
    // Exactly maxRows rows available: not truncated.
    expect(ndjson((await exportRaw(h.readerKey, { connectionId: 'pg', sql: thousand, maxRows: 1000 })).text)).toHaveLength(1001);
  });

  it('DBQ_EXPORT_MAX_ROWS and DBQ_EXPORT_MAX_BYTES bound every export', async () => {
    const capped = await createHarness({ DBQ_EXPORT_MAX_ROWS: '100', DBQ_EXPORT_MAX_BYTES: '4096' });
    try {
      await capped.call('POST', '/api/connections', capped.adminKey, { name: 'pg', url: PG_URL });
      const run = (sql: string, format: string) =>
        capped.app.inject({
          method: 'POST',
          url: '/api/query/export',
          headers: { authorization: `Bearer ${capped.adminKey}`, 'content-type': 'application/json' },
          payload: JSON.stringify({ connectionId: 'pg', sql, format }),
        });
      const rows = ndjson((await run(thousand, 'ndjson')).body);
      expect(rows).toHaveLength(102);
      expect(rows.at(-1)).toEqual({ truncated: true, rowCount: 100 });

      const wide = `SELECT g, repeat('z', 100) AS pad FROM generate_series(1, 1000) g`;
      const body = (await run(wide, 'ndjson')).body;
      const lines = ndjson(body);
      const trailer = `${JSON.stringify(lines.at(-1))}\n`;
      expect(lines.at(-1)).toMatchObject({ truncated: true });
      expect(Buffer.byteLength(body) - Buffer.byteLength(trailer)).toBeLessThanOrEqual(4096);
      expect(Buffer.byteLength(body)).toBeGreaterThan(3500);

      // CSV has no way to say "truncated": past a server cap the transfer is cut instead.
      const server = await capped.app.listen({ host: '127.0.0.1', port: 0 });
      const res = await fetch(`${server}/api/query/export`, {
        method: 'POST',
        headers: { authorization: `Bearer ${capped.adminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ connectionId: 'pg', sql: thousand, format: 'csv' }),
      });
      await expect(res.text()).rejects.toThrow();
    } finally {
      await capped.close();
    }
  });
});
