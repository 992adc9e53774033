// Helpers for the builtin parser's unit tests: a synthetic shop schema (the tables of the
// sample shop database, typed and sampled by hand, no database opened) and a way to run the
// parser's passes up to and including one of them, to look at the parse state it leaves.
import type { SchemaTable } from '../../src/engines/engine.ts';
import { linkQuestion } from '../../src/ai/builtin/link.ts';
import { PASSES } from '../../src/ai/builtin/parse.ts';
import { createParseState, type ParseState } from '../../src/ai/builtin/parse-state.ts';
import { SchemaIndex } from '../../src/ai/builtin/schema-index.ts';
import { tokenize } from '../../src/ai/builtin/text.ts';
import type { SchemaContext } from '../../src/ai/schema-context.ts';

type Column = [name: string, type: string, primaryKey?: boolean];
type Reference = [column: string, refTable: string];

function table(name: string, columns: Column[], references: Reference[] = []): SchemaTable {
  return {
    schema: null,
    name,
    kind: 'table',
    columns: columns.map(([n, type, pk]) => ({ name: n, type, nullable: false, primaryKey: pk === true })),
    foreignKeys: references.map(([column, refTable]) => ({ columns: [column], refSchema: null, refTable, refColumns: ['id'] })),
  };
}

export function shopContext(): SchemaContext {
  return {
    engine: 'sqlite',
    tables: [
      table('categories', [
        ['id', 'INTEGER', true],
        ['name', 'VARCHAR(100)'],
        ['description', 'VARCHAR(255)'],
      ]),
      table(
        'products',
        [
          ['id', 'INTEGER', true],
          ['name', 'VARCHAR(200)'],
          ['category_id', 'INTEGER'],
          ['price', 'NUMERIC(10,2)'],
          ['stock', 'INTEGER'],
          ['created_at', 'TIMESTAMP'],
        ],
        [['category_id', 'categories']],
      ),
      table('customers', [
        ['id', 'INTEGER', true],
        ['first_name', 'VARCHAR(100)'],
        ['last_name', 'VARCHAR(100)'],
        ['email', 'VARCHAR(255)'],
        ['city', 'VARCHAR(100)'],
        ['country', 'VARCHAR(100)'],
        ['created_at', 'TIMESTAMP'],
      ]),
      table(
        'orders',
        [
          ['id', 'INTEGER', true],
          ['customer_id', 'INTEGER'],
          ['status', 'VARCHAR(20)'],
          ['ordered_at', 'TIMESTAMP'],
          ['total', 'NUMERIC(10,2)'],
        ],
        [['customer_id', 'customers']],
      ),
      table(
        'order_items',
        [
          ['id', 'INTEGER', true],
          ['order_id', 'INTEGER'],
          ['product_id', 'INTEGER'],
          ['quantity', 'INTEGER'],
          ['unit_price', 'NUMERIC(10,2)'],
        ],
        [
          ['order_id', 'orders'],
          ['product_id', 'products'],
        ],
      ),
      table(
        'reviews',
        [
          ['id', 'INTEGER', true],
          ['product_id', 'INTEGER'],
          ['customer_id', 'INTEGER'],
          ['rating', 'INTEGER'],
          ['created_at', 'TIMESTAMP'],
        ],
        [
          ['product_id', 'products'],
          ['customer_id', 'customers'],
        ],
      ),
    ],
    samples: {
      'orders.status': ['pending', 'paid', 'shipped', 'delivered', 'canceled'],
      'customers.city': ['Berlin', 'Paris', 'Madrid'],
      'customers.country': ['Germany', 'France', 'Spain'],
      'categories.name': ['Books', 'Toys', 'Electronics'],
    },
  };
}

let shared: SchemaIndex | null = null;

/** The shop schema's index, built once per test file. */
export function shopIndex(): SchemaIndex {
  shared ??= new SchemaIndex(shopContext());
  return shared;
}

/** The parse state after the passes up to and including `lastPass` (a name in PASSES). */
export function parseThrough(question: string, lastPass: string, index: SchemaIndex = shopIndex()): ParseState {
  const last = PASSES.findIndex((p) => p.name === lastPass);
  if (last < 0) throw new Error(`no parser pass named ${lastPass}`);
  const tokens = tokenize(question);
  const state = createParseState(tokens, linkQuestion(tokens, index), index);
  for (const pass of PASSES.slice(0, last + 1)) pass.run(state);
  return state;
}

/** The words a pass left unconsumed, to show what it took. */
export function unconsumedWords(state: ParseState): string[] {
  return state.tokens.filter((_, i) => !state.consumed[i]).map((t) => t.raw);
}
