// Plan → SQL text for one dialect. Decisions made here, not in the parser:
// - the base (FROM) table: the table being aggregated when there is an aggregate, else the
//   subject; chosen so the joins fan out as little as possible;
// - joins follow the shortest foreign-key path (BFS) from the base; a join towards the
//   referenced side never multiplies rows, a condition on the referencing ("many") side
//   becomes EXISTS (…) instead, so "customers who ordered in 2025" lists each customer once;
// - counts over a fanned-out join count DISTINCT keys;
// - dates are compared as ranges (col >= '2025-01-01' AND col < '2026-01-01'), which works on
//   all three engines and on SQLite's text timestamps, instead of YEAR()/EXTRACT/strftime.
// The one-sentence explanation of a plan is explain.ts. buildSql stays one function: the
// SELECT list, ORDER BY, joins and subqueries all read the same join tree, qualification
// flag and alias map, which would otherwise travel as a context object through every piece.
import type { EngineName } from '../../engines/engine.ts';
import { GenerationFailedError } from '../../errors.ts';
import { dateBucket, quoteIdent, quoteString, tableRef } from '../dialect.ts';
import { explainPlan } from './explain.ts';
import type { Aggregate, ColumnRef, Condition, Item, Measure, Plan } from './plan.ts';
import { measureTable, sameItem } from './plan.ts';
import type { SchemaIndex, Step } from './schema-index.ts';

export interface BuiltSql {
  sql: string;
  explanation: string;
  tables: string[];
}

interface Tree {
  root: string;
  /** table → the step that reached it from its parent (root has none), in insertion order. */
  nodes: Map<string, { parent: string | null; step: Step | null }>;
}

function newTree(root: string): Tree {
  return { root, nodes: new Map([[root, { parent: null, step: null }]]) };
}

/** Shortest path, or through one of `via` when that gives a simple path. */
function route(index: SchemaIndex, from: string, to: string, via: readonly string[]): Step[] | null {
  for (const v of via) {
    if (v === from || v === to) continue;
    const a = index.path(from, v);
    const b = index.path(v, to);
    if (!a || !b) continue;
    const seen = new Set([from, ...a.map((s) => s.table)]);
    if (b.some((s) => seen.has(s.table))) continue;
    return [...a, ...b];
  }
  return index.path(from, to);
}

function addPath(tree: Tree, index: SchemaIndex, to: string, via: readonly string[] = []): boolean {
  if (tree.nodes.has(to)) return true;
  const steps = route(index, tree.root, to, via);
  if (!steps) return false;
  let cur = tree.root;
  for (const s of steps) {
    if (!tree.nodes.has(s.table)) tree.nodes.set(s.table, { parent: cur, step: s });
    cur = s.table;
  }
  return true;
}

function downSteps(tree: Tree): number {
  let n = 0;
  for (const v of tree.nodes.values()) if (v.step && !v.step.up) n++;
  return n;
}

function itemTables(item: Item): string[] {
  switch (item.kind) {
    case 'column':
    case 'bucket':
      return [item.column.table];
    case 'label':
      return [item.table];
    case 'aggregate':
      return [measureTable(item.aggregate.measure)];
  }
}

function aggsOf(plan: Plan): Aggregate[] {
  const out: Aggregate[] = [];
  for (const it of [...plan.select, ...plan.orderBy.map((o) => o.item)]) if (it.kind === 'aggregate') out.push(it.aggregate);
  for (const h of plan.having) out.push(h.aggregate);
  return out;
}

export function buildSql(plan: Plan, index: SchemaIndex, dialect: EngineName): BuiltSql {
  const d = dialect;
  const q = (name: string): string => quoteIdent(d, name);
  const aggs = aggsOf(plan);

  const needed = new Set<string>();
  for (const it of [...plan.select, ...plan.groupBy, ...plan.orderBy.map((o) => o.item)]) for (const t of itemTables(it)) needed.add(t);
  for (const h of plan.having) needed.add(measureTable(h.aggregate.measure));
  if (plan.exists.length > 0 || plan.counts.length > 0 || needed.size === 0) needed.add(plan.subject);

  // Base table: among aggregated tables (or the subject), the one whose joins fan out least.
  const candidates = aggs.length > 0 ? [...new Set(aggs.map((a) => measureTable(a.measure)))] : [plan.subject];
  let best: { tree: Tree; score: number } | null = null;
  for (const c of candidates) {
    const tree = newTree(c);
    let ok = true;
    for (const t of needed) if (!addPath(tree, index, t)) ok = false;
    if (!ok) continue;
    const score = downSteps(tree) * 10 + tree.nodes.size;
    if (!best || score < best.score) best = { tree, score };
  }
  if (!best) {
    const names = [...needed, ...candidates];
    throw new GenerationFailedError(`no foreign-key path connects the tables ${[...new Set(names)].join(', ')}`);
  }
  const tree = best.tree;
  const base = tree.root;

  // Conditions: joined when reachable towards the "one" side, else grouped into EXISTS.
  const outerConds: Condition[] = [];
  const downConds: Condition[] = [];
  for (const c of plan.conditions) {
    const t = c.column.table;
    if (tree.nodes.has(t)) {
      outerConds.push(c);
      continue;
    }
    const p = route(index, base, t, plan.via);
    if (!p) throw new GenerationFailedError(`no foreign-key path connects ${base} and ${t}`);
    if (index.isUpPath(p)) {
      addPath(tree, index, t, plan.via);
      outerConds.push(c);
    } else downConds.push(c);
  }

  const fanOut = downSteps(tree) > 0;
  const multi = tree.nodes.size > 1;
  const hasSub = downConds.length > 0 || plan.exists.length > 0 || plan.counts.length > 0;
  const qualify = multi || hasSub;
  const outerRef = (c: ColumnRef): string => (qualify ? `${q(c.table)}.${q(c.column)}` : q(c.column));

  // --- SELECT list and grouping -------------------------------------------------------
  const hasAgg = aggs.length > 0;
  const select: Item[] = [...plan.select];
  const groupBy: Item[] = [...plan.groupBy];
  if (hasAgg) {
    for (const it of select) if (it.kind !== 'aggregate' && !groupBy.some((g) => sameItem(g, it))) groupBy.push(it);
    for (const g of [...groupBy].reverse()) if (!select.some((s) => sameItem(s, g))) select.unshift(g);
  }
  if (select.length === 0) select.push({ kind: 'label', table: plan.subject });
  const grouped = groupBy.length > 0;

  const labelCols = (table: string, forGroup: boolean): string[] | null => {
    const info = index.table(table);
    if (info.label.length > 0) return info.label.map((col) => outerRef({ table, column: col }));
    if (forGroup && info.pk) return [outerRef({ table, column: info.pk })];
    return null;
  };

  const measureExpr = (m: Measure): string => {
    if (m.kind === 'column') return outerRef(m.column);
    if (m.kind === 'line') return `${outerRef({ table: m.table, column: m.quantity })} * ${outerRef({ table: m.table, column: m.price })}`;
    return '*';
  };

  const aggExpr = (a: Aggregate): string => {
    const fn = a.fn.toUpperCase();
    if (a.measure.kind === 'rows') {
      const info = index.table(a.measure.table);
      if ((a.measure.table !== base || fanOut) && info.pk)
        return `COUNT(DISTINCT ${outerRef({ table: a.measure.table, column: info.pk })})`;
      return 'COUNT(*)';
    }
    return `${fn}(${a.distinct ? 'DISTINCT ' : ''}${measureExpr(a.measure)})`;
  };

  const aggAlias = (a: Aggregate): string => {
    const m = a.measure;
    if (m.kind === 'rows') return `${index.table(m.table).words.join('_')}_count`;
    if (m.kind === 'line') return a.fn === 'sum' ? 'revenue' : `${a.fn}_revenue`;
    const col = m.column.column.toLowerCase();
    if (a.fn === 'count') return a.distinct ? `distinct_${col}_count` : `${col}_count`;
    return { sum: 'total_', avg: 'avg_', min: 'min_', max: 'max_' }[a.fn] + col;
  };

  const aliases = new Map<string, string>();
  const usedAliases = new Set<string>();
  const selectSql: string[] = [];
  const itemSql = (it: Item, forGroup: boolean): string[] => {
    switch (it.kind) {
      case 'column':
        return [outerRef(it.column)];
      case 'bucket':
        return [dateBucket(d, outerRef(it.column), it.part)];
      case 'label': {
        const cols = labelCols(it.table, forGroup || grouped);
        if (cols) return cols;
        return [qualify ? `${q(it.table)}.*` : '*'];
      }
      case 'aggregate':
        return [aggExpr(it.aggregate)];
    }
  };
  for (const it of select) {
    if (it.kind === 'aggregate') {
      let alias = aggAlias(it.aggregate);
      for (let n = 2; usedAliases.has(alias); n++) alias = `${aggAlias(it.aggregate)}_${n}`;
      usedAliases.add(alias);
      aliases.set(JSON.stringify(it), alias);
      selectSql.push(`${aggExpr(it.aggregate)} AS ${q(alias)}`);
    } else if (it.kind === 'bucket') {
      const alias = it.part;
      usedAliases.add(alias);
      aliases.set(JSON.stringify(it), alias);
      selectSql.push(`${itemSql(it, false)[0]} AS ${q(alias)}`);
    } else {
      for (const s of itemSql(it, false)) if (!selectSql.includes(s)) selectSql.push(s);
    }
  }

  // --- ORDER BY (needs to extend SELECT under DISTINCT) ---------------------------------
  const orderSql: string[] = [];
  for (const o of plan.orderBy) {
    const alias = aliases.get(JSON.stringify(o.item));
    if (alias) {
      orderSql.push(`${q(alias)} ${o.dir}`);
      continue;
    }
    const exprs = o.item.kind === 'aggregate' ? [aggExpr(o.item.aggregate)] : itemSql(o.item, false);
    for (const e of exprs) {
      if (e.endsWith('*')) continue;
      orderSql.push(`${e} ${o.dir}`);
      if (plan.distinct && !selectSql.includes(e)) selectSql.push(e);
    }
  }

  // --- FROM / JOIN ------------------------------------------------------------------------
  const from: string[] = [tableRef(d, index.table(base))];
  for (const [t, node] of tree.nodes) {
    if (!node.step || !node.parent) continue;
    const e = node.step.edge;
    const on = e.fromCols.map((fc, i) => `${q(e.from)}.${q(fc)} = ${q(e.to)}.${q(e.toCols[i])}`);
    from.push(`JOIN ${tableRef(d, index.table(t))} ON ${on.join(' AND ')}`);
  }

  // --- conditions -------------------------------------------------------------------------
  const condSql = (c: Condition, ref: (c: ColumnRef) => string): string => {
    const col = ref(c.column);
    const lit = (v: number | string): string => (typeof v === 'number' ? String(v) : quoteString(d, v));
    switch (c.kind) {
      case 'compare':
        return `${col} ${c.op} ${lit(c.value)}`;
      case 'in':
        if (c.values.length === 1) return `${col} ${c.negate ? '<>' : '='} ${lit(c.values[0])}`;
        return `${col} ${c.negate ? 'NOT IN' : 'IN'} (${c.values.map(lit).join(', ')})`;
      case 'like': {
        const needsEscape = /[%_!]/.test(c.pattern);
        const esc = needsEscape ? c.pattern.replace(/[%_!]/g, (m) => `!${m}`) : c.pattern;
        const pat = c.how === 'prefix' ? `${esc}%` : c.how === 'suffix' ? `%${esc}` : `%${esc}%`;
        return `${col} ${c.negate ? 'NOT LIKE' : 'LIKE'} ${quoteString(d, pat)}${needsEscape ? " ESCAPE '!'" : ''}`;
      }
      case 'range': {
        const parts: string[] = [];
        if (c.from) parts.push(`${col} >= ${quoteString(d, c.from)}`);
        if (c.to) parts.push(`${col} < ${quoteString(d, c.to)}`);
        return parts.join(' AND ');
      }
      case 'null':
        return `${col} IS ${c.negate ? 'NOT ' : ''}NULL`;
      case 'versus':
        return `${col} ${c.op} (SELECT ${c.fn.toUpperCase()}(${q(c.of.column)}) FROM ${tableRef(d, index.table(c.of.table))})`;
    }
  };

  const outerTables = new Set(tree.nodes.keys());
  let subN = 0;
  // A correlated subquery from `anchor` (an outer table) over the related tables `targets`.
  const subquery = (anchor: string, targets: string[], conditions: Condition[], head: string): string => {
    const inner = newTree(anchor);
    for (const t of targets) {
      if (!addPath(inner, index, t, plan.via)) throw new GenerationFailedError(`no foreign-key path connects ${anchor} and ${t}`);
    }
    for (const c of conditions)
      if (!addPath(inner, index, c.column.table, plan.via))
        throw new GenerationFailedError(`no foreign-key path connects ${anchor} and ${c.column.table}`);
    subN++;
    const alias = new Map<string, string>();
    for (const t of inner.nodes.keys()) {
      if (t === anchor) continue;
      alias.set(t, outerTables.has(t) ? `${t}_${subN + 1}` : t);
    }
    if (inner.nodes.size < 2) throw new GenerationFailedError(`no related table to look ${targets.join(', ')} up in`);
    const ref = (t: string): string => q(alias.get(t) ?? t);
    const tRef = (t: string): string =>
      alias.get(t) !== t ? `${tableRef(d, index.table(t))} ${q(alias.get(t)!)}` : tableRef(d, index.table(t));
    const innerCol = (c: ColumnRef): string =>
      c.table === anchor && !alias.has(anchor) ? `${q(anchor)}.${q(c.column)}` : `${ref(c.table)}.${q(c.column)}`;
    const parts: string[] = [];
    const where: string[] = [];
    for (const [t, node] of inner.nodes) {
      if (!node.step || !node.parent) continue;
      const e = node.step.edge;
      const side = (table: string): string => (table === anchor ? q(anchor) : ref(table));
      const on = e.fromCols.map((fc, i) => `${side(e.from)}.${q(fc)} = ${side(e.to)}.${q(e.toCols[i])}`).join(' AND ');
      if (node.parent === anchor) {
        parts.push(parts.length === 0 ? tRef(t) : `CROSS JOIN ${tRef(t)}`);
        where.push(on);
      } else {
        parts.push(`JOIN ${tRef(t)} ON ${on}`);
      }
    }
    for (const c of conditions) where.push(condSql(c, innerCol));
    // Correlation predicates of a CROSS JOIN go to WHERE; plain joins keep their ON.
    return `${head} FROM ${parts.join(' ')} WHERE ${where.join(' AND ')})`;
  };

  const whereSql: string[] = outerConds.map((c) => condSql(c, outerRef));
  // Superlatives keep their ties: "the oldest singer" is every singer of the highest age,
  // not one of them picked by LIMIT 1. Done where the row's own column is the key on a single
  // table; the conditions apply inside the subquery too.
  const only = plan.orderBy[0];
  const tieKey =
    plan.limit === 1 &&
    plan.orderBy.length === 1 &&
    only.item.kind === 'column' &&
    only.item.column.table === base &&
    !hasAgg &&
    groupBy.length === 0 &&
    tree.nodes.size === 1 &&
    downConds.length === 0 &&
    plan.exists.length === 0 &&
    plan.counts.length === 0 &&
    // "the age of the oldest dog": tied rows would only repeat the one value.
    !select.every((it) => sameItem(it, only.item))
      ? only.item.column
      : null;
  if (tieKey) {
    const inner = outerConds.map((c) => condSql(c, (r) => q(r.column)));
    whereSql.push(
      `${outerRef(tieKey)} = (SELECT ${only.dir === 'DESC' ? 'MAX' : 'MIN'}(${q(tieKey.column)}) FROM ${tableRef(d, index.table(base))}${inner.length > 0 ? ` WHERE ${inner.join(' AND ')}` : ''})`,
    );
    orderSql.length = 0;
  }
  if (downConds.length > 0) {
    // Group by the first step out of the base: conditions on one branch share one EXISTS.
    const groups = new Map<string, Condition[]>();
    for (const c of downConds) {
      const first = route(index, base, c.column.table, plan.via)![0].table;
      groups.set(first, [...(groups.get(first) ?? []), c]);
    }
    for (const conditions of groups.values())
      whereSql.push(
        subquery(
          base,
          conditions.map((c) => c.column.table),
          conditions,
          'EXISTS (SELECT 1',
        ),
      );
  }
  for (const ex of plan.exists) {
    whereSql.push(subquery(plan.subject, [ex.target], ex.conditions, `${ex.negate ? 'NOT ' : ''}EXISTS (SELECT 1`));
  }
  for (const cc of plan.counts) {
    whereSql.push(`${subquery(plan.subject, [cc.target], cc.conditions, '(SELECT COUNT(*)')} ${cc.op} ${cc.value}`);
  }

  const groupSql: string[] = [];
  for (const g of groupBy) {
    if (g.kind === 'label') {
      const info = index.table(g.table);
      if (info.pk) groupSql.push(outerRef({ table: g.table, column: info.pk }));
      for (const s of labelCols(g.table, true) ?? []) if (!groupSql.includes(s)) groupSql.push(s);
    } else {
      for (const s of itemSql(g, true)) if (!groupSql.includes(s)) groupSql.push(s);
    }
  }
  const havingSql = plan.having.map((h) => `${aggExpr(h.aggregate)} ${h.op} ${h.value}`);

  let sql = `SELECT ${plan.distinct && !grouped ? 'DISTINCT ' : ''}${selectSql.join(', ')}\nFROM ${from.join('\n  ')}`;
  if (whereSql.length > 0) sql += `\nWHERE ${whereSql.join('\n  AND ')}`;
  if (groupSql.length > 0) sql += `\nGROUP BY ${groupSql.join(', ')}`;
  if (havingSql.length > 0) sql += `\nHAVING ${havingSql.join(' AND ')}`;
  if (orderSql.length > 0) sql += `\nORDER BY ${orderSql.join(', ')}`;
  if (plan.limit !== null && !tieKey) sql += `\nLIMIT ${plan.limit}`;

  const tables = new Set<string>(tree.nodes.keys());
  for (const c of downConds) tables.add(c.column.table);
  for (const e of plan.exists) tables.add(e.target);
  for (const c of plan.counts) tables.add(c.target);
  return { sql, explanation: explainPlan(plan, { ...plan, select, groupBy }, index, tieKey !== null), tables: [...tables] };
}
