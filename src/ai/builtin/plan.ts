// The builtin generator's intermediate form: what the question asks, in schema terms, before
// any SQL text. parse.ts fills it from the question; build-sql.ts turns it into SQL for a
// dialect, choosing the base table, the joins along foreign keys and EXISTS subqueries.
import type { DatePart } from '../dialect.ts';

export type AggFn = 'count' | 'sum' | 'avg' | 'min' | 'max';
export type Cmp = '>' | '>=' | '<' | '<=' | '=' | '<>';

export interface ColRef {
  table: string;
  column: string;
}

export type Measure =
  /** A column's values. */
  | { k: 'col'; c: ColRef }
  /** quantity × unit price of a line-items table ("revenue", "sales"). */
  | { k: 'line'; table: string; qty: string; price: string }
  /** The rows of a table (COUNT(*)). */
  | { k: 'rows'; table: string };

export interface Agg {
  fn: AggFn;
  m: Measure;
  distinct?: boolean;
}

export type Item =
  | { k: 'col'; c: ColRef }
  /** The columns that identify a row of the table to a reader (name, first+last name, title). */
  | { k: 'label'; table: string }
  | { k: 'agg'; a: Agg }
  | { k: 'bucket'; c: ColRef; part: DatePart };

export type Cond =
  | { k: 'cmp'; c: ColRef; op: Cmp; value: number | string }
  | { k: 'in'; c: ColRef; values: (string | number)[]; negate: boolean }
  | { k: 'like'; c: ColRef; pattern: string; negate: boolean; how: 'prefix' | 'suffix' | 'contains' }
  /** from inclusive, to exclusive (ISO dates). */
  | { k: 'range'; c: ColRef; from: string | null; to: string | null }
  | { k: 'null'; c: ColRef; negate: boolean };

/** Rows of `subject` for which a related `target` row exists (or, negated, none does). */
export interface ExistsCond {
  negate: boolean;
  target: string;
  conds: Cond[];
}

/** (SELECT COUNT(*) of related `target` rows) op value, correlated with the subject; used
 * where zero related rows must still count ("fewer than 2 orders"). */
export interface CountCond {
  target: string;
  op: Cmp;
  value: number;
  conds: Cond[];
}

export interface Plan {
  /** The table whose rows the question is about. */
  subject: string;
  select: Item[];
  distinct: boolean;
  conds: Cond[];
  exists: ExistsCond[];
  counts: CountCond[];
  groupBy: Item[];
  having: { a: Agg; op: Cmp; value: number }[];
  orderBy: { item: Item; dir: 'ASC' | 'DESC' }[];
  limit: number | null;
  /** Tables a join path should pass through when there is a choice (named by verbs). */
  via: string[];
}

export function emptyPlan(subject: string): Plan {
  return { subject, select: [], distinct: false, conds: [], exists: [], counts: [], groupBy: [], having: [], orderBy: [], limit: null, via: [] };
}

export function measureTable(m: Measure): string {
  return m.k === 'col' ? m.c.table : m.table;
}

export function sameItem(a: Item, b: Item): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
