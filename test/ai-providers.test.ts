// The OpenAI-compatible and Anthropic providers against a local stand-in server (node:http on
// 127.0.0.1, port 0): the wire format each API expects (path, headers, model, messages that
// carry the schema's CREATE TABLE text), the correction loop (a broken first answer is sent
// back with the database's error), retries on 429/5xx, timeouts, and the rule that a caller
// who may only read never gets a write back, whatever the model says. classify is the real
// read-only guard (src/guard/guard.ts); validate prepares the SQL on the real sample database.
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { GenerationFailedError, QueryFailedError } from '../src/errors.ts';
import { extractSql } from '../src/ai/extract-sql.ts';
import { generateSql, type GenerateDeps } from '../src/ai/generate.ts';
import { createProvider, type ProviderConfig } from '../src/ai/providers/index.ts';
import { buildSchemaContext, type SchemaContext } from '../src/ai/schema-context.ts';
import { createSampleSqlite } from '../src/sample/load-sample.ts';
import { classifyStatement } from '../src/guard/guard.ts';
import { introspectSqlite } from '../scripts/eval-ai.ts';

interface Seen {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}
interface Canned {
  status?: number;
  headers?: Record<string, string>;
  body?: unknown;
  /** Never answer (for timeouts). */
  hang?: boolean;
}

let server: Server;
let port = 0;
const seen: Seen[] = [];
let replies: Canned[] = [];

let dir: string;
let db: Database.Database;
let ctx: SchemaContext;
let validateCalls: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      seen.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: JSON.parse(raw || '{}') as Record<string, unknown>,
      });
      const r = replies.shift() ?? { status: 500, body: { error: { message: 'no canned reply left' } } };
      if (r.hang) return;
      res.writeHead(r.status ?? 200, { 'content-type': 'application/json', ...(r.headers ?? {}) });
      res.end(JSON.stringify(r.body ?? {}));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;

  dir = mkdtempSync(join(tmpdir(), 'dbq-ai-providers-'));
  createSampleSqlite(join(dir, 'shop.db'));
  db = new Database(join(dir, 'shop.db'), { readonly: true });
  const read = async (sql: string): Promise<unknown[][]> => db.prepare(sql).raw(true).all() as unknown[][];
  ctx = await buildSchemaContext('sqlite', await introspectSqlite(read), read);
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  db?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  seen.length = 0;
  replies = [];
  validateCalls = [];
});

function deps(cfg: Omit<ProviderConfig, 'timeoutMs'> & { timeoutMs?: number }, canWrite = false): GenerateDeps {
  return {
    provider: createProvider({ timeoutMs: 2000, retryBaseDelayMs: 5, ...cfg }),
    getSchema: async () => ctx,
    classify: (sql) => classifyStatement('sqlite', sql),
    validate: async (sql) => {
      validateCalls.push(sql);
      try {
        db.prepare(sql);
      } catch (err) {
        throw new QueryFailedError((err as Error).message, { sqlState: null, position: null }, err);
      }
    },
    canWrite,
  };
}

const openai = (content: string): Canned => ({
  body: { id: 'chatcmpl-1', choices: [{ index: 0, message: { role: 'assistant', content } }] },
});
const anthropic = (text: string): Canned => ({
  body: { id: 'msg_1', type: 'message', role: 'assistant', content: [{ type: 'text', text }] },
});
const messagesOf = (s: Seen): { role: string; content: string }[] => s.body.messages as { role: string; content: string }[];

describe('openai provider (chat completions)', () => {
  const cfg = (): Omit<ProviderConfig, 'timeoutMs'> => ({
    provider: 'openai',
    baseUrl: `http://127.0.0.1:${port}/v1`,
    apiKey: 'sk-test-123',
    model: 'gpt-test',
  });

  it('sends the chat-completions wire format with the schema and returns validated SQL', async () => {
    replies.push(openai("Here you go:\n```sql\nSELECT COUNT(*) FROM orders WHERE status = 'shipped';\n```\nCounts the shipped orders."));
    const out = await generateSql(deps(cfg()), 'How many orders have shipped?');
    expect(out).toMatchObject({
      sql: "SELECT COUNT(*) FROM orders WHERE status = 'shipped'",
      explanation: expect.stringContaining('Counts the shipped orders'),
      dialect: 'sqlite',
      provider: 'openai',
      model: 'gpt-test',
      validated: true,
      attempts: 1,
      tables: ['orders'],
    });
    expect(seen).toHaveLength(1);
    const req = seen[0];
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/v1/chat/completions');
    expect(req.headers.authorization).toBe('Bearer sk-test-123');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.body.model).toBe('gpt-test');
    const msgs = messagesOf(req);
    expect(msgs[0].role).toBe('system');
    expect(msgs[0].content).toMatch(/SQLite/);
    expect(msgs[0].content).toMatch(/read-only SELECT/);
    expect(msgs[0].content).toContain('```sql');
    expect(msgs[1].role).toBe('user');
    expect(msgs[1].content).toContain('CREATE TABLE orders (');
    expect(msgs[1].content).toContain('FOREIGN KEY (customer_id) REFERENCES customers (id)');
    expect(msgs[1].content).toContain("'shipped'"); // sample values travel with the schema
    expect(msgs[1].content).toContain('Question: How many orders have shipped?');
  });

  it('re-prompts with the database error when the first SQL is broken', async () => {
    replies.push(openai('```sql\nSELECT COUNT(*) FROM ordrs\n```'));
    replies.push(openai('```sql\nSELECT COUNT(*) FROM orders\n```\nCounts all orders.'));
    const out = await generateSql(deps(cfg()), 'How many orders are there?');
    expect(out).toMatchObject({ sql: 'SELECT COUNT(*) FROM orders', validated: true, attempts: 2 });
    expect(seen).toHaveLength(2);
    const second = messagesOf(seen[1]);
    expect(second.some((m) => m.role === 'assistant' && m.content.includes('SELECT COUNT(*) FROM ordrs'))).toBe(true);
    const fix = second[second.length - 1];
    expect(fix.role).toBe('user');
    expect(fix.content).toMatch(/not accepted: no such table: ordrs/);
  });

  it('returns the last candidate unvalidated when the database refuses every attempt', async () => {
    for (let i = 0; i < 3; i++) replies.push(openai(`\`\`\`sql\nSELECT nope${i} FROM orders\n\`\`\``));
    const out = await generateSql(deps(cfg()), 'something odd');
    expect(out).toMatchObject({ sql: 'SELECT nope2 FROM orders', validated: false, attempts: 3 });
    expect(seen).toHaveLength(3);
  });

  it('retries after 429 (honouring Retry-After) and then succeeds', async () => {
    replies.push({ status: 429, headers: { 'retry-after': '0' }, body: { error: { message: 'Rate limit reached' } } });
    replies.push(openai('```sql\nSELECT name FROM categories\n```'));
    const out = await generateSql(deps(cfg()), 'list categories');
    expect(out).toMatchObject({ sql: 'SELECT name FROM categories', validated: true, attempts: 1 });
    expect(seen).toHaveLength(2);
  });

  it('gives up after bounded retries on 5xx, without the key in the message', async () => {
    for (let i = 0; i < 3; i++) replies.push({ status: 503, body: { error: { message: 'overloaded' } } });
    const err = await generateSql(deps(cfg()), 'list categories').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GenerationFailedError);
    expect((err as Error).message).toMatch(/HTTP 503: overloaded/);
    expect((err as Error).message).not.toContain('sk-test-123');
    expect(seen).toHaveLength(3);
  });

  it('does not retry a 401', async () => {
    replies.push({ status: 401, body: { error: { message: 'Incorrect API key provided' } } });
    await expect(generateSql(deps(cfg()), 'list categories')).rejects.toThrow(/HTTP 401/);
    expect(seen).toHaveLength(1);
  });

  it('times out a server that never answers', async () => {
    replies.push({ hang: true }, { hang: true }, { hang: true });
    const started = Date.now();
    await expect(generateSql(deps({ ...cfg(), timeoutMs: 150 }), 'list categories')).rejects.toThrow(/did not answer within 150 ms/);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('never hands a write to a read-only caller: DELETE three times → GenerationFailedError', async () => {
    for (let i = 0; i < 3; i++) replies.push(openai('```sql\nDELETE FROM orders\n```'));
    await expect(generateSql(deps(cfg(), false), 'remove all orders')).rejects.toThrow(/only read statements/);
    expect(seen).toHaveLength(3);
    // Each retry told the model why, and the write never reached the database dry run.
    expect(messagesOf(seen[1]).at(-1)!.content).toMatch(/only read statements .*DELETE/);
    expect(validateCalls).toEqual([]);
  });

  it('accepts a corrected read after a refused write', async () => {
    replies.push(openai('```sql\nDELETE FROM orders\n```'));
    replies.push(openai('```sql\nSELECT COUNT(*) FROM orders\n```'));
    const out = await generateSql(deps(cfg(), false), 'how many orders');
    expect(out).toMatchObject({ sql: 'SELECT COUNT(*) FROM orders', validated: true, attempts: 2 });
  });

  it('lets an admin on a writable connection get a validated write', async () => {
    replies.push(openai("```sql\nDELETE FROM orders WHERE status = 'canceled'\n```"));
    const out = await generateSql(deps(cfg(), true), 'delete canceled orders');
    expect(out).toMatchObject({ sql: "DELETE FROM orders WHERE status = 'canceled'", validated: true });
    expect(messagesOf(seen[0])[0].content).toMatch(/only when the question explicitly asks to change data/);
  });

  it('rejects two statements in one answer', async () => {
    for (let i = 0; i < 3; i++) replies.push(openai('```sql\nSELECT 1; SELECT 2\n```'));
    await expect(generateSql(deps(cfg()), 'x')).rejects.toBeInstanceOf(GenerationFailedError);
    expect(validateCalls).toEqual([]);
  });

  it('sends no Authorization header without a key (Ollama, llama.cpp, LM Studio)', async () => {
    replies.push(openai('SELECT name FROM products'));
    const out = await generateSql(
      deps({ provider: 'openai', baseUrl: `http://127.0.0.1:${port}/v1/`, model: 'llama3.1' }),
      'list products',
    );
    expect(out.sql).toBe('SELECT name FROM products');
    expect(seen[0].path).toBe('/v1/chat/completions');
    expect(seen[0].headers.authorization).toBeUndefined();
    expect(seen[0].body.model).toBe('llama3.1');
  });
});

describe('anthropic provider (messages API)', () => {
  const cfg = (): Omit<ProviderConfig, 'timeoutMs'> => ({
    provider: 'anthropic',
    baseUrl: `http://127.0.0.1:${port}`,
    apiKey: 'sk-ant-test',
    model: 'claude-test',
  });

  it('sends the messages wire format with the schema and returns validated SQL', async () => {
    replies.push(anthropic('```sql\nSELECT AVG(price) FROM products\n```\nAverage product price.'));
    const out = await generateSql(deps(cfg()), 'average product price');
    expect(out).toMatchObject({ sql: 'SELECT AVG(price) FROM products', provider: 'anthropic', model: 'claude-test', validated: true });
    const req = seen[0];
    expect(req.path).toBe('/v1/messages');
    expect(req.headers['x-api-key']).toBe('sk-ant-test');
    expect(req.headers['anthropic-version']).toBe('2023-06-01');
    expect(req.headers.authorization).toBeUndefined();
    expect(req.body.model).toBe('claude-test');
    expect(req.body.max_tokens).toBeGreaterThan(0);
    expect(String(req.body.system)).toMatch(/read-only SELECT/);
    const msgs = messagesOf(req);
    expect(msgs[0].role).toBe('user');
    expect(msgs[0].content).toContain('CREATE TABLE products (');
    expect(msgs[0].content).toContain('FOREIGN KEY (category_id) REFERENCES categories (id)');
  });

  it('corrects a broken first answer with the error in the second request', async () => {
    replies.push(anthropic('SQL: SELECT AVG(prize) FROM products'));
    replies.push(anthropic('```\nSELECT AVG(price) FROM products;\n```'));
    const out = await generateSql(deps(cfg()), 'average product price');
    expect(out).toMatchObject({ sql: 'SELECT AVG(price) FROM products', validated: true, attempts: 2 });
    const second = messagesOf(seen[1]);
    expect(second.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(second[2].content).toContain('no such column: prize');
  });

  it('retries a 429 then succeeds; refuses a write for a reader', async () => {
    replies.push({
      status: 429,
      headers: { 'retry-after': '0' },
      body: { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } },
    });
    replies.push(anthropic('```sql\nSELECT COUNT(*) FROM customers\n```'));
    await expect(generateSql(deps(cfg()), 'how many customers')).resolves.toMatchObject({ validated: true });
    expect(seen).toHaveLength(2);

    seen.length = 0;
    validateCalls = [];
    for (let i = 0; i < 3; i++) replies.push(anthropic('Sure.\n```sql\nDELETE FROM orders\n```'));
    await expect(generateSql(deps(cfg(), false), 'delete all orders')).rejects.toBeInstanceOf(GenerationFailedError);
    expect(validateCalls).toEqual([]);
  });
});

describe('extractSql', () => {
  it.each([
    ['```sql\nSELECT 1;\n```', 'SELECT 1'],
    ['```SQL\nSELECT 1\n```\nThis returns one.', 'SELECT 1'],
    ['```\nSELECT a\nFROM t;;\n```', 'SELECT a\nFROM t'],
    ['Here is the query:\n\n```postgresql\nWITH x AS (SELECT 1) SELECT * FROM x\n```', 'WITH x AS (SELECT 1) SELECT * FROM x'],
    ['SQL: SELECT name FROM products;', 'SELECT name FROM products'],
    ['The answer is `SELECT COUNT(*) FROM orders` which counts orders.', 'SELECT COUNT(*) FROM orders'],
    ['To count them:\nSELECT COUNT(*)\nFROM orders;\n\nThis counts every order.', 'SELECT COUNT(*)\nFROM orders'],
    ['```json\n{"a":1}\n```\n```sql\nSELECT 2\n```', 'SELECT 2'],
    ['```sql\nSELECT 3', 'SELECT 3'],
    ['I cannot answer that.', ''],
    ['```sql\nSELECT 1; DELETE FROM t;\n```', 'SELECT 1; DELETE FROM t'],
  ])('%j → %j', (reply, sql) => {
    expect(extractSql(reply)).toBe(sql);
  });
});
