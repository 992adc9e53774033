// The builtin (offline) NL→SQL generator on the sample shop database, on SQLite and on a real
// PostgreSQL server: generated SQL must run and return the gold rows, pass the read-only guard
// of its dialect, and the generator must refuse questions it has no grounds for instead of
// guessing. The question set is test/fixtures/ai-questions.json (scripts/eval-ai.ts reports
// accuracy on it); tests never read /work/shared.
import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SchemaTable } from '../src/engines/engine.ts';
import { GenerationFailedError, QueryFailedError } from '../src/errors.ts';
import { generateBuiltinSql, SchemaIndex } from '../src/ai/builtin/index.ts';
import { generateSql } from '../src/ai/generate.ts';
import { createProvider } from '../src/ai/providers/index.ts';
import { buildSchemaContext, renderSchema, type SchemaContext } from '../src/ai/schema-context.ts';
import { createSampleSqlite, readShopSql } from '../src/sample/load-sample.ts';
import { classifyStatement } from '../src/guard/guard.ts';
import { introspectSqlite, sameResult, type EvalQuestion } from '../scripts/eval-ai.ts';

const questions = JSON.parse(readFileSync(new URL('./fixtures/ai-questions.json', import.meta.url), 'utf8')) as EvalQuestion[];
const CATEGORIES = [
  'count',
  'list',
  'filter',
  'aggregate',
  'group',
  'having',
  'order_topn',
  'superlative',
  'join',
  'negation',
  'date_range',
];

const NONSENSE = [
  'what is the meaning of life',
  'How many unicorns live in Berlin?',
  'Show me the weather in Paris',
  'List customers from Atlantis',
  'delete all orders',
];

const ordered = (gold: string): boolean => /\border\s+by\b/i.test(gold);

describe('builtin generator on SQLite (sample shop)', () => {
  let dir: string;
  let db: Database.Database;
  let ctx: SchemaContext;
  let index: SchemaIndex;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dbq-ai-builtin-'));
    const file = join(dir, 'shop.db');
    createSampleSqlite(file);
    createSampleSqlite(file); // idempotent: a second call leaves the file alone
    db = new Database(file, { readonly: true });
    const read = async (sql: string): Promise<unknown[][]> => db.prepare(sql).raw(true).all() as unknown[][];
    ctx = await buildSchemaContext('sqlite', await introspectSqlite(read), read);
    index = new SchemaIndex(ctx);
  });
  afterAll(() => {
    db?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('collects sample values of low-cardinality text columns only', () => {
    expect(ctx.samples['orders.status']?.sort()).toEqual(['canceled', 'delivered', 'paid', 'pending', 'shipped']);
    expect(ctx.samples['customers.city']).toContain('Berlin');
    expect(ctx.samples['customers.email']).toBeUndefined(); // 100 distinct values: not vocabulary
    expect(ctx.samples['customers.first_name']?.length).toBeLessThanOrEqual(20);
    const text = renderSchema(ctx);
    expect(text).toContain('CREATE TABLE orders (');
    expect(text).toContain('FOREIGN KEY (customer_id) REFERENCES customers (id)');
    expect(text).toMatch(/status VARCHAR\(20\) NOT NULL, -- values: .*'shipped'/);
  });

  for (const category of CATEGORIES) {
    const subset = questions.filter((q) => q.category === category);
    it(`${category}: ${subset.length} questions return the gold rows`, () => {
      expect(subset.length).toBeGreaterThan(0);
      const wrong: string[] = [];
      for (const q of subset) {
        const out = generateBuiltinSql(q.question, index, 'sqlite');
        const gold = db.prepare(q.gold).raw(true).all() as unknown[][];
        const got = db.prepare(out.sql).raw(true).all() as unknown[][];
        if (!sameResult(gold, got, ordered(q.gold), true)) wrong.push(`${q.question}\n${out.sql}`);
        expect(out.explanation).toMatch(/^[A-Z].*\.$/);
        expect(out.tables.length).toBeGreaterThan(0);
      }
      expect(wrong).toEqual([]);
    });
  }

  it('writes SQL the read-only guard of every dialect classifies as a read', async () => {
    for (const dialect of ['sqlite', 'postgres', 'mysql'] as const) {
      for (const q of questions) {
        const { sql } = generateBuiltinSql(q.question, index, dialect);
        const verdict = await classifyStatement(dialect, sql);
        expect({ q: q.question, dialect, kind: verdict.kind, reason: verdict.reason }).toMatchObject({ kind: 'read' });
      }
    }
  });

  it('uses range predicates for dates and dialect functions only for buckets', () => {
    const year = generateBuiltinSql('How many orders were placed in 2025?', index, 'postgres').sql;
    expect(year).toContain("ordered_at >= '2025-01-01' AND ordered_at < '2026-01-01'");
    expect(generateBuiltinSql('Number of orders per year', index, 'sqlite').sql).toContain("strftime('%Y', ordered_at)");
    expect(generateBuiltinSql('Number of orders per year', index, 'postgres').sql).toContain("to_char(ordered_at, 'YYYY')");
    expect(generateBuiltinSql('Number of orders per year', index, 'mysql').sql).toContain("DATE_FORMAT(ordered_at, '%Y')");
  });

  it('expresses negation as NOT EXISTS and follows the verb through the FK graph', () => {
    const never = generateBuiltinSql('Which customers have never placed an order?', index, 'sqlite').sql;
    expect(never).toMatch(/NOT EXISTS \(SELECT 1 FROM orders WHERE orders\.customer_id = customers\.id\)/);
    // "bought" goes customers → orders → order_items → products, not via reviews.
    const bought = generateBuiltinSql('Which customers bought "Learning SQL"?', index, 'sqlite').sql;
    expect(bought).toContain('JOIN order_items');
    expect(bought).not.toContain('reviews');
  });

  for (const q of NONSENSE) {
    it(`refuses "${q}" with GenerationFailedError`, () => {
      expect(() => generateBuiltinSql(q, index, 'sqlite')).toThrow(GenerationFailedError);
    });
  }

  it('runs through generateSql with the guard and a dry run: validated, read-only', async () => {
    const deps = {
      provider: createProvider({ provider: 'builtin', timeoutMs: 1000 }),
      getSchema: async () => ctx,
      classify: (sql: string) => classifyStatement('sqlite', sql),
      validate: async (sql: string) => {
        try {
          db.prepare(sql);
        } catch (err) {
          throw new QueryFailedError((err as Error).message, { sqlState: null, position: null }, err);
        }
      },
      canWrite: false,
    };
    const out = await generateSql(deps, 'top 5 customers by revenue in 2025');
    expect(out).toMatchObject({ dialect: 'sqlite', provider: 'builtin', model: null, validated: true, attempts: 1 });
    expect(out.tables.sort()).toEqual(['customers', 'order_items', 'orders']);
    await expect(generateSql(deps, 'what is the meaning of life')).rejects.toBeInstanceOf(GenerationFailedError);
  });
});

// --- PostgreSQL ------------------------------------------------------------------------------

async function introspectPostgres(client: pg.Client, schema: string): Promise<SchemaTable[]> {
  const cols = await client.query<{ table_name: string; column_name: string; data_type: string; is_nullable: string }>(
    `SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns
      WHERE table_schema = $1 ORDER BY table_name, ordinal_position`,
    [schema],
  );
  const pks = await client.query<{ table_name: string; column_name: string }>(
    `SELECT kcu.table_name, kcu.column_name FROM information_schema.table_constraints tc
       JOIN information_schema.key_column_usage kcu
         ON kcu.constraint_schema = tc.constraint_schema AND kcu.constraint_name = tc.constraint_name
      WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_schema = $1`,
    [schema],
  );
  const fks = await client.query<{ tbl: string; conname: string; col: string; ref_table: string; ref_col: string }>(
    `SELECT cl.relname AS tbl, con.conname, att.attname AS col, rcl.relname AS ref_table, ratt.attname AS ref_col
       FROM pg_constraint con
       JOIN pg_class cl ON cl.oid = con.conrelid
       JOIN pg_namespace n ON n.oid = cl.relnamespace
       JOIN pg_class rcl ON rcl.oid = con.confrelid
       CROSS JOIN LATERAL unnest(con.conkey, con.confkey) WITH ORDINALITY AS k(attnum, refnum, ord)
       JOIN pg_attribute att ON att.attrelid = con.conrelid AND att.attnum = k.attnum
       JOIN pg_attribute ratt ON ratt.attrelid = con.confrelid AND ratt.attnum = k.refnum
      WHERE con.contype = 'f' AND n.nspname = $1 ORDER BY con.conname, k.ord`,
    [schema],
  );
  const tables = new Map<string, SchemaTable>();
  for (const c of cols.rows) {
    const t = tables.get(c.table_name) ?? { schema, name: c.table_name, kind: 'table' as const, columns: [], foreignKeys: [] };
    t.columns.push({
      name: c.column_name,
      type: c.data_type,
      nullable: c.is_nullable === 'YES',
      primaryKey: pks.rows.some((p) => p.table_name === c.table_name && p.column_name === c.column_name),
    });
    tables.set(c.table_name, t);
  }
  const byName = new Map<string, { tbl: string; columns: string[]; refTable: string; refColumns: string[] }>();
  for (const f of fks.rows) {
    const e = byName.get(f.conname) ?? { tbl: f.tbl, columns: [], refTable: f.ref_table, refColumns: [] };
    e.columns.push(f.col);
    e.refColumns.push(f.ref_col);
    byName.set(f.conname, e);
  }
  for (const e of byName.values()) {
    tables.get(e.tbl)!.foreignKeys.push({ columns: e.columns, refTable: e.refTable, refSchema: schema, refColumns: e.refColumns });
  }
  return [...tables.values()];
}

describe('builtin generator on PostgreSQL (sample shop in a fresh schema)', () => {
  const schema = `ai_test_${Math.random().toString(36).slice(2, 10)}`;
  let client: pg.Client;
  let index: SchemaIndex;
  let ctx: SchemaContext;

  beforeAll(async () => {
    client = new pg.Client({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' });
    client.on('error', () => {});
    await client.connect();
    await client.query(`CREATE SCHEMA ${schema}`);
    // Gold SQL below is unqualified; generated SQL names the schema itself.
    await client.query(`SET search_path TO ${schema}`);
    await client.query(readShopSql());
    const read = async (sql: string): Promise<unknown[][]> => (await client.query({ text: sql, rowMode: 'array' })).rows as unknown[][];
    ctx = await buildSchemaContext('postgres', await introspectPostgres(client, schema), read);
    index = new SchemaIndex(ctx);
  });
  afterAll(async () => {
    if (!client) return;
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  });

  const rows = async (sql: string): Promise<unknown[][]> => (await client.query({ text: sql, rowMode: 'array' })).rows as unknown[][];

  // Gold SQL of the set is SQLite; the date-bucket ones use strftime and get PostgreSQL
  // twins here, the rest run unchanged.
  const pgGold: Record<string, string> = {
    'Revenue by month in 2025':
      "SELECT to_char(o.ordered_at, 'YYYY-MM') AS month, SUM(oi.quantity * oi.unit_price) FROM order_items oi JOIN orders o ON o.id = oi.order_id WHERE o.ordered_at >= '2025-01-01' AND o.ordered_at < '2026-01-01' GROUP BY month ORDER BY month",
    'Number of orders per year': "SELECT to_char(ordered_at, 'YYYY') AS year, COUNT(*) FROM orders GROUP BY year ORDER BY year",
  };

  for (const category of CATEGORIES) {
    it(`${category}: representative questions return the gold rows`, async () => {
      const subset = questions.filter((q) => q.category === category && (!/strftime/.test(q.gold) || pgGold[q.question])).slice(0, 4);
      expect(subset.length).toBeGreaterThan(0);
      for (const q of subset) {
        const out = generateBuiltinSql(q.question, index, 'postgres');
        expect(out.sql).toContain(`${schema}.`); // tables outside public are qualified
        const gold = await rows(pgGold[q.question] ?? q.gold);
        const got = await rows(out.sql);
        expect({ q: q.question, sql: out.sql, same: sameResult(gold, got, ordered(q.gold)) }).toMatchObject({ same: true });
      }
    });
  }

  it('passes EXPLAIN for every question of the set', async () => {
    for (const q of questions) {
      const { sql } = generateBuiltinSql(q.question, index, 'postgres');
      await client.query(`EXPLAIN ${sql}`);
    }
  });

  it('refuses nonsense with GenerationFailedError', () => {
    expect(() => generateBuiltinSql('what is the meaning of life', index, 'postgres')).toThrow(GenerationFailedError);
  });
});
