// The one-sentence explanation that comes with builtin SQL, in the words a person would use:
// "Counts orders for each status, largest first.", "Finds the city with the most customers.",
// "Lists products (name) where price is above 100, cheapest first." Schema names are spoken
// as words ("ordered_at" → "ordered at"); a word is never doubled ("total total").
import type { Aggregate, CompareOp, Condition, Item, Measure, Plan } from './plan.ts';
import type { SchemaIndex } from './schema-index.ts';
import { singular } from './text.ts';

function words(name: string): string {
  return name
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .replace(/_/g, ' ')
    .toLowerCase()
    .trim();
}

function singularWords(table: string): string {
  return words(table)
    .replace(/ies$/, 'y')
    .replace(/(ss|sh|ch|x)es$/, '$1')
    .replace(/(?<!s)s$/, '');
}

function pluralWords(table: string): string {
  const w = words(table);
  // Already plural ("orders", "people"): as written.
  if (singular(w.split(' ').pop() ?? w) !== (w.split(' ').pop() ?? w)) return w;
  const s = singularWords(table);
  if (/[^aeiou]y$/.test(s)) return `${s.slice(0, -1)}ies`;
  if (/(s|sh|ch|x)$/.test(s)) return `${s}es`;
  return `${s}s`;
}

function joinAnd(parts: string[]): string {
  if (parts.length <= 1) return parts.join('');
  return `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]}`;
}

const FN_WORD = { count: 'number', sum: 'total', avg: 'average', min: 'lowest', max: 'highest' } as const;
const FN_PLAIN = { count: 'number', sum: 'sum', avg: 'mean', min: 'minimum', max: 'maximum' } as const;

/** "the average price of products"; "the sum of total" where the column already says total. */
function aggText(a: Aggregate, subject: string): string {
  const m = a.measure;
  if (m.kind === 'rows') return `the number of ${pluralWords(m.table)}`;
  const of = measureOf(m, subject);
  if (a.fn === 'count') return `the number of ${a.distinct ? 'distinct ' : ''}${of}`;
  const head = of.split(' ')[0];
  const fnWord = FN_WORD[a.fn];
  return head === fnWord || head === FN_PLAIN[a.fn] ? `the ${FN_PLAIN[a.fn]} of ${of}` : `the ${fnWord} ${of}`;
}

function measureOf(m: Measure, subject: string): string {
  if (m.kind === 'rows') return pluralWords(m.table);
  if (m.kind === 'line') return `revenue (${words(m.quantity)} × ${words(m.price)} of ${words(m.table)})`;
  const col = words(m.column.column);
  return m.column.table === subject || col.startsWith(singularWords(m.column.table)) ? col : `${col} of ${pluralWords(m.column.table)}`;
}

/** A column as a reader would name it: bare on the subject, with its table's noun elsewhere. */
function columnText(table: string, column: string, subject: string): string {
  const col = words(column);
  if (table === subject || col.startsWith(singularWords(table))) return col;
  return `${singularWords(table)} ${col}`;
}

function itemText(it: Item, index: SchemaIndex, subject: string): string {
  switch (it.kind) {
    case 'column':
      return columnText(it.column.table, it.column.column, subject);
    case 'label': {
      const info = index.table(it.table);
      return info.label.length > 0 ? `${pluralWords(it.table)} (${info.label.map(words).join(', ')})` : pluralWords(it.table);
    }
    case 'aggregate':
      return aggText(it.aggregate, subject);
    case 'bucket':
      return `${it.part} of ${words(it.column.column)}`;
  }
}

/** What a group is called in "for each …". */
function groupText(it: Item, index: SchemaIndex, subject: string): string {
  if (it.kind === 'label') return singularWords(it.table);
  if (it.kind === 'bucket') return `${it.part} (of ${words(it.column.column)})`;
  // Grouped by a name: "for each teacher", not "for each name".
  if (it.kind === 'column' && index.table(it.column.table).label.includes(it.column.column)) return singularWords(it.column.table);
  return itemText(it, index, subject);
}

const OPS: Record<CompareOp, string> = {
  '>': 'above',
  '>=': 'at least',
  '<': 'below',
  '<=': 'at most',
  '=': 'equal to',
  '<>': 'not equal to',
};
const COUNT_OPS: Record<CompareOp, string> = {
  '>': 'more than',
  '>=': 'at least',
  '<': 'fewer than',
  '<=': 'at most',
  '=': 'exactly',
  '<>': 'other than',
};

function literal(v: string | number): string {
  return typeof v === 'number' ? String(v) : `'${v}'`;
}

/** A half-open range that is one calendar year or month reads as "in 2024" / "in 2024-03". */
function rangeText(from: string | null, to: string | null): string {
  if (from && to) {
    const y = /^(\d{4})-01-01$/.exec(from);
    if (y && to === `${Number(y[1]) + 1}-01-01`) return `in ${y[1]}`;
    const mo = /^(\d{4})-(\d{2})-01$/.exec(from);
    if (mo) {
      const next = Number(mo[2]) === 12 ? `${Number(mo[1]) + 1}-01-01` : `${mo[1]}-${String(Number(mo[2]) + 1).padStart(2, '0')}-01`;
      if (to === next) return `in ${mo[1]}-${mo[2]}`;
    }
    return `from ${from} up to (not including) ${to}`;
  }
  if (from) return `on or after ${from}`;
  return `before ${to}`;
}

function condText(c: Condition, subject: string): string {
  const col = columnText(c.column.table, c.column.column, subject);
  switch (c.kind) {
    case 'compare':
      return `${col} is ${OPS[c.op]} ${literal(c.value)}`;
    case 'in':
      return `${col} is ${c.negate ? 'not ' : ''}${c.values.map(literal).join(' or ')}`;
    case 'like':
      return `${col} ${c.negate ? 'does not ' : ''}${c.how === 'prefix' ? 'start' : c.how === 'suffix' ? 'end' : 'contain'}${c.negate ? '' : 's'}${c.how === 'contains' ? '' : ' with'} '${c.pattern}'`;
    case 'range':
      return `${col} is ${rangeText(c.from, c.to)}`;
    case 'null':
      return `${col} is ${c.negate ? 'set' : 'missing'}`;
    case 'versus': {
      const of = c.of.column === c.column.column && c.of.table === c.column.table ? '' : ` ${words(c.of.column)}`;
      return `${col} is ${OPS[c.op]} the ${FN_PLAIN[c.fn] === 'mean' ? 'average' : FN_WORD[c.fn]}${of} of all ${pluralWords(c.of.table)}`;
    }
  }
}

type SortKind = 'count' | 'text' | 'date' | 'number';

function sortKind(it: Item, index: SchemaIndex): SortKind {
  if (it.kind === 'aggregate') return it.aggregate.fn === 'count' ? 'count' : 'number';
  if (it.kind === 'bucket') return 'date';
  if (it.kind === 'label') return 'text';
  const info = index.col(it.column.table, it.column.column);
  if (!info) return 'number';
  if (info.date) return 'date';
  return info.numeric || info.year ? 'number' : 'text';
}

/** "largest first", "newest first", "alphabetically", "in reverse alphabetical order". */
function directionText(kind: SortKind, dir: 'ASC' | 'DESC'): string {
  switch (kind) {
    case 'count':
      return dir === 'DESC' ? 'largest first' : 'smallest first';
    case 'date':
      return dir === 'DESC' ? 'newest first' : 'oldest first';
    case 'text':
      return dir === 'DESC' ? 'in reverse alphabetical order' : 'alphabetically';
    case 'number':
      return dir === 'DESC' ? 'highest first' : 'lowest first';
  }
}

/** "the most customers", "the highest price", "the newest ordered at". */
function extremeText(it: Item, dir: 'ASC' | 'DESC', index: SchemaIndex, subject: string): string {
  if (it.kind === 'aggregate' && it.aggregate.fn === 'count' && it.aggregate.measure.kind === 'rows')
    return `the ${dir === 'DESC' ? 'most' : 'fewest'} ${pluralWords(it.aggregate.measure.table)}`;
  const kind = sortKind(it, index);
  const text = itemText(it, index, subject).replace(/^the /, '');
  if (kind === 'date') return `the ${dir === 'DESC' ? 'latest' : 'earliest'} ${text}`;
  if (kind === 'text') return `the ${dir === 'DESC' ? 'last' : 'first'} ${text} alphabetically`;
  return `the ${dir === 'DESC' ? 'highest' : 'lowest'} ${text}`;
}

/** One sentence on what the SQL does. `plan` is the parser's; `full` has the SELECT list and
 * GROUP BY that buildSql completed (grouped columns added to the select list and back). */
export function explainPlan(plan: Plan, full: Plan, index: SchemaIndex, ties = false): string {
  const subject = plan.subject;
  const aggItems = full.select.filter((s): s is Extract<Item, { kind: 'aggregate' }> => s.kind === 'aggregate');
  const groups = full.groupBy;
  // A label already names its columns: "categories (name)", not "categories (name) and name".
  const labelled = (it: Item): boolean =>
    it.kind === 'column' &&
    full.select.some((l) => l.kind === 'label' && l.table === it.column.table && index.table(l.table).label.includes(it.column.column));
  const plain = full.select.filter(
    (s) => s.kind !== 'aggregate' && !groups.some((g) => JSON.stringify(g) === JSON.stringify(s)) && !labelled(s),
  );
  const superlative = plan.limit === 1 && plan.orderBy.length === 1 && plan.orderBy[0].item.kind !== 'bucket';
  const countsOnly = aggItems.length > 0 && aggItems.every((a) => a.aggregate.fn === 'count' && a.aggregate.measure.kind === 'rows');
  const aggList = (): string => {
    // "the average, lowest and highest age of singers": functions of one measure share it.
    const measures = new Set(aggItems.map((a) => JSON.stringify(a.aggregate.measure)));
    const a0 = aggItems[0]?.aggregate;
    if (
      measures.size === 1 &&
      aggItems.length > 1 &&
      a0 &&
      a0.measure.kind === 'column' &&
      !aggItems.some((a) => a.aggregate.fn === 'count')
    )
      return `the ${joinAnd(aggItems.map((a) => FN_WORD[a.aggregate.fn]))} ${measureOf(a0.measure, subject)}`;
    return joinAnd(aggItems.map((a) => aggText(a.aggregate, subject)));
  };
  const groupList = joinAnd(groups.map((g) => groupText(g, index, subject)));

  let s: string;
  if (superlative) {
    const o = plan.orderBy[0];
    const shownCols = plain.filter((p) => p.kind !== 'label' && JSON.stringify(p) !== JSON.stringify(o.item));
    const subjectLabel = index.table(subject).label;
    const labelText =
      plain.some((p) => p.kind === 'label' && p.table === subject) && subjectLabel.length > 0
        ? ` (${subjectLabel.map(words).join(', ')})`
        : '';
    const target =
      groups.length > 0
        ? `the ${groupList}`
        : shownCols.length > 0 && !labelText
          ? `${joinAnd(shownCols.map((p) => itemText(p, index, subject)))} of the ${singularWords(subject)}`
          : `the ${singularWords(subject)}${labelText}`;
    s = `Finds ${target} with ${extremeText(o.item, o.dir, index, subject)}${ties ? ' (all of them when several tie)' : ''}`;
    const shown = aggItems.filter((a) => JSON.stringify(a) !== JSON.stringify(o.item));
    if (shown.length > 0) s += `, showing ${joinAnd(shown.map((a) => aggText(a.aggregate, subject)))}`;
  } else if (aggItems.length > 0 && plain.length === 0) {
    const only = aggItems.length === 1 ? aggItems[0].aggregate : null;
    if (countsOnly && only && only.measure.kind === 'rows') s = `Counts ${pluralWords(only.measure.table)}`;
    else if (only && only.fn === 'count' && only.distinct && only.measure.kind === 'column')
      s = `Counts the distinct ${pluralWords(only.measure.column.column)} of ${pluralWords(only.measure.column.table)}`;
    else s = `Computes ${aggList()}`;
    if (groups.length > 0) s += ` for each ${groupList}`;
  } else {
    s = `Lists ${joinAnd([...groups, ...plain].map((p) => itemText(p, index, subject)))}`;
    if (plain.length > 0 && plain.every((p) => p.kind === 'column' && p.column.table === subject) && groups.length === 0)
      s += ` of ${pluralWords(subject)}`;
    if (aggItems.length > 0) s += ` with ${aggList()}${groups.length > 0 ? ` for each ${groupList}` : ''}`;
  }

  // Related rows read as what the rows have: "customers that have no orders in 2025".
  const have: string[] = [];
  const counted = new Set(
    [...aggItems.map((a) => a.aggregate), ...plan.having.map((h) => h.aggregate), ...plan.orderBy.map((o) => o.item)]
      .map((a) => ('measure' in a ? a.measure : 'aggregate' in a ? a.aggregate.measure : null))
      .filter((m): m is Measure => m !== null && m.kind === 'rows')
      .map((m) => (m as { table: string }).table),
  );
  for (const e of plan.exists) {
    // "has at least 8 orders" already says it has orders.
    if (!e.negate && e.conditions.length === 0 && counted.has(e.target)) continue;
    const inner = e.conditions.length > 0 ? ` where ${e.conditions.map((c) => condText(c, subject)).join(' and ')}` : '';
    have.push(`${e.negate ? 'no ' : ''}${pluralWords(e.target)}${inner}`);
  }
  for (const c of plan.counts) {
    const inner = c.conditions.length > 0 ? ` where ${c.conditions.map((x) => condText(x, subject)).join(' and ')}` : '';
    have.push(`${COUNT_OPS[c.op]} ${c.value} ${pluralWords(c.target)}${inner}`);
  }
  if (have.length > 0) s += ` that have ${have.join(' and ')}`;
  const conditions = plan.conditions.map((c) => condText(c, subject));
  if (conditions.length > 0) s += `, where ${conditions.join(' and ')}`;
  if (plan.having.length > 0) {
    const parts = plan.having.map((h) =>
      h.aggregate.fn === 'count' && h.aggregate.measure.kind === 'rows'
        ? `${COUNT_OPS[h.op]} ${h.value} ${pluralWords(h.aggregate.measure.table)}`
        : `${aggText(h.aggregate, subject)} ${OPS[h.op]} ${h.value}`,
    );
    s += `, keeping only those with ${parts.join(' and ')}`;
  }
  if (!superlative && plan.orderBy.length > 0) {
    const keys = plan.orderBy.map((o, k) => {
      const dir = directionText(sortKind(o.item, index), o.dir);
      // The only aggregate shown is the sort key: "Counts orders for each status, largest first."
      if (k === 0 && o.item.kind === 'aggregate' && aggItems.length === 1 && JSON.stringify(aggItems[0]) === JSON.stringify(o.item))
        return dir;
      if (k === 0 && o.item.kind === 'bucket' && groups.some((g) => JSON.stringify(g) === JSON.stringify(o.item))) return dir;
      if (o.item.kind === 'label') return dir;
      return `sorted by ${itemText(o.item, index, subject).replace(/^the /, '')}, ${dir}`;
    });
    s += `, ${keys.join(', then ')}`;
  }
  if (!superlative && plan.limit !== null) s += plan.limit === 1 ? ', first row only' : `, top ${plan.limit} only`;
  return `${s}.`;
}
