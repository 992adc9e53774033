// Annotations feed POST /ai/generate. Builtin: an annotated synonym links like a name, so
// "invoices" finds the cryptically named tx_hdr and the answer changes from a refusal to SQL.
// LLM provider (OpenAI wire format, a stand-in server on loopback recording each request and
// answering with a recorded reply): the prompt carries the descriptions, synonyms and the
// examples closest to the question — and not the unrelated ones.
import path from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, workspaceSqliteDir, type Harness } from './support/harness.ts';

const SCHEMA = `
  CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, cust_flg INTEGER);
  CREATE TABLE tx_hdr (id INTEGER PRIMARY KEY, cust_ref INTEGER REFERENCES customers(id), amt_net REAL, st_cd TEXT);
  INSERT INTO customers (name, cust_flg) VALUES ('Ada', 1), ('Bo', 0);
  INSERT INTO tx_hdr (cust_ref, amt_net, st_cd) VALUES (1, 10, 'P'), (1, 20, 'S'), (2, 5, 'C');`;

const DOC = {
  tables: {
    tx_hdr: {
      description: 'Invoice headers: one row per invoice sent to a customer',
      synonyms: ['invoices'],
      columns: {
        amt_net: { description: 'Invoice amount after discounts, before tax', synonyms: ['net amount'] },
        st_cd: { description: 'Status: P paid, S sent, C cancelled' },
      },
    },
    customers: { columns: { cust_flg: { description: '1 for wholesale customers', synonyms: ['wholesale'] } } },
  },
  examples: [
    { question: 'Revenue from paid invoices', sql: "SELECT sum(amt_net) FROM tx_hdr WHERE st_cd = 'P'" },
    { question: 'Number of wholesale customers', sql: 'SELECT count(*) FROM customers WHERE cust_flg = 1' },
    { question: 'Cancelled invoices per customer', sql: "SELECT cust_ref, count(*) FROM tx_hdr WHERE st_cd = 'C' GROUP BY cust_ref" },
    { question: 'Customers by name', sql: 'SELECT name FROM customers ORDER BY name' },
    {
      question: 'Unpaid invoices of wholesale customers',
      sql: "SELECT t.id FROM tx_hdr t JOIN customers c ON c.id = t.cust_ref WHERE c.cust_flg = 1 AND t.st_cd <> 'P'",
    },
  ],
};

function seed(h: Harness): void {
  const db = new Database(path.join(workspaceSqliteDir(h, 'default'), 'billing.db'));
  db.exec(SCHEMA);
  db.close();
}

async function connect(h: Harness): Promise<void> {
  const res = await h.call('POST', '/api/connections', h.adminKey, { name: 'billing', url: 'sqlite:billing.db' });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
}

const generate = (h: Harness, prompt: string) => h.call('POST', '/api/ai/generate', h.readerKey, { connectionId: 'billing', prompt });

describe('builtin', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
    seed(h);
    await connect(h);
  });
  afterAll(async () => h?.close());

  it('an annotated synonym changes the answer: "invoices" finds tx_hdr', async () => {
    const before = await generate(h, 'How many invoices are there?');
    expect(before.status).toBe(422);
    expect(before.body.error).toMatch(/nothing in the question matches/);

    expect((await h.call('PUT', '/api/connections/billing/annotations', h.adminKey, DOC)).status).toBe(200);
    const after = await generate(h, 'How many invoices are there?');
    expect(after.status, JSON.stringify(after.body)).toBe(200);
    expect(after.body.data).toMatchObject({ provider: 'builtin', validated: true, tables: ['tx_hdr'], tablesOffered: null });
    expect(after.body.data.sql).toMatch(/SELECT COUNT\(\*\).*\s+FROM tx_hdr/is);
  });

  it('a new version is used at once, and removing the synonym brings the refusal back', async () => {
    const { synonyms: _gone, ...txHdr } = DOC.tables.tx_hdr;
    expect(
      (await h.call('PUT', '/api/connections/billing/annotations', h.adminKey, { ...DOC, tables: { ...DOC.tables, tx_hdr: txHdr } }))
        .status,
    ).toBe(200);
    expect((await generate(h, 'How many invoices are there?')).status).toBe(422);
  });
});

describe('LLM provider (OpenAI wire format, recorded reply)', () => {
  let h: Harness;
  let server: Server;
  const prompts: { system: string; user: string }[] = [];
  // The reply a model gave for the question below, kept as the fixture the stand-in answers with.
  const RECORDED_REPLY = {
    id: 'chatcmpl-recorded',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content:
            "```sql\nSELECT sum(amt_net) FROM tx_hdr WHERE st_cd = 'P' AND cust_ref IN (SELECT id FROM customers WHERE cust_flg = 1)\n```\nRevenue from paid invoices of wholesale customers.",
        },
      },
    ],
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
      req.on('end', () => {
        const messages = (JSON.parse(raw) as { messages: { role: string; content: string }[] }).messages;
        prompts.push({ system: messages[0].content, user: messages[1].content });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(RECORDED_REPLY));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    h = await createHarness({ DBQ_AI_PROVIDER: 'openai', DBQ_AI_BASE_URL: `http://127.0.0.1:${port}/v1`, DBQ_AI_MODEL: 'recorded' });
    seed(h);
    await connect(h);
    expect((await h.call('PUT', '/api/connections/billing/annotations', h.adminKey, DOC)).status).toBe(200);
  });
  afterAll(async () => {
    await h?.close();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  });

  it('puts descriptions, synonyms and the closest examples in the prompt', async () => {
    const res = await generate(h, 'What is the revenue from paid invoices of wholesale customers?');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ provider: 'openai', validated: true });
    // The response says which tables the model was shown: both, as the schema fits the budget.
    expect([...res.body.data.tablesOffered].sort()).toEqual(['customers', 'tx_hdr']);
    const { user, system } = prompts[prompts.length - 1];
    expect(system).toMatch(/Where an example question is like the one asked, follow its SQL/);
    // Descriptions and synonyms as comments of the CREATE TABLE text.
    expect(user).toContain('-- Invoice headers: one row per invoice sent to a customer; also called: invoices\nCREATE TABLE tx_hdr (');
    expect(user).toMatch(/ amt_net REAL, -- Invoice amount after discounts, before tax; also called: net amount/);
    expect(user).toMatch(/ cust_flg INTEGER, -- 1 for wholesale customers; also called: wholesale/);
    // The three examples sharing the most words with the question, most alike first; the others left out.
    const shown = [...user.matchAll(/^Question: (.*)$/gm)].map((m) => m[1]);
    expect(shown).toEqual([
      'Revenue from paid invoices',
      'Unpaid invoices of wholesale customers',
      'Number of wholesale customers',
      'What is the revenue from paid invoices of wholesale customers?',
    ]);
    expect(user).toContain("```sql\nSELECT sum(amt_net) FROM tx_hdr WHERE st_cd = 'P'\n```");
    expect(user).not.toContain('Customers by name');
  });

  it('a connection without annotations gets the bare schema and no examples', async () => {
    const db = new Database(path.join(workspaceSqliteDir(h, 'default'), 'bare.db'));
    db.exec(SCHEMA);
    db.close();
    expect((await h.call('POST', '/api/connections', h.adminKey, { name: 'bare', url: 'sqlite:bare.db' })).status).toBe(201);
    const res = await h.call('POST', '/api/ai/generate', h.readerKey, { connectionId: 'bare', prompt: 'Revenue from paid invoices' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const { user } = prompts[prompts.length - 1];
    expect(user).not.toContain('Examples of questions');
    expect(user).not.toContain('Invoice headers');
  });
});
