// The pure parts of annotations: merging over the database's comments (the annotation wins,
// the cached schema is left alone, keys resolve by bare or schema-qualified name), the examples
// closest to a question, and how descriptions are written into an LLM prompt's schema text.
import { describe, expect, it } from 'vitest';
import type { SchemaTable } from '../src/engines/engine.ts';
import { applyAnnotations, TableNames } from '../src/annotations/merge.ts';
import { closestExamples, questionWords } from '../src/annotations/examples.ts';
import { renderSchema } from '../src/ai/schema-context.ts';

const table = (schema: string | null, name: string, extra: Partial<SchemaTable> = {}): SchemaTable => ({
  schema,
  name,
  kind: 'table',
  columns: [
    { name: 'id', type: 'integer', nullable: false, primaryKey: true },
    { name: 'total', type: 'numeric', nullable: true, primaryKey: false, description: 'gross, from the database' },
  ],
  foreignKeys: [],
  ...extra,
});

describe('applyAnnotations', () => {
  it('the annotation wins over the comment; a comment stays where none is given; the input is not changed', () => {
    const tables = [table('public', 'orders', { description: 'from COMMENT ON' }), table('public', 'customers', { description: 'people' })];
    const before = structuredClone(tables);
    const merged = applyAnnotations(tables, {
      tables: { orders: { description: 'One row per checkout', synonyms: ['purchases'], columns: { total: { synonyms: ['revenue'] } } } },
      examples: [],
    });
    expect(merged[0]).toMatchObject({ description: 'One row per checkout', synonyms: ['purchases'] });
    expect(merged[0].columns[1]).toMatchObject({ description: 'gross, from the database', synonyms: ['revenue'] });
    expect(merged[1]).toBe(tables[1]);
    expect(tables).toEqual(before);
  });

  it('resolves "schema.name" exactly, a bare name only when one schema has it', () => {
    const tables = [table('sales', 'orders'), table('archive', 'orders'), table('sales', 'items')];
    const names = new TableNames(tables);
    expect(names.resolve('archive.orders')).toBe(tables[1]);
    expect(names.resolve('orders')).toBe('ambiguous');
    expect(names.resolve('items')).toBe(tables[2]);
    expect(names.resolve('refunds')).toBeNull();
    const merged = applyAnnotations(tables, {
      tables: { 'archive.orders': { description: 'old' }, orders: { description: 'x' } },
      examples: [],
    });
    expect(merged.map((t) => t.description)).toEqual([undefined, 'old', undefined]);
  });
});

describe('closestExamples', () => {
  const examples = [
    { question: 'Customers by name', sql: 'SELECT 1' },
    { question: 'Revenue from paid invoices', sql: 'SELECT 2' },
    { question: 'Number of wholesale customers', sql: 'SELECT 3' },
    { question: 'Unpaid invoices of wholesale customers', sql: 'SELECT 4' },
  ];

  it('ranks by shared words scaled by length, keeps at most three, drops those sharing nothing', () => {
    expect(closestExamples(examples, 'revenue from paid invoices of wholesale customers').map((e) => e.sql)).toEqual([
      'SELECT 2',
      'SELECT 4',
      'SELECT 3',
    ]);
    expect(closestExamples(examples, 'weather tomorrow')).toEqual([]);
    expect(closestExamples(examples, 'the of and')).toEqual([]);
  });

  it('folds plurals and drops filler words', () => {
    expect([...questionWords('How many Invoices are there for the customers?')]).toEqual(['invoice', 'customer']);
  });
});

describe('renderSchema with descriptions', () => {
  it('writes descriptions and synonyms as one-line SQL comments, even when a comment has newlines', () => {
    const t = table(null, 'orders', { description: 'One row\nper checkout', synonyms: ['purchases'] });
    t.columns[1] = { ...t.columns[1], synonyms: ['revenue'] };
    const text = renderSchema({ engine: 'sqlite', tables: [t], samples: { 'orders.total': ['1'] } });
    expect(text).toBe(
      [
        '-- One row per checkout; also called: purchases',
        'CREATE TABLE orders (',
        '  id integer NOT NULL,',
        "  total numeric, -- gross, from the database; also called: revenue; values: '1'",
        '  PRIMARY KEY (id)',
        ');',
      ].join('\n'),
    );
  });
});
