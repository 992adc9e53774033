// The one-sentence explanation that comes with builtin SQL: what it lists or computes, per
// what, under which conditions, sorted how, limited to what; in the schema's own words.
import type { Aggregate, Condition, Item, Measure, Plan } from './plan.ts';
import type { SchemaIndex } from './schema-index.ts';

function words(name: string): string {
  return name
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .replace(/_/g, ' ')
    .toLowerCase();
}

function measureText(m: Measure): string {
  if (m.kind === 'rows') return `${words(m.table)}`;
  if (m.kind === 'line') return `revenue (${m.quantity} × ${m.price} of ${words(m.table)})`;
  return `${words(m.column.column)} of ${words(m.column.table)}`;
}

function aggText(a: Aggregate): string {
  if (a.measure.kind === 'rows') return `the number of ${measureText(a.measure)}`;
  const fn = {
    count: a.distinct ? 'the number of distinct' : 'the number of',
    sum: 'the total',
    avg: 'the average',
    min: 'the lowest',
    max: 'the highest',
  }[a.fn];
  return `${fn} ${measureText(a.measure)}`;
}

function itemText(it: Item, index: SchemaIndex): string {
  switch (it.kind) {
    case 'column':
      return words(it.column.column);
    case 'label': {
      const info = index.table(it.table);
      return info.label.length > 0 ? `${words(it.table)} (${info.label.map(words).join(', ')})` : words(it.table);
    }
    case 'aggregate':
      return aggText(it.aggregate);
    case 'bucket':
      return `${it.part} of ${words(it.column.column)}`;
  }
}

const OPS: Record<string, string> = {
  '>': 'above',
  '>=': 'at least',
  '<': 'below',
  '<=': 'at most',
  '=': 'equal to',
  '<>': 'not equal to',
};

function singularWords(table: string): string {
  return words(table)
    .replace(/ies$/, 'y')
    .replace(/(?<!s)s$/, '');
}

function condText(c: Condition): string {
  const own = words(c.column.column);
  const col = own.startsWith(singularWords(c.column.table)) ? own : `${singularWords(c.column.table)} ${own}`;
  switch (c.kind) {
    case 'compare':
      return `${col} is ${OPS[c.op]} ${c.value}`;
    case 'in':
      return `${col} is ${c.negate ? 'not ' : ''}${c.values.map((v) => `'${v}'`).join(' or ')}`;
    case 'like':
      return `${col} ${c.negate ? 'does not ' : ''}${c.how === 'prefix' ? 'start' : c.how === 'suffix' ? 'end' : 'contain'}${c.negate ? '' : 's'}${c.how === 'contains' ? '' : ' with'} '${c.pattern}'`;
    case 'range':
      if (c.from && c.to) return `${col} is from ${c.from} up to (not including) ${c.to}`;
      if (c.from) return `${col} is on or after ${c.from}`;
      return `${col} is before ${c.to}`;
    case 'null':
      return `${col} is ${c.negate ? 'set' : 'missing'}`;
    case 'versus': {
      const fn = { avg: 'the average', min: 'the lowest', max: 'the highest' }[c.fn];
      return `${col} is ${OPS[c.op]} ${fn} ${words(c.of.column)} of all ${words(c.of.table)}`;
    }
  }
}

/** One sentence on what the SQL does. `plan` is the parser's; `full` has the SELECT list and
 * GROUP BY that buildSql completed (grouped columns added to the select list and back). */
export function explainPlan(plan: Plan, full: Plan, index: SchemaIndex): string {
  const aggItems = full.select.filter((s) => s.kind === 'aggregate');
  const plain = full.select.filter((s) => s.kind !== 'aggregate');
  let s: string;
  if (aggItems.length > 0 && plain.length === 0) {
    s = `Computes ${aggItems.map((a) => itemText(a, index)).join(', ')}`;
  } else {
    s = `Lists ${plain.map((p) => itemText(p, index)).join(', ')}`;
    if (aggItems.length > 0) s += ` with ${aggItems.map((a) => itemText(a, index)).join(', ')}`;
  }
  if (full.groupBy.length > 0) {
    s += ` for each ${full.groupBy.map((g) => (g.kind === 'label' ? singularWords(g.table) : itemText(g, index))).join(' and ')}`;
  }
  const conditions = plan.conditions.map(condText);
  for (const e of plan.exists) {
    const inner = e.conditions.length > 0 ? ` where ${e.conditions.map(condText).join(' and ')}` : '';
    conditions.push(`${e.negate ? 'there is no' : 'there is a'} related row in ${words(e.target)}${inner}`);
  }
  for (const c of plan.counts) conditions.push(`the number of related ${words(c.target)} is ${OPS[c.op]} ${c.value}`);
  if (conditions.length > 0) s += `, where ${conditions.join(' and ')}`;
  if (plan.having.length > 0)
    s += `, keeping groups where ${plan.having.map((h) => `${aggText(h.aggregate)} is ${OPS[h.op]} ${h.value}`).join(' and ')}`;
  if (plan.orderBy.length > 0) {
    s += `, sorted by ${plan.orderBy.map((o) => `${itemText(o.item, index)} ${o.dir === 'DESC' ? 'descending' : 'ascending'}`).join(', ')}`;
  }
  if (plan.limit !== null) s += plan.limit === 1 ? ', first row only' : `, first ${plan.limit} rows`;
  return `${s}.`;
}
