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
import type { Agg, ColRef, Cond, Item, Measure, Plan } from './plan.ts';
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
function route(idx: SchemaIndex, from: string, to: string, via: readonly string[]): Step[] | null {
  for (const v of via) {
    if (v === from || v === to) continue;
    const a = idx.path(from, v);
    const b = idx.path(v, to);
    if (!a || !b) continue;
    const seen = new Set([from, ...a.map((s) => s.table)]);
    if (b.some((s) => seen.has(s.table))) continue;
    return [...a, ...b];
  }
  return idx.path(from, to);
}

function addPath(tree: Tree, idx: SchemaIndex, to: string, via: readonly string[] = []): boolean {
  if (tree.nodes.has(to)) return true;
  const steps = route(idx, tree.root, to, via);
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
  switch (item.k) {
    case 'col':
    case 'bucket':
      return [item.c.table];
    case 'label':
      return [item.table];
    case 'agg':
      return [measureTable(item.a.m)];
  }
}

function aggsOf(plan: Plan): Agg[] {
  const out: Agg[] = [];
  for (const it of [...plan.select, ...plan.orderBy.map((o) => o.item)]) if (it.k === 'agg') out.push(it.a);
  for (const h of plan.having) out.push(h.a);
  return out;
}

export function buildSql(plan: Plan, idx: SchemaIndex, dialect: EngineName): BuiltSql {
  const d = dialect;
  const q = (name: string): string => quoteIdent(d, name);
  const aggs = aggsOf(plan);

  const needed = new Set<string>();
  for (const it of [...plan.select, ...plan.groupBy, ...plan.orderBy.map((o) => o.item)]) for (const t of itemTables(it)) needed.add(t);
  for (const h of plan.having) needed.add(measureTable(h.a.m));
  if (plan.exists.length > 0 || plan.counts.length > 0 || needed.size === 0) needed.add(plan.subject);

  // Base table: among aggregated tables (or the subject), the one whose joins fan out least.
  const candidates = aggs.length > 0 ? [...new Set(aggs.map((a) => measureTable(a.m)))] : [plan.subject];
  let best: { tree: Tree; score: number } | null = null;
  for (const c of candidates) {
    const tree = newTree(c);
    let ok = true;
    for (const t of needed) if (!addPath(tree, idx, t)) ok = false;
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
  const outerConds: Cond[] = [];
  const downConds: Cond[] = [];
  for (const c of plan.conds) {
    const t = c.c.table;
    if (tree.nodes.has(t)) {
      outerConds.push(c);
      continue;
    }
    const p = route(idx, base, t, plan.via);
    if (!p) throw new GenerationFailedError(`no foreign-key path connects ${base} and ${t}`);
    if (idx.isUpPath(p)) {
      addPath(tree, idx, t, plan.via);
      outerConds.push(c);
    } else downConds.push(c);
  }

  const fanOut = downSteps(tree) > 0;
  const multi = tree.nodes.size > 1;
  const hasSub = downConds.length > 0 || plan.exists.length > 0 || plan.counts.length > 0;
  const qualify = multi || hasSub;
  const outerRef = (c: ColRef): string => (qualify ? `${q(c.table)}.${q(c.column)}` : q(c.column));

  // --- SELECT list and grouping -------------------------------------------------------
  const hasAgg = aggs.length > 0;
  const select: Item[] = [...plan.select];
  const groupBy: Item[] = [...plan.groupBy];
  if (hasAgg) {
    for (const it of select) if (it.k !== 'agg' && !groupBy.some((g) => sameItem(g, it))) groupBy.push(it);
    for (const g of [...groupBy].reverse()) if (!select.some((s) => sameItem(s, g))) select.unshift(g);
  }
  if (select.length === 0) select.push({ k: 'label', table: plan.subject });
  const grouped = groupBy.length > 0;

  const labelCols = (table: string, forGroup: boolean): string[] | null => {
    const info = idx.table(table);
    if (info.label.length > 0) return info.label.map((col) => outerRef({ table, column: col }));
    if (forGroup && info.pk) return [outerRef({ table, column: info.pk })];
    return null;
  };

  const measureExpr = (m: Measure): string => {
    if (m.k === 'col') return outerRef(m.c);
    if (m.k === 'line') return `${outerRef({ table: m.table, column: m.qty })} * ${outerRef({ table: m.table, column: m.price })}`;
    return '*';
  };

  const aggExpr = (a: Agg): string => {
    const fn = a.fn.toUpperCase();
    if (a.m.k === 'rows') {
      const info = idx.table(a.m.table);
      if ((a.m.table !== base || fanOut) && info.pk) return `COUNT(DISTINCT ${outerRef({ table: a.m.table, column: info.pk })})`;
      return 'COUNT(*)';
    }
    return `${fn}(${a.distinct ? 'DISTINCT ' : ''}${measureExpr(a.m)})`;
  };

  const aggAlias = (a: Agg): string => {
    const m = a.m;
    if (m.k === 'rows') return `${idx.table(m.table).words.join('_')}_count`;
    if (m.k === 'line') return a.fn === 'sum' ? 'revenue' : `${a.fn}_revenue`;
    const col = m.c.column.toLowerCase();
    if (a.fn === 'count') return a.distinct ? `distinct_${col}_count` : `${col}_count`;
    return { sum: 'total_', avg: 'avg_', min: 'min_', max: 'max_' }[a.fn] + col;
  };

  const aliases = new Map<string, string>();
  const usedAliases = new Set<string>();
  const selectSql: string[] = [];
  const itemSql = (it: Item, forGroup: boolean): string[] => {
    switch (it.k) {
      case 'col':
        return [outerRef(it.c)];
      case 'bucket':
        return [dateBucket(d, outerRef(it.c), it.part)];
      case 'label': {
        const cols = labelCols(it.table, forGroup || grouped);
        if (cols) return cols;
        return [qualify ? `${q(it.table)}.*` : '*'];
      }
      case 'agg':
        return [aggExpr(it.a)];
    }
  };
  for (const it of select) {
    if (it.k === 'agg') {
      let alias = aggAlias(it.a);
      for (let n = 2; usedAliases.has(alias); n++) alias = `${aggAlias(it.a)}_${n}`;
      usedAliases.add(alias);
      aliases.set(JSON.stringify(it), alias);
      selectSql.push(`${aggExpr(it.a)} AS ${q(alias)}`);
    } else if (it.k === 'bucket') {
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
    const exprs = o.item.k === 'agg' ? [aggExpr(o.item.a)] : itemSql(o.item, false);
    for (const e of exprs) {
      if (e.endsWith('*')) continue;
      orderSql.push(`${e} ${o.dir}`);
      if (plan.distinct && !selectSql.includes(e)) selectSql.push(e);
    }
  }

  // --- FROM / JOIN ------------------------------------------------------------------------
  const from: string[] = [tableRef(d, idx.table(base))];
  for (const [t, node] of tree.nodes) {
    if (!node.step || !node.parent) continue;
    const e = node.step.edge;
    const on = e.fromCols.map((fc, i) => `${q(e.from)}.${q(fc)} = ${q(e.to)}.${q(e.toCols[i])}`);
    from.push(`JOIN ${tableRef(d, idx.table(t))} ON ${on.join(' AND ')}`);
  }

  // --- conditions -------------------------------------------------------------------------
  const condSql = (c: Cond, ref: (c: ColRef) => string): string => {
    const col = ref(c.c);
    const lit = (v: number | string): string => (typeof v === 'number' ? String(v) : quoteString(d, v));
    switch (c.k) {
      case 'cmp':
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
    }
  };

  const outerTables = new Set(tree.nodes.keys());
  let subN = 0;
  // A correlated subquery from `anchor` (an outer table) over the related tables `targets`.
  const subquery = (anchor: string, targets: string[], conds: Cond[], head: string): string => {
    const inner = newTree(anchor);
    for (const t of targets) {
      if (!addPath(inner, idx, t, plan.via)) throw new GenerationFailedError(`no foreign-key path connects ${anchor} and ${t}`);
    }
    for (const c of conds) if (!addPath(inner, idx, c.c.table, plan.via)) throw new GenerationFailedError(`no foreign-key path connects ${anchor} and ${c.c.table}`);
    subN++;
    const alias = new Map<string, string>();
    for (const t of inner.nodes.keys()) {
      if (t === anchor) continue;
      alias.set(t, outerTables.has(t) ? `${t}_${subN + 1}` : t);
    }
    if (inner.nodes.size < 2) throw new GenerationFailedError(`no related table to look ${targets.join(', ')} up in`);
    const ref = (t: string): string => q(alias.get(t) ?? t);
    const tRef = (t: string): string => (alias.get(t) !== t ? `${tableRef(d, idx.table(t))} ${q(alias.get(t)!)}` : tableRef(d, idx.table(t)));
    const innerCol = (c: ColRef): string => (c.table === anchor && !alias.has(anchor) ? `${q(anchor)}.${q(c.column)}` : `${ref(c.table)}.${q(c.column)}`);
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
    for (const c of conds) where.push(condSql(c, innerCol));
    // Correlation predicates of a CROSS JOIN go to WHERE; plain joins keep their ON.
    return `${head} FROM ${parts.join(' ')} WHERE ${where.join(' AND ')})`;
  };

  const whereSql: string[] = outerConds.map((c) => condSql(c, outerRef));
  if (downConds.length > 0) {
    // Group by the first step out of the base: conditions on one branch share one EXISTS.
    const groups = new Map<string, Cond[]>();
    for (const c of downConds) {
      const first = route(idx, base, c.c.table, plan.via)![0].table;
      groups.set(first, [...(groups.get(first) ?? []), c]);
    }
    for (const conds of groups.values()) whereSql.push(subquery(base, conds.map((c) => c.c.table), conds, 'EXISTS (SELECT 1'));
  }
  for (const ex of plan.exists) {
    whereSql.push(subquery(plan.subject, [ex.target], ex.conds, `${ex.negate ? 'NOT ' : ''}EXISTS (SELECT 1`));
  }
  for (const cc of plan.counts) {
    whereSql.push(`${subquery(plan.subject, [cc.target], cc.conds, '(SELECT COUNT(*)')} ${cc.op} ${cc.value}`);
  }

  const groupSql: string[] = [];
  for (const g of groupBy) {
    if (g.k === 'label') {
      const info = idx.table(g.table);
      if (info.pk) groupSql.push(outerRef({ table: g.table, column: info.pk }));
      for (const s of labelCols(g.table, true) ?? []) if (!groupSql.includes(s)) groupSql.push(s);
    } else {
      for (const s of itemSql(g, true)) if (!groupSql.includes(s)) groupSql.push(s);
    }
  }
  const havingSql = plan.having.map((h) => `${aggExpr(h.a)} ${h.op} ${h.value}`);

  let sql = `SELECT ${plan.distinct && !grouped ? 'DISTINCT ' : ''}${selectSql.join(', ')}\nFROM ${from.join('\n  ')}`;
  if (whereSql.length > 0) sql += `\nWHERE ${whereSql.join('\n  AND ')}`;
  if (groupSql.length > 0) sql += `\nGROUP BY ${groupSql.join(', ')}`;
  if (havingSql.length > 0) sql += `\nHAVING ${havingSql.join(' AND ')}`;
  if (orderSql.length > 0) sql += `\nORDER BY ${orderSql.join(', ')}`;
  if (plan.limit !== null) sql += `\nLIMIT ${plan.limit}`;

  const tables = new Set<string>(tree.nodes.keys());
  for (const c of downConds) tables.add(c.c.table);
  for (const e of plan.exists) tables.add(e.target);
  for (const c of plan.counts) tables.add(c.target);
  return { sql, explanation: explainPlan(plan, { ...plan, select, groupBy }, idx), tables: [...tables] };
}
