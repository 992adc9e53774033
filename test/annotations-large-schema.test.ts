// Large schemas for LLM providers (issue #28 §2), measured through the OpenAI provider against
// a stand-in server on loopback that records each request and answers with the question's gold
// SQL (the recorded reply): the shop sample's 6 tables among 194 others (200 in all, some
// sharing words with the shop: supplier_orders, support_customer_tickets, product_recalls).
// For every shop question it checks that the prompt carries each table the gold SQL reads,
// stays within the character budget, and that the response names the tables offered; and
// prints the prompt sizes before (the whole schema; the old 30-table word match, kept below
// as the baseline) and after.
import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SchemaTable } from '../src/engines/engine.ts';
import { QueryFailedError } from '../src/errors.ts';
import { generateSql, tablesInSql } from '../src/ai/generate.ts';
import { createProvider } from '../src/ai/providers/index.ts';
import { buildSchemaContext, renderSchema, sampleKey, type SchemaContext } from '../src/ai/schema-context.ts';
import { SCHEMA_BUDGET_CHARS } from '../src/ai/table-selection.ts';
import { classifyStatement } from '../src/guard/guard.ts';
import { createSampleSqlite } from '../src/sample/load-sample.ts';
import { introspectSqlite } from '../scripts/eval-ai.ts';

const AREAS = ['hr', 'finance', 'inventory', 'marketing', 'logistics', 'support', 'payroll', 'crm', 'warehouse', 'fleet', 'legal', 'it', 'procurement', 'analytics', 'billing', 'compliance', 'training', 'events', 'facilities', 'research']; // prettier-ignore
const THINGS = ['employees', 'vendors', 'shipments', 'tickets', 'invoices', 'assets', 'campaigns', 'contracts', 'audits', 'budgets']; // prettier-ignore
// Distractors that share words with the shop questions.
const LOOKALIKES = [
  'supplier_orders',
  'support_customer_tickets',
  'product_recalls',
  'review_cycles',
  'category_budgets',
  'customer_surveys',
];

/** 194 tables a shop database does not need, with keys between some of them. */
function distractors(): SchemaTable[] {
  const names = [...LOOKALIKES];
  for (const area of AREAS) for (const thing of THINGS) if (names.length < 194) names.push(`${area}_${thing}`);
  return names.map((name, i) => ({
    schema: null,
    name,
    kind: 'table',
    columns: [
      { name: 'id', type: 'INTEGER', nullable: false, primaryKey: true },
      { name: `${name}_code`, type: 'TEXT', nullable: false, primaryKey: false },
      { name: 'title', type: 'TEXT', nullable: true, primaryKey: false },
      { name: 'amount', type: 'NUMERIC(12,2)', nullable: true, primaryKey: false },
      { name: 'status', type: 'TEXT', nullable: true, primaryKey: false },
      { name: 'created_at', type: 'TEXT', nullable: false, primaryKey: false },
      ...(i > 0 ? [{ name: `${names[i - 1]}_id`, type: 'INTEGER', nullable: true, primaryKey: false }] : []),
    ],
    foreignKeys: i > 0 ? [{ columns: [`${names[i - 1]}_id`], refTable: names[i - 1], refSchema: null, refColumns: ['id'] }] : [],
  }));
}

/** The table selection before this change (30 tables by word match, then their foreign keys), kept as the baseline. */
function selectBefore(ctx: SchemaContext, question: string, maxTables = 30): string[] {
  if (ctx.tables.length <= maxTables) return ctx.tables.map((t) => t.name);
  const words = new Set(
    question
      .toLowerCase()
      .split(/[^a-z0-9]+/)
      .filter((w) => w.length > 2)
      .map((w) => w.replace(/(ies|es|s)$/, '')),
  );
  const touches = (text: string): boolean =>
    text
      .toLowerCase()
      .split(/[^a-z0-9]+/)
      .some((w) => w.length > 2 && words.has(w.replace(/(ies|es|s)$/, '')));
  const scored = ctx.tables
    .map((t) => {
      let score = touches(t.name) ? 3 : 0;
      for (const c of t.columns) {
        if (touches(c.name)) score += 1;
        for (const v of ctx.samples[sampleKey(t.name, c.name)] ?? []) if (touches(v)) score += 2;
      }
      return { t, score };
    })
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score);
  if (scored.length === 0) return ctx.tables.slice(0, maxTables).map((t) => t.name);
  const chosen = new Set(scored.slice(0, maxTables).map((s) => s.t.name));
  for (const s of scored.slice(0, maxTables)) {
    for (const fk of s.t.foreignKeys) if (chosen.size < maxTables * 1.5) chosen.add(fk.refTable);
  }
  return ctx.tables.filter((t) => chosen.has(t.name)).map((t) => t.name);
}

interface Question {
  question: string;
  gold: string;
}

let server: Server;
let port = 0;
let reply = '';
const prompts: string[] = [];
let dir: string;
let db: Database.Database;
let ctx: SchemaContext;
const questions = JSON.parse(readFileSync(new URL('./fixtures/ai-questions.json', import.meta.url), 'utf8')) as Question[];

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      prompts.push((JSON.parse(raw) as { messages: { content: string }[] }).messages[1].content);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'chatcmpl-recorded', choices: [{ index: 0, message: { role: 'assistant', content: reply } }] }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  dir = mkdtempSync(join(tmpdir(), 'dbq-large-schema-'));
  createSampleSqlite(join(dir, 'shop.db'));
  db = new Database(join(dir, 'shop.db'), { readonly: true });
  const read = async (sql: string): Promise<unknown[][]> => db.prepare(sql).raw(true).all() as unknown[][];
  const shop = await buildSchemaContext('sqlite', await introspectSqlite(read), read);
  ctx = { ...shop, tables: [...shop.tables, ...distractors()] };
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  db?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a 200-table schema', () => {
  it('offers every table each shop question needs within the budget, and says which', async () => {
    expect(ctx.tables.length).toBe(200);
    const provider = createProvider({ provider: 'openai', baseUrl: `http://127.0.0.1:${port}/v1`, model: 'recorded', timeoutMs: 5000 });
    const whole = renderSchema(ctx).length;
    const before: number[] = [];
    const after: number[] = [];
    const offeredCounts: number[] = [];
    let beforeMissed = 0;
    const missed: string[] = [];
    for (const q of questions) {
      const needed = tablesInSql(q.gold, ctx);
      reply = '```sql\n' + q.gold + '\n```\nThe recorded answer.';
      const result = await generateSql(
        {
          provider,
          getSchema: async () => ctx,
          classify: (sql) => classifyStatement('sqlite', sql),
          validate: async (sql) => {
            try {
              db.prepare(sql);
            } catch (err) {
              throw new QueryFailedError((err as Error).message, { sqlState: null, position: null }, err);
            }
          },
          canWrite: false,
        },
        q.question,
      );
      const prompt = prompts[prompts.length - 1];
      const schemaText = prompt.slice(prompt.indexOf('\n\n') + 2, prompt.lastIndexOf('\n\nQuestion: '));
      after.push(schemaText.length);
      expect(schemaText.length, q.question).toBeLessThanOrEqual(SCHEMA_BUDGET_CHARS);
      expect(result.tablesOffered, q.question).not.toBeNull();
      offeredCounts.push(result.tablesOffered!.length);
      for (const t of needed) {
        if (!result.tablesOffered!.includes(t) || !schemaText.includes(`CREATE TABLE ${t} (`)) missed.push(`${q.question}: ${t}`);
      }
      const old = selectBefore(ctx, q.question);
      before.push(renderSchema(ctx, { tables: old }).length);
      if (needed.some((t) => !old.includes(t))) beforeMissed++;
    }
    expect(missed).toEqual([]);
    const avg = (xs: number[]) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
    console.log(
      [
        `200-table schema, ${questions.length} shop questions (schema text in the prompt, characters):`,
        `  whole schema: ${whole}`,
        `  before (30-table word match): avg ${avg(before)}, max ${Math.max(...before)}; questions missing a needed table: ${beforeMissed}`,
        `  after (budget ${SCHEMA_BUDGET_CHARS}): avg ${avg(after)}, max ${Math.max(...after)}; tables offered avg ${avg(offeredCounts)}, max ${Math.max(...offeredCounts)}; questions missing a needed table: 0`,
      ].join('\n'),
    );
  });

  it('a schema that fits is sent whole', async () => {
    const small: SchemaContext = { ...ctx, tables: ctx.tables.slice(0, 6) };
    reply = '```sql\nSELECT COUNT(*) FROM customers\n```';
    const provider = createProvider({ provider: 'openai', baseUrl: `http://127.0.0.1:${port}/v1`, model: 'recorded', timeoutMs: 5000 });
    const result = await generateSql(
      {
        provider,
        getSchema: async () => small,
        classify: (sql) => classifyStatement('sqlite', sql),
        validate: async () => {},
        canWrite: false,
      },
      'How many customers are there?',
    );
    expect(result.tablesOffered).toEqual(small.tables.map((t) => t.name));
  });
});
