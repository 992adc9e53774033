// The builtin generator's intermediate form: what the question asks, in schema terms, before
// any SQL text. parse.ts fills it from the question; build-sql.ts turns it into SQL for a
// dialect, choosing the base table, the joins along foreign keys and EXISTS subqueries.
import type { DatePart } from '../dialect.ts';

export type AggregateFn = 'count' | 'sum' | 'avg' | 'min' | 'max';
export type CompareOp = '>' | '>=' | '<' | '<=' | '=' | '<>';

export interface ColumnRef {
  table: string;
  column: string;
}

export type Measure =
  /** A column's values. */
  | { kind: 'column'; column: ColumnRef }
  /** quantity × unit price of a line-items table ("revenue", "sales"). */
  | { kind: 'line'; table: string; quantity: string; price: string }
  /** The rows of a table (COUNT(*)). */
  | { kind: 'rows'; table: string };

export interface Aggregate {
  fn: AggregateFn;
  measure: Measure;
  distinct?: boolean;
}

export type Item =
  | { kind: 'column'; column: ColumnRef }
  /** The columns that identify a row of the table to a reader (name, first+last name, title). */
  | { kind: 'label'; table: string }
  | { kind: 'aggregate'; aggregate: Aggregate }
  | { kind: 'bucket'; column: ColumnRef; part: DatePart };

export type Condition =
  | { kind: 'compare'; column: ColumnRef; op: CompareOp; value: number | string }
  | { kind: 'in'; column: ColumnRef; values: (string | number)[]; negate: boolean }
  | { kind: 'like'; column: ColumnRef; pattern: string; negate: boolean; how: 'prefix' | 'suffix' | 'contains' }
  /** from inclusive, to exclusive (ISO dates). */
  | { kind: 'range'; column: ColumnRef; from: string | null; to: string | null }
  | { kind: 'null'; column: ColumnRef; negate: boolean }
  /** column op (SELECT fn(of) FROM of's table): "older than the average", "above the minimum". */
  | { kind: 'versus'; column: ColumnRef; op: CompareOp; fn: 'avg' | 'min' | 'max'; of: ColumnRef };

/** Rows of `subject` for which a related `target` row exists (or, negated, none does). */
export interface ExistsCondition {
  negate: boolean;
  target: string;
  conditions: Condition[];
}

/** (SELECT COUNT(*) of related `target` rows) op value, correlated with the subject; used
 * where zero related rows must still count ("fewer than 2 orders"). */
export interface CountCondition {
  target: string;
  op: CompareOp;
  value: number;
  conditions: Condition[];
}

export interface Plan {
  /** The table whose rows the question is about. */
  subject: string;
  select: Item[];
  distinct: boolean;
  conditions: Condition[];
  exists: ExistsCondition[];
  counts: CountCondition[];
  groupBy: Item[];
  having: { aggregate: Aggregate; op: CompareOp; value: number }[];
  orderBy: { item: Item; dir: 'ASC' | 'DESC' }[];
  limit: number | null;
  /** Tables a join path should pass through when there is a choice (named by verbs). */
  via: string[];
}

export function emptyPlan(subject: string): Plan {
  return {
    subject,
    select: [],
    distinct: false,
    conditions: [],
    exists: [],
    counts: [],
    groupBy: [],
    having: [],
    orderBy: [],
    limit: null,
    via: [],
  };
}

export function measureTable(m: Measure): string {
  return m.kind === 'column' ? m.column.table : m.table;
}

export function sameItem(a: Item, b: Item): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
