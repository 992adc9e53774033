// The one-sentence explanation that comes with builtin SQL: what it lists or computes, per
// what, under which conditions, sorted how, limited to what; in the schema's own words.
import type { Agg, Cond, Item, Measure, Plan } from './plan.ts';
import type { SchemaIndex } from './schema-index.ts';

function words(name: string): string {
  return name.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/_/g, ' ').toLowerCase();
}

function measureText(m: Measure): string {
  if (m.k === 'rows') return `${words(m.table)}`;
  if (m.k === 'line') return `revenue (${m.qty} × ${m.price} of ${words(m.table)})`;
  return `${words(m.c.column)} of ${words(m.c.table)}`;
}

function aggText(a: Agg): string {
  if (a.m.k === 'rows') return `the number of ${measureText(a.m)}`;
  const fn = { count: a.distinct ? 'the number of distinct' : 'the number of', sum: 'the total', avg: 'the average', min: 'the lowest', max: 'the highest' }[a.fn];
  return `${fn} ${measureText(a.m)}`;
}

function itemText(it: Item, idx: SchemaIndex): string {
  switch (it.k) {
    case 'col':
      return words(it.c.column);
    case 'label': {
      const info = idx.table(it.table);
      return info.label.length > 0 ? `${words(it.table)} (${info.label.map(words).join(', ')})` : words(it.table);
    }
    case 'agg':
      return aggText(it.a);
    case 'bucket':
      return `${it.part} of ${words(it.c.column)}`;
  }
}

const OPS: Record<string, string> = { '>': 'above', '>=': 'at least', '<': 'below', '<=': 'at most', '=': 'equal to', '<>': 'not equal to' };

function singularWords(table: string): string {
  return words(table).replace(/ies$/, 'y').replace(/(?<!s)s$/, '');
}

function condText(c: Cond): string {
  const own = words(c.c.column);
  const col = own.startsWith(singularWords(c.c.table)) ? own : `${singularWords(c.c.table)} ${own}`;
  switch (c.k) {
    case 'cmp':
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
  }
}

/** One sentence on what the SQL does. `plan` is the parser's; `full` has the SELECT list and
 * GROUP BY that buildSql completed (grouped columns added to the select list and back). */
export function explainPlan(plan: Plan, full: Plan, idx: SchemaIndex): string {
  const aggItems = full.select.filter((s) => s.k === 'agg');
  const plain = full.select.filter((s) => s.k !== 'agg');
  let s: string;
  if (aggItems.length > 0 && plain.length === 0) {
    s = `Computes ${aggItems.map((a) => itemText(a, idx)).join(', ')}`;
  } else {
    s = `Lists ${plain.map((p) => itemText(p, idx)).join(', ')}`;
    if (aggItems.length > 0) s += ` with ${aggItems.map((a) => itemText(a, idx)).join(', ')}`;
  }
  if (full.groupBy.length > 0) {
    s += ` for each ${full.groupBy.map((g) => (g.k === 'label' ? singularWords(g.table) : itemText(g, idx))).join(' and ')}`;
  }
  const conds = plan.conds.map(condText);
  for (const e of plan.exists) {
    const inner = e.conds.length > 0 ? ` where ${e.conds.map(condText).join(' and ')}` : '';
    conds.push(`${e.negate ? 'there is no' : 'there is a'} related row in ${words(e.target)}${inner}`);
  }
  for (const c of plan.counts) conds.push(`the number of related ${words(c.target)} is ${OPS[c.op]} ${c.value}`);
  if (conds.length > 0) s += `, where ${conds.join(' and ')}`;
  if (plan.having.length > 0) s += `, keeping groups where ${plan.having.map((h) => `${aggText(h.a)} is ${OPS[h.op]} ${h.value}`).join(' and ')}`;
  if (plan.orderBy.length > 0) {
    s += `, sorted by ${plan.orderBy.map((o) => `${itemText(o.item, idx)} ${o.dir === 'DESC' ? 'descending' : 'ascending'}`).join(', ')}`;
  }
  if (plan.limit !== null) s += plan.limit === 1 ? ', first row only' : `, first ${plan.limit} rows`;
  return `${s}.`;
}
