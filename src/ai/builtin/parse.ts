// Question → Plan. A sequence of passes over the tokens, each recognising one kind of phrase
// (ordering, top-N, dates, negation, comparisons, LIKE, superlatives, aggregates, grouping,
// values), consuming its tokens and recording its part of the plan in schema terms. What is
// left decides the SELECT list. Refuses (GenerationFailedError) when the question names
// nothing in the schema, or leaves a number, quoted text or the thing asked about unplaced:
// an answer without grounds would look right and be wrong.
import { GenerationFailedError } from '../../errors.ts';
import type { DatePart } from '../dialect.ts';
import {
  AGG_WORDS, COMPARATIVE_COLUMNS, COMPARATORS, DATE_VERBS, FILLER, REVENUE_WORDS, SUPERLATIVES,
  SYNONYMS, UNITS_WORDS, VERBS, type SuperKind,
} from './lexicon.ts';
import type { Mention } from './link.ts';
import type { Agg, AggFn, Cmp, ColRef, Cond, ExistsCond, Item, Measure, Plan } from './plan.ts';
import { emptyPlan, measureTable, sameItem } from './plan.ts';
import type { ColInfo, SchemaIndex } from './schema-index.ts';
import { MONTHS, STOPWORDS, type Token } from './text.ts';

type ColMention = Extract<Mention, { kind: 'column' }>;
type TableMention = Extract<Mention, { kind: 'table' }>;

interface Target {
  k: 'table' | 'col';
  table: string;
  c?: ColRef;
  pos: number;
  end?: number;
}

interface DateRange {
  from: string;
  to: string;
  len: number;
  year: number;
  /** Granularity, for year columns (integers). */
  part: 'year' | 'month' | 'day';
}

const pad = (n: number): string => String(n).padStart(2, '0');
const iso = (y: number, m: number, d: number): string => `${y}-${pad(m)}-${pad(d)}`;

function fail(reason: string): never {
  throw new GenerationFailedError(reason);
}

export function parseQuestion(tokens: Token[], mentions: Mention[], idx: SchemaIndex): Plan {
  return new Parser(tokens, mentions, idx).run();
}

class Parser {
  private used: boolean[];
  private mentionAt: (Mention | null)[];
  private claimed = new Set<Mention>();
  private target: Target | null = null;
  private subject: string | null = null;
  private intent: 'list' | 'count' | 'agg' = 'list';
  private countTarget: { table: string; distinctCol?: ColRef } | null = null;
  private selectAggs: Agg[] = [];
  private conds: Cond[] = [];
  private condPos = new Map<Cond, number>();
  private exists: (ExistsCond & { pos: number; end: number })[] = [];
  private having: { a: Agg; op: Cmp; value: number }[] = [];
  private counts: Plan['counts'] = [];
  private orderBy: { item: Item; dir: 'ASC' | 'DESC' }[] = [];
  private limit: number | null = null;
  private groupCands: { item: Item; pos: number; viaBy: boolean }[] = [];
  private groupBy: Item[] = [];
  private distinct = false;
  private wantsEntityGroup = false;
  private headEnd = 0;

  constructor(
    private readonly t: Token[],
    private readonly mentions: Mention[],
    private readonly idx: SchemaIndex,
  ) {
    this.used = t.map(() => false);
    this.mentionAt = t.map(() => null);
    for (const m of mentions) for (let i = m.start; i < m.end; i++) this.mentionAt[i] = m;
  }

  // --- token helpers ---------------------------------------------------------------------

  private w(i: number): string {
    return this.t[i]?.lower ?? '';
  }

  /** Length of `seq` (words; 'a|b' alternatives; '?' suffix optional) matched at i, or 0. */
  private seq(i: number, seq: string[]): number {
    let j = i;
    for (const part of seq) {
      const optional = part.endsWith('?');
      const alts = (optional ? part.slice(0, -1) : part).split('|');
      if (j < this.t.length && alts.includes(this.w(j)) && !this.used[j]) j++;
      else if (!optional) return 0;
    }
    return j - i;
  }

  private use(from: number, to: number): void {
    for (let i = from; i < to && i < this.t.length; i++) this.used[i] = true;
  }

  private claim(m: Mention | null | undefined): void {
    if (!m) return;
    this.claimed.add(m);
    this.use(m.start, m.end);
  }

  /** Next index ≥ i that is not a filler word listed in `skip`. */
  private skip(i: number, skip: ReadonlySet<string> | string[]): number {
    const s = Array.isArray(skip) ? new Set(skip) : skip;
    let j = i;
    while (j < this.t.length && s.has(this.w(j)) && !this.mentionAt[j]) j++;
    return j;
  }

  private num(i: number): number | null {
    const tok = this.t[i];
    return tok && tok.kind === 'number' && !this.used[i] ? (tok.num ?? null) : null;
  }

  private isYear(i: number): boolean {
    const tok = this.t[i];
    return !!tok && tok.kind === 'number' && /^\d{4}$/.test(tok.raw) && tok.num! >= 1900 && tok.num! <= 2100;
  }

  // --- schema helpers --------------------------------------------------------------------

  private tablesInQuestion(): string[] {
    const out: string[] = [];
    for (const m of this.mentions) {
      if (m.kind === 'table' && !out.includes(m.cands[0].table)) out.push(m.cands[0].table);
    }
    return out;
  }

  private resolveTable(m: TableMention): string {
    return m.cands[0].table;
  }

  /** Pick a column candidate: next to a table mention, else the subject, else nearest. */
  private resolveCol(m: ColMention, prefer: string[] = []): ColRef {
    const cands = m.cands;
    if (cands.length === 1) return { table: cands[0].table, column: cands[0].column };
    const byTable = (t: string): ColRef | null => {
      const hit = cands.find((c) => c.table === t);
      return hit ? { table: hit.table, column: hit.column } : null;
    };
    // Adjacent table words: "product price", "price of products", "customers' city".
    for (const p of prefer) {
      const r = byTable(p);
      if (r) return r;
    }
    for (let d = 1; d <= 3; d++) {
      for (const j of [m.start - d, m.end - 1 + d]) {
        const near = this.mentionAt[j];
        if (near && near.kind === 'table') {
          const r = byTable(this.resolveTable(near));
          if (r) return r;
        }
        // "a cat that is age 3": a value names its table too.
        if (near && near.kind === 'value' && near.cands.length === 1) {
          const r = byTable(near.cands[0].table);
          if (r) return r;
        }
      }
    }
    if (this.subject) {
      const r = byTable(this.subject);
      if (r) return r;
    }
    for (const t of this.tablesInQuestion()) {
      const r = byTable(t);
      if (r) return r;
    }
    const best = Math.max(...cands.map((c) => c.score));
    const top = cands.filter((c) => c.score >= best - 0.05);
    if (this.subject) {
      top.sort((a, b) => this.idx.distance(this.subject!, a.table) - this.idx.distance(this.subject!, b.table));
    }
    return { table: top[0].table, column: top[0].column };
  }

  private colInfo(c: ColRef): ColInfo {
    return this.idx.col(c.table, c.column)!;
  }

  /** A column of `table` (or of tables near the subject) whose words include one of `words`. */
  private findColumn(words: string[], tables: string[], pred: (c: ColInfo) => boolean = () => true): ColRef | null {
    for (const w of words) {
      for (const t of tables) {
        const info = this.idx.tables.get(t);
        const hit = info?.cols.find((c) => pred(c) && (c.words.includes(w) || c.name.toLowerCase() === w));
        if (hit) return { table: t, column: hit.name };
      }
    }
    return null;
  }

  /** Tables ordered by relevance: subject, mentioned, then by FK distance from the subject. */
  private nearbyTables(): string[] {
    const out: string[] = [];
    const add = (t: string | null | undefined): void => {
      if (t && !out.includes(t)) out.push(t);
    };
    add(this.subject);
    for (const t of this.tablesInQuestion()) add(t);
    const all = [...this.idx.tables.keys()];
    if (this.subject) {
      const s = this.subject;
      all.sort((a, b) => this.idx.distance(s, a) - this.idx.distance(s, b));
      for (const t of all) if (this.idx.distance(s, t) < Infinity) add(t);
    }
    return out;
  }

  private lineTable(): string | null {
    for (const t of this.nearbyTables()) if (this.idx.table(t).line) return t;
    for (const info of this.idx.tables.values()) if (info.line) return info.name;
    return null;
  }

  private revenueMeasure(): Measure | null {
    const lt = this.lineTable();
    if (lt) {
      const line = this.idx.table(lt).line!;
      return { k: 'line', table: lt, qty: line.qty, price: line.price };
    }
    const col = this.findColumn(['revenue', 'sale', 'total', 'amount'], this.nearbyTables(), (c) => c.numeric);
    return col ? { k: 'col', c: col } : null;
  }

  private unitsMeasure(): Measure | null {
    const lt = this.lineTable();
    if (lt) return { k: 'col', c: { table: lt, column: this.idx.table(lt).line!.qty } };
    const col = this.findColumn(['quantity', 'qty', 'unit', 'sold'], this.nearbyTables(), (c) => c.numeric);
    return col ? { k: 'col', c: col } : null;
  }

  private defaultMeasure(table: string | null): ColRef | null {
    if (!table) return null;
    const info = this.idx.table(table);
    return info.measure ? { table, column: info.measure } : null;
  }

  /** Is `t` on the "many" side of the subject (joining it multiplies subject rows)? */
  private isChild(t: string): boolean {
    if (!this.subject || t === this.subject) return false;
    const p = this.idx.path(this.subject, t);
    return !!p && !this.idx.isUpPath(p);
  }

  /** Tables being aggregated so far (or named by a revenue/units word). */
  private measureTables(): string[] {
    const out: string[] = [];
    for (const a of this.selectAggs) out.push(measureTable(a.m));
    for (const h of this.having) out.push(measureTable(h.a.m));
    for (const o of this.orderBy) if (o.item.k === 'agg') out.push(measureTable(o.item.a.m));
    if (out.length === 0 && this.t.some((x) => REVENUE_WORDS.has(x.lower))) {
      const m = this.revenueMeasure();
      if (m) out.push(measureTable(m));
    }
    return out.filter((t) => !(this.intent === 'count' && t === this.subject));
  }

  private chooseDateCol(pos: number): ColRef | null {
    const dateLike = (c: ColInfo): boolean => c.date || c.year;
    // 1. a verb before the date: "ordered in", "joined in", "released in".
    for (let j = pos - 1; j >= Math.max(0, pos - 5); j--) {
      const verb = this.w(j);
      const dw = DATE_VERBS[verb];
      if (dw) {
        const c = this.findColumn(dw, this.nearbyTables(), dateLike);
        if (c) {
          // "signed up since …": the verb named the column; it is not a projection.
          const vm = this.mentionAt[j];
          if (vm && vm.kind === 'column') this.claim(vm);
          this.use(j, j + 1);
          return c;
        }
      }
      const vt = VERBS[verb];
      if (vt) {
        for (const t of this.nearbyTables()) {
          const info = this.idx.table(t);
          if (info.words.some((x) => vt.includes(x))) {
            const c = info.cols.find(dateLike);
            if (c) return { table: t, column: c.name };
          }
        }
      }
      const m = this.mentionAt[j];
      if (m && m.kind === 'column') {
        const c = this.resolveCol(m);
        if (dateLike(this.colInfo(c))) {
          this.claim(m);
          return c;
        }
      }
    }
    // 2. the table named just before ("orders in 2025", "orders that were placed in 2025").
    for (let j = pos - 1; j >= Math.max(0, pos - 4); j--) {
      const m = this.mentionAt[j];
      if (m && m.kind === 'table') {
        const info = this.idx.table(this.resolveTable(m));
        const c = info.cols.find((x) => x.date) ?? info.cols.find(dateLike);
        if (c) return { table: info.name, column: c.name };
        break;
      }
      if (m || !FILLER.has(this.w(j))) break;
    }
    // 3. for a measure ("revenue in 2025"), the event date nearest the measured table:
    //    ordered_at rather than a product's created_at.
    const mt = this.measureTables();
    if (mt.length > 0) {
      const from = mt[0];
      const cands = [...this.idx.tables.values()]
        .map((info) => ({ info, d: this.idx.distance(from, info.name), c: info.cols.find((x) => x.date) }))
        .filter((x) => x.c && x.d < Infinity)
        .sort((a, b) => a.d - b.d || Number(/created|updated|modified/i.test(a.c!.name)) - Number(/created|updated|modified/i.test(b.c!.name)));
      if (cands[0]) return { table: cands[0].info.name, column: cands[0].c!.name };
    }
    // 4. the subject's, then the nearest table's.
    for (const t of this.nearbyTables()) {
      const info = this.idx.table(t);
      const c = info.cols.find((x) => x.date) ?? info.cols.find(dateLike);
      if (c) return { table: t, column: c.name };
    }
    return null;
  }

  // --- passes ------------------------------------------------------------------------------

  run(): Plan {
    if (this.t.length === 0) fail('the question is empty');
    this.refuseWrites();
    this.mergeCompounds();
    this.findHead();
    this.findSubject();
    this.orderPhrases();
    this.topN();
    this.negations();
    this.dates();
    this.likes();
    this.comparisons();
    this.superlatives();
    this.aggregates();
    this.groupPhrases();
    this.equalities();
    this.values();
    this.leftovers();
    return this.assemble();
  }

  private refuseWrites(): void {
    const first = this.t.find((x) => x.kind === 'word')?.lower ?? '';
    if (/^(delete|remove|update|insert|drop|create|alter|truncate|modify|rename|grant|revoke|erase|purge)$/.test(first)) {
      fail(`the builtin generator writes read-only queries; "${first}" asks to change data`);
    }
  }

  /** "order total" (table + its own column) is one column mention; "first and last name". */
  private mergeCompounds(): void {
    for (let k = 0; k < this.mentions.length - 1; k++) {
      const a = this.mentions[k];
      const b = this.mentions[k + 1];
      if (a.kind !== 'table' || b.kind !== 'column' || b.start !== a.end) continue;
      // Only a singular modifier makes a compound: "order total", not "products cost", and
      // not a verb phrase ("cartoon directed by").
      const last = this.t[a.end - 1];
      if (last.lower !== last.lemma) continue;
      const first = this.t[b.start];
      if (/ed$/.test(first.lower) || ['by', 'of', 'at', 'in', 'on', 'for', 'to'].includes(this.t[b.end - 1].lower)) continue;
      const table = this.resolveTable(a);
      const hit = b.cands.find((c) => c.table === table);
      if (!hit) continue;
      const merged: ColMention = { kind: 'column', start: a.start, end: b.end, cands: [hit], weak: false };
      this.mentions.splice(k, 2, merged);
      for (let i = merged.start; i < merged.end; i++) this.mentionAt[i] = merged;
    }
    // "first and last name(s)" → first_name, last_name.
    for (let i = 0; i + 3 < this.t.length; i++) {
      if (this.w(i) !== 'first' || this.w(i + 1) !== 'and' || this.w(i + 2) !== 'last' || this.t[i + 3].lemma !== 'name') continue;
      const firsts = this.mentions.filter((m) => m.kind === 'column') as ColMention[];
      void firsts;
      const cands = [...this.idx.tables.values()].flatMap((info) => {
        const f = info.cols.find((c) => c.words.join(' ') === 'first name');
        const l = info.cols.find((c) => c.words.join(' ') === 'last name');
        return f && l ? [{ table: info.name, f: f.name, l: l.name }] : [];
      });
      if (cands.length === 0) continue;
      const mf: ColMention = { kind: 'column', start: i, end: i + 1, cands: cands.map((c) => ({ table: c.table, column: c.f, score: 1 })), weak: false };
      const ml: ColMention = { kind: 'column', start: i + 2, end: i + 4, cands: cands.map((c) => ({ table: c.table, column: c.l, score: 1 })), weak: false };
      const old = this.mentions.filter((m) => m.start >= i && m.start < i + 4);
      for (const o of old) this.mentions.splice(this.mentions.indexOf(o), 1);
      this.mentions.push(mf, ml);
      this.mentions.sort((x, y) => x.start - y.start);
      this.mentionAt[i] = mf;
      this.mentionAt[i + 1] = null;
      this.mentionAt[i + 2] = ml;
      this.mentionAt[i + 3] = ml;
      this.used[i + 1] = true;
    }
  }

  private findHead(): void {
    const t = this.t;
    const reach = this.seq(0, ['for|in', 'each|every']) ? 8 : 6;
    for (let i = 0; i < Math.min(t.length, reach); i++) {
      // "how many" / "number of" open the question only after filler ("what is the number of");
      // "which year has the most number of concerts" is not a count.
      if (i > 0 && !FILLER.has(t[i - 1].lower) && !this.seq(0, ['for|in', 'each|every'])) break;
      let n: number;
      if ((n = this.seq(i, ['how', 'many']))) {
        this.use(i, i + n);
        this.headEnd = i + n;
        this.intent = 'count';
        const j = this.skip(i + n, ['different', 'distinct', 'unique', 'separate', 'individual']);
        if (j > i + n) {
          this.distinct = true;
          this.use(i + n, j);
        }
        // "how many units were sold": a sum, not a count of rows.
        const um = this.mentionAt[j];
        if (UNITS_WORDS.has(this.w(j)) && (!um || um.kind === 'value' || um.cands.every((c) => c.score < 0.95))) {
          const m = this.unitsMeasure();
          if (m) {
            this.intent = 'agg';
            this.selectAggs.push({ fn: 'sum', m });
            this.claim(um);
            this.use(j, j + 1);
          }
        }
        return;
      }
      if ((n = this.seq(i, ['how', 'much']))) {
        this.use(i, i + n);
        this.headEnd = i + n;
        this.intent = 'agg';
        return;
      }
      if ((n = this.seq(i, ['total?', 'number|count|amount', 'of'])) && (this.w(i) !== 'amount' || this.w(i + 1) === 'of')) {
        if (this.w(i + n - 2) === 'amount' && this.w(i) !== 'total') continue;
        this.use(i, i + n);
        this.headEnd = i + n;
        this.intent = 'count';
        const j = this.skip(i + n, ['different', 'distinct', 'unique']);
        if (j > i + n) {
          this.distinct = true;
          this.use(i + n, j);
        }
        return;
      }
      if (i === 0 && (n = this.seq(i, ['count']))) {
        n += this.seq(i + n, ['the?', 'total?', 'number|count', 'of']);
        this.use(i, i + n);
        this.headEnd = i + n;
        this.intent = 'count';
        const j = this.skip(i + n, ['the', 'all', 'different', 'distinct', 'unique']);
        if ([...Array(j - i - n).keys()].some((k) => ['different', 'distinct', 'unique'].includes(this.w(i + n + k)))) this.distinct = true;
        this.use(i + n, j);
        return;
      }
    }
    // list / what / which / who …: the head is the leading run of filler words.
    let j = 0;
    while (j < t.length && FILLER.has(t[j].lower) && !this.mentionAt[j]) j++;
    this.headEnd = j;
    if (t.slice(0, j).some((x) => x.lower === 'different' || x.lower === 'distinct' || x.lower === 'unique')) this.distinct = true;
  }

  private findSubject(): void {
    const inGroupOrSuper = (m: Mention): boolean => {
      const p1 = this.w(m.start - 1);
      const p2 = this.w(m.start - 2);
      return ['per', 'each', 'every', 'most', 'fewest', 'least'].includes(p1) || (p1 === 'by' && this.intent !== 'list') || p2 === 'number' && p1 === 'of' && this.intent !== 'count';
    };
    const strong = this.mentions.filter((m) => !m.weak);
    const first = strong.find((m) => m.start >= this.headEnd && m.kind !== 'value') ?? strong.find((m) => m.kind !== 'value');
    // "who …" asks for people.
    if (this.t.some((x, i) => i < 3 && x.lower === 'who')) {
      const persons = [...this.idx.tables.values()].filter((x) => x.person);
      const mentioned = this.tablesInQuestion().filter((x) => this.idx.table(x).person);
      const p = mentioned[0] ?? (persons.length === 1 ? persons[0].name : null);
      if (p && !this.tablesInQuestion().some((x) => x === p && false)) {
        this.subject = p;
        this.target = { k: 'table', table: p, pos: 0 };
        const m = this.mentions.find((x) => x.kind === 'table' && x.cands[0].table === p);
        if (m && m.start <= 3) this.claim(m);
        return;
      }
    }
    if (first && first.kind === 'column' && !AGG_WORDS[this.w(first.start - 1)] && first.start <= this.headEnd + 1) {
      const c = this.resolveColEarly(first);
      // A column named right at the head is what is asked for ("which cities …").
      this.target = { k: 'col', table: c.table, c, pos: first.start, end: first.end };
      this.subject = c.table;
      return;
    }
    const table = this.mentions.find((m) => m.kind === 'table' && !m.weak && !inGroupOrSuper(m)) as TableMention | undefined;
    if (table) {
      this.subject = this.resolveTable(table);
      this.target = { k: 'table', table: this.subject, pos: table.start };
      return;
    }
    const col = strong.find((m) => m.kind === 'column') as ColMention | undefined;
    if (col) {
      const c = this.resolveColEarly(col);
      this.subject = c.table;
      this.target = { k: 'table', table: c.table, pos: col.start };
      return;
    }
    // Measures without a table: "total revenue", "units sold".
    if (this.selectAggs.length > 0) {
      this.subject = measureTable(this.selectAggs[0].m);
      this.target = null;
      return;
    }
    if (this.t.some((x) => REVENUE_WORDS.has(x.lower))) {
      const m = this.revenueMeasure();
      if (m) {
        this.subject = measureTable(m);
        this.target = null;
        return;
      }
    }
    const val = this.mentions.find((m) => m.kind === 'value');
    if (val && val.kind === 'value') {
      this.subject = val.cands[0].table;
      this.target = { k: 'table', table: this.subject, pos: val.start };
      return;
    }
    const anyTable = this.mentions.find((m) => m.kind === 'table') as TableMention | undefined;
    if (anyTable) {
      this.subject = this.resolveTable(anyTable);
      this.target = { k: 'table', table: this.subject, pos: anyTable.start };
      return;
    }
    fail('nothing in the question matches a table or column of this database');
  }

  private resolveColEarly(m: ColMention): ColRef {
    const tables = this.tablesInQuestion();
    for (const t of tables) {
      const hit = m.cands.find((c) => c.table === t);
      if (hit) return { table: hit.table, column: hit.column };
    }
    return this.resolveCol(m);
  }

  /** A measure phrase at i: [agg] column | revenue/units word | "number of" T | T. */
  private measureAt(i: number): { item: Item; end: number } | null {
    let j = this.skip(i, ['the', 'a', 'an', 'their', 'its', 'of', 'total']);
    let fn: AggFn | null = null;
    if (this.seq(j, ['number|count', 'of'])) {
      j = this.skip(j + 2, ['the', 'different', 'distinct']);
      const m = this.mentionAt[j];
      if (m && m.kind === 'table') {
        this.claim(m);
        return { item: { k: 'agg', a: { fn: 'count', m: { k: 'rows', table: this.resolveTable(m) } } }, end: m.end };
      }
      return null;
    }
    if (AGG_WORDS[this.w(j)] && !this.mentionAt[j]) {
      fn = AGG_WORDS[this.w(j)];
      j = this.skip(j + 1, ['the', 'of']);
    }
    const w = this.w(j);
    if (REVENUE_WORDS.has(w)) {
      const m = this.revenueMeasure();
      if (!m) return null;
      return { item: { k: 'agg', a: { fn: fn && fn !== 'max' && fn !== 'min' ? fn : 'sum', m } }, end: j + 1 };
    }
    if (UNITS_WORDS.has(w) && !this.mentionAt[j]) {
      const m = this.unitsMeasure();
      if (!m) return null;
      return { item: { k: 'agg', a: { fn: 'sum', m } }, end: j + 1 };
    }
    const m = this.mentionAt[j];
    if (m && m.kind === 'column') {
      const c = this.resolveCol(m);
      this.claim(m);
      if (fn) return { item: { k: 'agg', a: { fn, m: { k: 'col', c } } }, end: m.end };
      if (this.isChild(c.table) && this.colInfo(c).numeric) {
        return { item: { k: 'agg', a: { fn: this.defaultAgg(c), m: { k: 'col', c } } }, end: m.end };
      }
      return { item: { k: 'col', c }, end: m.end };
    }
    if (m && m.kind === 'table') {
      const table = this.resolveTable(m);
      // "sorted by number of orders" said as "by orders" → count; "by order value" → measure.
      if (['value', 'amount', 'size', 'total'].includes(this.w(m.end))) {
        const c = this.defaultMeasure(table);
        if (c) {
          this.claim(m);
          this.use(m.end, m.end + 1);
          return { item: fn ? { k: 'agg', a: { fn, m: { k: 'col', c } } } : { k: 'col', c }, end: m.end + 1 };
        }
      }
      if (table !== this.subject) {
        this.claim(m);
        return { item: { k: 'agg', a: { fn: 'count', m: { k: 'rows', table } } }, end: m.end };
      }
    }
    return null;
  }

  private defaultAgg(c: ColRef): AggFn {
    const words = this.colInfo(c).words;
    return words.some((x) => ['rating', 'score', 'price', 'age', 'grade', 'rate'].includes(x)) ? 'avg' : 'sum';
  }

  private directionAfter(i: number): { dir: 'ASC' | 'DESC' | null; end: number } {
    const D: [string[], 'ASC' | 'DESC'][] = [
      [['in', 'descending|decreasing|reverse|reversed|desc', 'order?'], 'DESC'],
      [['in', 'ascending|increasing|alphabetical|alphabetic|asc', 'order?'], 'ASC'],
      [['descending|desc|decreasing|descendingly'], 'DESC'], [['ascending|asc|increasing|alphabetically|ascendingly'], 'ASC'],
      [['from?', 'the?', 'highest|largest|biggest|most|greatest|newest|latest|youngest|oldest|longest|heaviest|tallest', 'to', 'the?', 'lowest|smallest|least|fewest|oldest|earliest|youngest|shortest|lightest'], 'DESC'],
      [['from?', 'the?', 'lowest|smallest|least|fewest|oldest|earliest|youngest|shortest|lightest', 'to', 'the?', 'highest|largest|biggest|most|greatest|newest|latest|oldest|youngest|longest|heaviest|tallest'], 'ASC'],
      [['from?', 'high|large|big', 'to', 'low|small'], 'DESC'], [['from?', 'low|small', 'to', 'high|large|big'], 'ASC'],
      [['newest|latest|highest|largest|biggest', 'first'], 'DESC'], [['oldest|earliest|lowest|smallest|cheapest', 'first'], 'ASC'],
    ];
    for (const [s, dir] of D) {
      const n = this.seq(i, s);
      if (n) {
        let d = dir;
        // "from the oldest to the youngest" on an age column means age descending.
        const words = this.t.slice(i, i + n).map((x) => x.lower);
        if (words.includes('oldest') && words.includes('youngest')) d = words.indexOf('oldest') < words.indexOf('youngest') ? 'DESC' : 'ASC';
        return { dir: d, end: i + n };
      }
    }
    return { dir: null, end: i };
  }

  private orderPhrases(): void {
    for (let i = 0; i < this.t.length; i++) {
      let n = this.seq(i, ['ordered|sorted|order|sort|arranged|ranked|rank|organized|organised|listed', 'by|on|according']);
      if (n && this.w(i + n - 1) === 'according') n += this.seq(i + n, ['to']);
      let dirFirst: 'ASC' | 'DESC' | null = null;
      if (!n) {
        const d = this.directionAfter(i);
        if (d.dir && this.w(d.end) === 'of' || (d.dir && this.w(d.end) === 'by')) {
          dirFirst = d.dir;
          n = d.end - i + 1;
        } else if (d.dir && ['alphabetically', 'alphabetical', 'alphabetic'].some((x) => this.t.slice(i, d.end).some((y) => y.lower === x))) {
          this.use(i, d.end);
          this.orderBy.push({ item: { k: 'label', table: this.subject ?? '' }, dir: 'ASC' });
          continue;
        } else if (d.dir && this.t.slice(i, d.end).some((y) => y.lower === 'first')) {
          // "newest first": the date column of the subject.
          const c = this.chooseDateCol(i);
          if (c) {
            this.use(i, d.end);
            this.orderBy.push({ item: { k: 'col', c }, dir: d.dir });
          }
          continue;
        } else continue;
      }
      const at = i + n;
      const meas = this.measureAt(at);
      let item: Item | null = meas?.item ?? null;
      let end = meas?.end ?? at;
      if (!item) {
        const m = this.mentionAt[this.skip(at, ['the', 'their', 'its'])];
        if (m && m.kind === 'table') {
          item = { k: 'label', table: this.resolveTable(m) };
          this.claim(m);
          end = m.end;
        } else continue;
      }
      this.use(i, at);
      this.use(at, end);
      const after = this.directionAfter(this.skip(end, ['and', ',']));
      if (after.dir) this.use(end, after.end);
      this.orderBy.push({ item, dir: dirFirst ?? after.dir ?? 'ASC' });
    }
    // Trailing direction words on their own ("… by price descending" handled above).
  }

  private topN(): void {
    for (let i = 0; i < this.t.length; i++) {
      const w = this.w(i);
      if (this.used[i]) continue;
      if ((w === 'top' || w === 'first' || w === 'limit') && this.num(i + 1) !== null) {
        if (w === 'first' && this.mentionAt[i] && this.mentionAt[i]!.kind === 'column') continue;
        this.limit = this.num(i + 1);
        this.use(i, i + 2);
        if (w === 'top') this.topBy(i + 2, 'DESC');
        continue;
      }
      if (w === 'top' && !this.mentionAt[i] && !this.seq(i, ['top', 'selling|rated'])) {
        // "top customer(s) by revenue" without a number.
        const next = this.mentionAt[this.skip(i + 1, ['the'])];
        if (next && next.kind === 'table') {
          this.limit = this.t[next.end - 1].lower.endsWith('s') && this.t[next.end - 1].lower !== this.t[next.end - 1].lemma ? 10 : 1;
          this.use(i, i + 1);
          this.topBy(i + 1, 'DESC');
        }
        continue;
      }
      const n = this.num(i);
      if (n !== null && !this.isYear(i)) {
        const nx = this.w(i + 1);
        const isSuper = SUPERLATIVES.some(([s]) => s[0] === nx) || ['most', 'least', 'top'].includes(nx);
        const prev = this.w(i - 1);
        if (isSuper && !['than', 'least', 'most', 'over', 'under', 'above', 'below'].includes(prev)) {
          this.limit = n;
          this.use(i, i + 1);
        } else if (['the', 'last'].includes(prev) && this.mentionAt[i + 1]?.kind === 'table' && ['most', 'highest', 'lowest', 'latest', 'newest', 'recent', 'largest', 'cheapest', 'with'].some((x) => this.t.slice(i + 1, i + 6).some((y) => y.lower === x))) {
          this.limit = n;
          this.use(i, i + 1);
          if (prev === 'last') this.use(i - 1, i);
        } else if (this.mentionAt[i + 1]?.kind === 'table' && this.seq(this.mentionAt[i + 1]!.end, ['with|by|having', 'the?', 'most|highest|lowest|largest|fewest|least|biggest|smallest|greatest|best|worst'])) {
          this.limit = n;
          this.use(i, i + 1);
        }
      }
    }
  }

  /** After "top N": "[entity] by <measure>". */
  private topBy(i: number, dir: 'ASC' | 'DESC'): void {
    let j = i;
    const m = this.mentionAt[this.skip(j, ['the'])];
    if (m && m.kind === 'table') j = m.end;
    else if (m && m.kind === 'column' && this.target?.k === 'col') j = m.end;
    const by = this.seq(j, ['by|in|for']);
    if (!by) return;
    const meas = this.measureAt(j + by);
    if (!meas) return;
    this.use(j, j + by);
    this.use(j + by, meas.end);
    this.orderBy.push({ item: meas.item, dir });
  }

  private verbTarget(words: string[], exclude: string): string | null {
    let best: string | null = null;
    let bestD = Infinity;
    for (const info of this.idx.tables.values()) {
      if (info.name === exclude || !info.words.some((x) => words.includes(x))) continue;
      const d = this.idx.distance(exclude, info.name);
      if (d < bestD) {
        best = info.name;
        bestD = d;
      }
    }
    return best;
  }

  private negations(): void {
    if (!this.subject) return;
    const subject = this.subject;
    for (let i = 0; i < this.t.length; i++) {
      if (this.used[i]) continue;
      let start = -1;
      let j = i;
      const w = this.w(i);
      let afterNot = this.skip(i + 1, ['have', 'has', 'had', 'own', 'owns', 'possess', 'a', 'an', 'any']);
      // "did not operate any treatment": an unknown verb between "not" and the table.
      if (!this.mentionAt[afterNot] && this.t[afterNot]?.kind === 'word' && !STOPWORDS.has(this.w(afterNot))) {
        const k = this.skip(afterNot + 1, ['a', 'an', 'any', 'the', 'single', 'on', 'in', 'for', 'with', 'through']);
        const km = this.mentionAt[k];
        if (km && km.kind === 'table' && this.resolveTable(km) !== subject) afterNot = k;
      }
      const nextM = this.mentionAt[afterNot];
      const notOk =
        w === 'not' &&
        (!this.mentionAt[i + 1] || (nextM?.kind === 'table' && this.resolveTable(nextM) !== subject) || nextM?.kind === 'value' || VERBS[this.w(i + 1)] !== undefined);
      if (['except', 'excluding', 'besides'].includes(w)) {
        // "all stadiums except (for) stadiums having a concert in 2014"
        let k = this.skip(i + 1, ['for', 'those', 'the', 'ones', 'that', 'which', 'who', 'having', 'have', 'has', 'had', 'with', 'a', 'an', 'any', 'some']);
        const sm = this.mentionAt[k];
        if (sm && sm.kind === 'table' && this.resolveTable(sm) === subject) {
          k = this.skip(sm.end, ['that', 'which', 'who', 'having', 'have', 'has', 'had', 'with', 'a', 'an', 'any', 'some']);
          const tm = this.mentionAt[k];
          if (tm && tm.kind === 'table' && this.resolveTable(tm) !== subject && this.idx.distance(subject, this.resolveTable(tm)) < Infinity) {
            this.claim(sm);
            this.claim(tm);
            this.use(i, tm.end);
            let scopeEnd = tm.end;
            while (scopeEnd < this.t.length && !['and', 'but', 'or'].includes(this.w(scopeEnd))) scopeEnd++;
            this.exists.push({ negate: true, target: this.resolveTable(tm), conds: [], pos: i, end: scopeEnd });
            continue;
          }
        }
      }
      if (w === 'never' || notOk || w === 'without' || (w === 'no' && i > 0)) {
        start = i;
        j = this.skip(i + 1, ['have', 'has', 'had', 'been', 'ever', 'yet', 'any', 'a', 'an', 'the', 'single', 'even', 'once', 'made', 'placed', 'written', 'got', 'received', 'did', 'do', 'does', 'not', 'own', 'owns', 'possess']);
      }
      if (start < 0) continue;
      // "do not have a cat pet": the value stays a condition inside the negation; the table
      // after it (or the value's own table) is what must not exist.
      const vm = this.mentionAt[j];
      if (vm && vm.kind === 'value' && (w === 'not' || w === 'no' || w === 'without' || w === 'never')) {
        const after = this.skip(vm.end, ['as', 'a', 'an', 'their', 'its']);
        const tm = this.mentionAt[after];
        const vt = vm.cands[0].table;
        const target = tm && tm.kind === 'table' && this.resolveTable(tm) !== subject ? this.resolveTable(tm) : vt !== subject ? vt : null;
        if (target && this.isChild(target)) {
          if (tm && tm.kind === 'table' && this.resolveTable(tm) === target) this.claim(tm);
          this.use(start, j);
          let scopeEnd = Math.max(vm.end, tm && this.claimed.has(tm) ? tm.end : vm.end);
          while (scopeEnd < this.t.length && !['and', 'but', 'or', 'who', 'that', 'which', 'whose', 'with'].includes(this.w(scopeEnd))) scopeEnd++;
          this.exists.push({ negate: true, target, conds: [], pos: start, end: scopeEnd });
          continue;
        }
      }
      // "not" followed by a value/comparison is handled elsewhere ("not shipped", "not in Berlin").
      let target: string | null = null;
      let end = j;
      const m = this.mentionAt[j];
      if (m && m.kind === 'table' && this.resolveTable(m) !== subject) {
        target = this.resolveTable(m);
        this.claim(m);
        end = m.end;
      } else if (w === 'not' && nextM && nextM.kind === 'table' && this.resolveTable(nextM) !== subject) {
        target = this.resolveTable(nextM);
        this.claim(nextM);
        end = nextM.end;
      } else if (VERBS[this.w(j)]) {
        target = this.verbTarget(VERBS[this.w(j)], subject);
        end = j + 1;
        // "never placed an order": the object names the table more precisely.
        const k = this.skip(end, ['a', 'an', 'any', 'the', 'single']);
        const obj = this.mentionAt[k];
        if (obj && obj.kind === 'table' && this.resolveTable(obj) !== subject) {
          target = this.resolveTable(obj);
          this.claim(obj);
          end = obj.end;
        }
      } else {
        // "placed" etc. before a table: never placed any orders.
        const k = this.skip(j, ['placed', 'made', 'written', 'left', 'given', 'submitted', 'got', 'received', 'a', 'an', 'any']);
        const obj = this.mentionAt[k];
        if (k !== j && obj && obj.kind === 'table' && this.resolveTable(obj) !== subject) {
          target = this.resolveTable(obj);
          this.claim(obj);
          end = obj.end;
        }
      }
      if (!target) continue;
      if (this.idx.distance(subject, target) === Infinity) fail(`no foreign-key path connects ${subject} and ${target}`);
      this.use(start, end);
      // The scope runs to the end of the clause: conditions there belong inside NOT EXISTS.
      let scopeEnd = end;
      while (scopeEnd < this.t.length && !['and', 'but', 'or', 'who', 'that', 'which', 'whose', 'with'].includes(this.w(scopeEnd))) scopeEnd++;
      this.exists.push({ negate: true, target, conds: [], pos: start, end: scopeEnd });
    }
  }

  private parseDate(i: number): DateRange | null {
    const tok = this.t[i];
    if (!tok) return null;
    if (tok.kind === 'date') {
      const [y, m, d] = tok.raw.slice(0, 10).split('-').map(Number);
      const next = new Date(Date.UTC(y, m - 1, d + 1));
      return { from: iso(y, m, d), to: iso(next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate()), len: 1, year: y, part: 'day' };
    }
    let j = i;
    if (this.w(j) === 'the') j++;
    if (this.w(j) === 'year' && this.isYear(j + 1)) j++;
    const month = MONTHS[this.w(j)];
    if (month && this.w(j) !== 'may' || (this.w(j) === 'may' && this.isYear(j + 1))) {
      const m = MONTHS[this.w(j)];
      const k = this.w(j + 1) === 'of' ? j + 2 : j + 1;
      if (this.isYear(k)) {
        const y = this.t[k].num!;
        const ny = m === 12 ? y + 1 : y;
        const nm = m === 12 ? 1 : m + 1;
        return { from: iso(y, m, 1), to: iso(ny, nm, 1), len: k + 1 - i, year: y, part: 'month' };
      }
      return null;
    }
    const qm = this.w(j).match(/^q([1-4])$/);
    if (qm && this.isYear(j + 1)) {
      const q = Number(qm[1]);
      const y = this.t[j + 1].num!;
      const sm = (q - 1) * 3 + 1;
      return { from: iso(y, sm, 1), to: q === 4 ? iso(y + 1, 1, 1) : iso(y, sm + 3, 1), len: j + 2 - i, year: y, part: 'month' };
    }
    if (this.isYear(j)) {
      const y = this.t[j].num!;
      return { from: iso(y, 1, 1), to: iso(y + 1, 1, 1), len: j + 1 - i, year: y, part: 'year' };
    }
    return null;
  }

  private addDateCond(c: ColRef, from: string | null, to: string | null, pos: number, r: { a?: DateRange; b?: DateRange }): void {
    const info = this.colInfo(c);
    if (info.year && !info.date) {
      // Integer year column: compare years.
      const fy = from ? Number(from.slice(0, 4)) : null;
      const ty = to ? Number(to.slice(0, 4)) - (to.slice(5) === '01-01' ? 0 : -1) : null;
      void r;
      let cond: Cond;
      if (fy !== null && ty !== null && ty - fy === 1) cond = { k: 'cmp', c, op: '=', value: fy };
      else if (fy !== null && ty !== null) {
        const c1: Cond = { k: 'cmp', c, op: '>=', value: fy };
        this.conds.push(c1);
        this.condPos.set(c1, pos);
        cond = { k: 'cmp', c, op: '<', value: ty };
      } else if (fy !== null) cond = { k: 'cmp', c, op: '>=', value: fy };
      else cond = { k: 'cmp', c, op: '<', value: ty! };
      this.conds.push(cond);
      this.condPos.set(cond, pos);
      return;
    }
    const cond: Cond = { k: 'range', c, from, to };
    this.conds.push(cond);
    this.condPos.set(cond, pos);
  }

  private dates(): void {
    for (let i = 0; i < this.t.length; i++) {
      if (this.used[i]) continue;
      const w = this.w(i);
      // between A and B / from A to B
      if (this.seq(i, ['between|from'])) {
        const a = this.parseDate(i + 1);
        if (a && this.seq(i + 1 + a.len, ['and|to|until|till|through|-'])) {
          const b = this.parseDate(i + 2 + a.len);
          if (b) {
            const c = this.chooseDateCol(i);
            if (!c) fail('no date column to apply the date range to');
            this.use(i, i + 2 + a.len + b.len);
            this.addDateCond(c, a.from, b.to, i, { a, b });
            continue;
          }
        }
      }
      const preps: Record<string, 'in' | 'since' | 'after' | 'before' | 'until'> = {
        in: 'in', during: 'in', for: 'in', of: 'in', on: 'in', within: 'in', throughout: 'in',
        since: 'since', from: 'since', starting: 'since',
        after: 'after', before: 'before', until: 'until', till: 'until', through: 'until', by: 'until',
      };
      const kind = preps[w];
      let at = i + 1;
      if (w === 'starting' && this.w(i + 1) === 'from') at++;
      if (kind && (w !== 'by' || this.isYear(at))) {
        const r = this.parseDate(at);
        if (!r) continue;
        const c = this.chooseDateCol(i);
        if (!c) fail('no date column to apply the date to');
        this.use(i, at + r.len);
        // "in 2014 or 2015": consecutive periods make one range.
        if (kind === 'in' && this.w(at + r.len) === 'or') {
          const r2 = this.parseDate(at + r.len + 1);
          if (r2 && r2.from === r.to) {
            this.use(at + r.len, at + r.len + 1 + r2.len);
            this.addDateCond(c, r.from, r2.to, i, { a: r, b: r2 });
            continue;
          }
          if (r2 && r2.part === 'year' && r.part === 'year' && this.colInfo(c).year) {
            this.use(at + r.len, at + r.len + 1 + r2.len);
            const cond: Cond = { k: 'in', c, values: [r.year, r2.year], negate: false };
            this.conds.push(cond);
            this.condPos.set(cond, i);
            continue;
          }
        }
        const open = this.seq(at + r.len, ['or|and', 'after|later|since|onwards|beyond']) || this.seq(at + r.len, ['onwards|onward']);
        const upTo = this.seq(at + r.len, ['or|and', 'before|earlier|prior']);
        if (kind === 'in' && open) {
          this.use(at + r.len, at + r.len + open);
          this.addDateCond(c, r.from, null, i, { a: r });
        } else if (kind === 'in' && upTo) {
          this.use(at + r.len, at + r.len + upTo);
          this.addDateCond(c, null, r.to, i, { a: r });
        } else if (kind === 'in') this.addDateCond(c, r.from, r.to, i, { a: r });
        else if (kind === 'since') this.addDateCond(c, r.from, null, i, { a: r });
        else if (kind === 'after') this.addDateCond(c, r.to, null, i, { a: r });
        else if (kind === 'before') this.addDateCond(c, null, r.from, i, { a: r });
        else this.addDateCond(c, null, r.to, i, { a: r });
        continue;
      }
      // A bare month + year or ISO date ("orders March 2025") is a range too.
      if (this.t[i].kind === 'date' || (MONTHS[w] && w !== 'may' && this.isYear(i + 1))) {
        const r = this.parseDate(i);
        if (!r) continue;
        const c = this.chooseDateCol(i);
        if (!c) fail('no date column to apply the date to');
        this.use(i, i + r.len);
        this.addDateCond(c, r.from, r.to, i, { a: r });
      }
    }
  }

  private likes(): void {
    for (let i = 0; i < this.t.length; i++) {
      if (this.used[i]) continue;
      let how: 'prefix' | 'suffix' | 'contains' | null = null;
      let n: number;
      if ((n = this.seq(i, ['start|starts|starting|begin|begins|beginning|started|began', 'with|by|in']))) how = 'prefix';
      else if ((n = this.seq(i, ['end|ends|ending|ended', 'with|in']))) how = 'suffix';
      else if ((n = this.seq(i, ['contain|contains|containing|include|includes|including|like|with', 'the?', 'word|letter|string|text|substring|phrase?']))) how = 'contains';
      if (!how) continue;
      const j = this.skip(i + n, ['the', 'letter', 'word', 'string', 'a', 'an']);
      const tok = this.t[j];
      if (!tok || this.used[j]) continue;
      let pattern: string;
      if (tok.kind === 'quoted') pattern = tok.raw;
      else if (how !== 'contains' && (tok.kind === 'word' || tok.kind === 'number') && !(this.mentionAt[j] && this.mentionAt[j]!.kind !== 'value' && tok.raw.length > 1)) pattern = tok.raw;
      else continue;
      // "with 'x' in their name" names the column after the literal.
      let c: ColRef | null = null;
      let after = j + 1;
      const tail = this.seq(j + 1, ['in|within', 'the|their|its|his|her?']);
      if (tail) {
        const cm = this.mentionAt[j + 1 + tail];
        if (cm && cm.kind === 'column') {
          c = this.resolveCol(cm);
          this.claim(cm);
          after = cm.end;
        }
      }
      if (!c) {
        for (let k = i - 1; k >= Math.max(0, i - 4); k--) {
          const cm = this.mentionAt[k];
          if (cm && cm.kind === 'column' && this.colInfo(this.resolveCol(cm)).text) {
            c = this.resolveCol(cm);
            this.claim(cm);
            break;
          }
          if (cm && cm.kind === 'table') break;
        }
      }
      if (!c) {
        const s = this.subject ? this.idx.table(this.subject) : null;
        const col = s?.label[0] ?? s?.cols.find((x) => x.text && !x.pk)?.name;
        if (!s || !col) continue;
        c = { table: s.name, column: col };
      }
      const negate = this.w(i - 1) === 'not' || this.w(i - 2) === 'not';
      if (negate) this.use(this.w(i - 1) === 'not' ? i - 1 : i - 2, i);
      this.use(i, Math.max(after, j + 1));
      const cond: Cond = { k: 'like', c, pattern, negate, how };
      this.conds.push(cond);
      this.condPos.set(cond, i);
    }
  }

  /** What a comparison is about, looking back from the comparator at i. */
  private comparedBefore(i: number): { item: Item; agg: boolean; start: number } | null {
    const skipBack = new Set(['is', 'are', 'was', 'were', 'be', 'of', 'a', 'an', 'the', 'with', 'has', 'have', 'had', 'having', 'whose', 'that', 'which', 'where', 'their', 'its', 'value', 'been', 'total', 'own', 'own', 'than']);
    for (let k = i - 1; k >= Math.max(0, i - 5); k--) {
      const w = this.w(k);
      if (this.used[k] && !this.mentionAt[k]) {
        if (skipBack.has(w)) continue;
        return null;
      }
      if (REVENUE_WORDS.has(w)) {
        const m = this.revenueMeasure();
        if (m) {
          this.use(k, k + 1);
          return { item: { k: 'agg', a: { fn: 'sum', m } }, agg: true, start: k };
        }
      }
      if (w === 'sold' || w === 'sell' || w === 'sells') {
        const m = this.unitsMeasure();
        if (m) {
          this.use(k, k + 1);
          return { item: { k: 'agg', a: { fn: 'sum', m } }, agg: true, start: k };
        }
      }
      const m = this.mentionAt[k];
      if (m && m.kind === 'column') {
        const c = this.resolveCol(m);
        // Numbers stored as text (common in SQLite files) compare too; the column was named.
        if (this.colInfo(c).pk && !this.colInfo(c).numeric) return null;
        this.claim(m);
        const aw = AGG_WORDS[this.w(m.start - 1)];
        if (aw && !this.used[m.start - 1]) {
          this.use(m.start - 1, m.start);
          return { item: { k: 'agg', a: { fn: aw, m: { k: 'col', c } } }, agg: true, start: m.start - 1 };
        }
        if (this.isChild(c.table) && this.defaultAgg(c) === 'avg') {
          return { item: { k: 'agg', a: { fn: 'avg', m: { k: 'col', c } } }, agg: true, start: m.start };
        }
        return { item: { k: 'col', c }, agg: false, start: m.start };
      }
      if (m && m.kind === 'table') {
        // "orders over 500": the table's measure.
        const c = this.defaultMeasure(this.resolveTable(m));
        if (c) return { item: { k: 'col', c }, agg: false, start: k + 1 };
        return null;
      }
      // Verbs and synonyms that name a column: "costs more than", "rated above".
      const syn = SYNONYMS[w] ?? SYNONYMS[this.t[k]?.lemma ?? ''];
      if (syn && !m) {
        const c = this.findColumn(syn.flatMap((s) => s.split(' ')), this.nearbyTables(), (x) => x.numeric);
        if (c) {
          this.use(k, k + 1);
          if (this.isChild(c.table)) return { item: { k: 'agg', a: { fn: this.defaultAgg(c), m: { k: 'col', c } } }, agg: true, start: k };
          return { item: { k: 'col', c }, agg: false, start: k };
        }
      }
      if (!skipBack.has(w) && !FILLER.has(w)) return null;
    }
    return null;
  }

  private comparisons(): void {
    for (let i = 0; i < this.t.length; i++) {
      if (this.used[i]) continue;
      // "N or more T" / "N or fewer T"
      let op: Cmp | null = null;
      let n = 0;
      let numAt: number;
      let comparative: { words: string[]; op: Cmp } | null = null;
      const cw = COMPARATIVE_COLUMNS[this.w(i)];
      if (cw && this.w(i + 1) === 'than') {
        comparative = cw;
        op = cw.op;
        n = 2;
      }
      // "a greater weight than 10": the column sits inside the comparator.
      const split = COMPARATORS.find(([ws]) => ws.length === 2 && ws[1] === 'than' && ws[0] === this.w(i));
      const sm = this.mentionAt[i + 1];
      if (!op && split && sm && sm.kind === 'column' && this.w(sm.end) === 'than' && this.num(sm.end + 1) !== null) {
        const c = this.resolveCol(sm);
        const v = this.num(sm.end + 1)!;
        this.claim(sm);
        this.use(i, sm.end + 2);
        this.addCmp({ k: 'col', c }, split[1], v, null, i);
        continue;
      }
      if (!op && this.w(i) === 'between') {
        op = '>=';
        n = 1;
      }
      if (!op) {
        for (const [s, o] of COMPARATORS) {
          if (s[0] === 'or') continue;
          const len = this.seq(i, s);
          if (len) {
            op = o;
            n = len;
            break;
          }
        }
      }
      if (!op) continue;
      numAt = this.skip(i + n, ['a', 'an', 'the', 'total', 'of', 'value']);
      // "above age 20": the column between comparator and number.
      let between: ColRef | null = null;
      const bm = this.mentionAt[numAt];
      if (bm && bm.kind === 'column' && this.num(bm.end) !== null) {
        between = this.resolveCol(bm);
        this.claim(bm);
        numAt = bm.end;
      }
      const value = this.num(numAt);
      if (value === null) continue;
      let value2: number | null = null;
      if (this.w(i) === 'between' && this.w(numAt + 1) === 'and' && this.num(numAt + 2) !== null) {
        value2 = this.num(numAt + 2);
      }
      // "more than 1000 euros/dollars": currency words add nothing.
      let after = (value2 !== null ? numAt + 3 : numAt + 1);
      after = this.skip(after, ['euro', 'euros', 'dollar', 'dollars', 'eur', 'usd', 'gbp', 'pounds', 'year', 'years', 'old', 'different', 'distinct', 'separate']);
      const negate = this.w(i - 1) === 'not';
      if (negate) op = ({ '>': '<=', '>=': '<', '<': '>=', '<=': '>', '=': '<>', '<>': '=' } as const)[op];
      const startTok = negate ? i - 1 : i;
      const hv = (a: Agg): void => {
        const o = op!;
        if (value2 !== null) {
          this.having.push({ a, op: '>=', value: value! }, { a, op: '<=', value: value2 });
        } else this.having.push({ a, op: o, value: value! });
      };
      // "at least 200 in stock": the column follows "in".
      if (this.w(after) === 'in' && this.mentionAt[after + 1]?.kind === 'column') after++;
      // After the number: a table ("more than 5 orders") or a measure word.
      const am = this.mentionAt[after];
      if (!comparative && am && am.kind === 'table' && (this.resolveTable(am) !== this.subject || this.target?.k === 'col')) {
        const table = this.resolveTable(am);
        this.claim(am);
        this.use(startTok, after);
        const distinct = this.t.slice(numAt, after).some((x) => ['different', 'distinct', 'separate'].includes(x.lower));
        if ((op === '<' || op === '<=' || (op === '=' && value === 0)) && value2 === null && !distinct && table !== this.subject) {
          this.counts.push({ target: table, op, value, conds: [] });
        } else {
          const a: Agg = { fn: 'count', m: { k: 'rows', table } };
          hv(a);
        }
        this.wantsEntityGroup = true;
        continue;
      }
      if (!comparative && (UNITS_WORDS.has(this.w(after)) || REVENUE_WORDS.has(this.w(after))) && !this.mentionAt[after]) {
        const m = UNITS_WORDS.has(this.w(after)) ? this.unitsMeasure() : this.revenueMeasure();
        if (m) {
          this.use(startTok, after + 1);
          // "sold more than 100 units": the verb belongs to this measure.
          if (UNITS_WORDS.has(this.w(startTok - 1)) || REVENUE_WORDS.has(this.w(startTok - 1))) this.use(startTok - 1, startTok);
          hv({ fn: 'sum', m });
          this.wantsEntityGroup = true;
          continue;
        }
      }
      if (!comparative && am && am.kind === 'column' && this.colInfo(this.resolveCol(am)).numeric) {
        const c = this.resolveCol(am);
        this.claim(am);
        this.use(startTok, after);
        this.addCmp({ k: 'col', c }, op, value!, value2, i);
        continue;
      }
      let subjectOf: { item: Item; agg: boolean } | null;
      if (between) {
        subjectOf = { item: { k: 'col', c: between }, agg: false };
      } else if (comparative) {
        const c = this.findColumn(comparative.words, this.nearbyTables(), (x) => x.numeric || x.date);
        if (!c) continue;
        subjectOf = { item: { k: 'col', c }, agg: false };
      } else {
        subjectOf = this.comparedBefore(i);
      }
      if (!subjectOf) {
        const c = this.defaultMeasure(this.subject);
        if (!c) fail(`could not tell what "${this.t.slice(i, numAt + 1).map((x) => x.raw).join(' ')}" compares`);
        subjectOf = { item: { k: 'col', c }, agg: false };
      }
      this.use(startTok, Math.max(after, numAt + 1));
      if (subjectOf.item.k === 'agg') {
        hv(subjectOf.item.a);
        this.wantsEntityGroup = true;
      } else {
        this.addCmp(subjectOf.item, op, value!, value2, i);
      }
    }
    // "N or more orders"
    for (let i = 0; i < this.t.length; i++) {
      const v = this.num(i);
      if (v === null) continue;
      const n = this.seq(i + 1, ['or', 'more|less|fewer|greater|higher|lower|above|below']);
      if (!n) continue;
      const op: Cmp = ['more', 'greater', 'higher', 'above'].includes(this.w(i + 2)) ? '>=' : '<=';
      const am = this.mentionAt[this.skip(i + 1 + n, ['different'])];
      if (am && am.kind === 'table' && (this.resolveTable(am) !== this.subject || this.target?.k === 'col')) {
        this.claim(am);
        this.use(i, i + 1 + n);
        if (op === '<=' && this.resolveTable(am) !== this.subject) this.counts.push({ target: this.resolveTable(am), op, value: v, conds: [] });
        else this.having.push({ a: { fn: 'count', m: { k: 'rows', table: this.resolveTable(am) } }, op, value: v });
        this.wantsEntityGroup = true;
        continue;
      }
      const before = this.comparedBefore(i);
      const item = before?.item ?? (this.defaultMeasure(this.subject) ? { k: 'col' as const, c: this.defaultMeasure(this.subject)! } : null);
      if (!item) continue;
      this.use(i, i + 1 + n);
      if (item.k === 'agg') {
        this.having.push({ a: item.a, op, value: v });
        this.wantsEntityGroup = true;
      } else this.addCmp(item, op, v, null, i);
    }
  }

  private addCmp(item: Item, op: Cmp, value: number, value2: number | null, pos: number): void {
    if (item.k !== 'col') return;
    const add = (o: Cmp, v: number): void => {
      const cond: Cond = { k: 'cmp', c: item.c, op: o, value: v };
      this.conds.push(cond);
      this.condPos.set(cond, pos);
    };
    if (value2 !== null) {
      add('>=', value);
      add('<=', value2);
    } else add(op, value);
  }

  private superItem(kind: SuperKind, at: number): Item | null {
    const tables = this.nearbyTables();
    const subj = this.target?.k === 'table' ? this.target.table : this.subject;
    const preferTables = subj ? [subj, ...tables.filter((x) => x !== subj)] : tables;
    const asItem = (c: ColRef): Item => {
      if (this.isChild(c.table) && this.target?.k === 'table') return { k: 'agg', a: { fn: this.defaultAgg(c), m: { k: 'col', c } } };
      return { k: 'col', c };
    };
    switch (kind.k) {
      case 'column': {
        const c = this.findColumn(kind.words, preferTables, (x) => x.numeric || x.date);
        if (c) return asItem(c);
        if (kind.words.includes('age')) {
          const d = this.chooseDateCol(at);
          return d ? { k: 'col', c: d } : null;
        }
        return null;
      }
      case 'date': {
        const d = this.chooseDateCol(at);
        return d ? { k: 'col', c: d } : null;
      }
      case 'measure': {
        const meas = this.measureAt(at);
        if (meas) return meas.item;
        // "whose number of products is the largest": the column named just before.
        for (let k = at - 2; k >= Math.max(0, at - 6); k--) {
          const m = this.mentionAt[k];
          if (m && m.kind === 'column' && !this.claimed.has(m)) {
            const c = this.resolveCol(m);
            if (this.colInfo(c).numeric || this.colInfo(c).date) {
              this.claim(m);
              return asItem(c);
            }
          }
          if (m || !['is', 'are', 'was', 'the', 'a', 'its', 'their', 'has', 'have', 'with'].includes(this.w(k))) break;
        }
        const c = this.defaultMeasure(subj);
        return c ? { k: 'col', c } : null;
      }
      case 'sold': {
        const m = this.unitsMeasure();
        if (m) return { k: 'agg', a: { fn: 'sum', m } };
        const child = tables.find((x) => this.isChild(x));
        return child ? { k: 'agg', a: { fn: 'count', m: { k: 'rows', table: child } } } : null;
      }
      case 'rating': {
        const c = this.findColumn(['rating', 'score', 'stars', 'grade', 'rank'], preferTables, (x) => x.numeric);
        return c ? (this.isChild(c.table) ? { k: 'agg', a: { fn: 'avg', m: { k: 'col', c } } } : { k: 'col', c }) : null;
      }
    }
  }

  private superlatives(): void {
    for (let i = 0; i < this.t.length; i++) {
      if (this.used[i]) continue;
      // most / fewest + table: "the customer with the most orders".
      const mf = this.seq(i, ['most|fewest|least|highest|largest|biggest|greatest|lowest|smallest', 'number|count|amount?', 'of?']);
      if (mf) {
        const j = this.skip(i + mf, ['different', 'distinct']);
        const m = this.mentionAt[j];
        const dir = ['most', 'highest', 'largest', 'biggest', 'greatest'].includes(this.w(i)) ? 'DESC' : 'ASC';
        if (m && m.kind === 'table' && this.resolveTable(m) !== (this.target?.k === 'table' ? this.target.table : null)) {
          this.claim(m);
          this.use(i, j);
          this.orderBy.unshift({ item: { k: 'agg', a: { fn: 'count', m: { k: 'rows', table: this.resolveTable(m) } } }, dir });
          this.limit ??= 1;
          this.wantsEntityGroup = true;
          continue;
        }
        if (this.w(i) === 'most' || this.w(i) === 'least') {
          const w2 = this.w(i + 1);
          if (REVENUE_WORDS.has(w2) || UNITS_WORDS.has(w2)) {
            const ms = REVENUE_WORDS.has(w2) ? this.revenueMeasure() : this.unitsMeasure();
            if (ms) {
              this.use(i, i + 2);
              this.orderBy.unshift({ item: { k: 'agg', a: { fn: 'sum', m: ms } }, dir });
              this.limit ??= 1;
              this.wantsEntityGroup = true;
              continue;
            }
          }
        }
      }
      let hit: [string[], SuperKind] | null = null;
      for (const s of SUPERLATIVES) {
        if (this.seq(i, s[0]) === s[0].length) {
          hit = s;
          break;
        }
      }
      if (!hit) continue;
      const [words, kind] = hit;
      const end = i + words.length;
      // "what is the highest price" (the column is what is asked) → MAX(price), not a row.
      const next = this.mentionAt[this.skip(end, ['the'])];
      const isAggQuestion =
        (kind.k === 'measure' || (words.length === 1 && AGG_WORDS[words[0]])) &&
        next && next.kind === 'column' && !this.claimed.has(next) &&
        (!this.target || this.target.pos >= next.start || (this.target.k === 'col' && this.target.pos === next.start)) &&
        this.intent !== 'count' && this.limit === null;
      if (isAggQuestion) continue; // aggregates() takes it
      const item = this.superItem(kind, end);
      if (!item) {
        if (kind.k === 'measure') continue;
        fail(`"${words.join(' ')}" does not match a column here`);
      }
      this.use(i, end);
      let dir = kind.dir;
      // Without an age column, "oldest" means the earliest date (and "youngest" the latest).
      if (kind.k === 'column' && kind.words.includes('age') && item.k === 'col' && this.colInfo(item.c).date) dir = dir === 'DESC' ? 'ASC' : 'DESC';
      this.orderBy.unshift({ item, dir });
      if (item.k === 'agg') this.wantsEntityGroup = true;
      this.limit ??= 1;
    }
  }

  private aggregates(): void {
    for (let i = 0; i < this.t.length; i++) {
      if (this.used[i]) continue;
      // "average, minimum and maximum age": several functions, one column.
      const fns: AggFn[] = [];
      let j = i;
      while (j < this.t.length && !this.used[j]) {
        const f = AGG_WORDS[this.w(j)];
        const m = this.mentionAt[j];
        // "first"/"last"/"latest" aggregate only a date or number ("the first order date"),
        // never a name ("first name").
        if (f && ['first', 'last', 'latest', 'earliest', 'top'].includes(this.w(j))) {
          const nm = this.mentionAt[j + 1];
          if (!nm || nm.kind !== 'column') break;
          const ci = this.colInfo(this.resolveCol(nm));
          if (!ci.date && !ci.numeric) break;
        }
        if (f && !(m && !m.weak)) {
          fns.push(f);
          j++;
          j = this.skip(j, ['and', ',', 'or', 'the']);
          continue;
        }
        break;
      }
      if (fns.length === 0) continue;
      if (this.seq(j, ['number|count', 'of']) && fns.length === 1 && this.w(i) === 'total') {
        continue; // "total number of" is a count, handled by the head.
      }
      const meas = this.measureAt(this.skip(j, ['of', 'the']));
      let item: Item | null = meas?.item ?? null;
      let end = meas?.end ?? j;
      if (!item) {
        // "the total of order 42" (orders.total) or "the average" with the subject's measure.
        const m = this.mentionAt[i];
        if (m && m.kind === 'column') continue;
        const c = this.defaultMeasure(this.subject);
        if (!c || fns.length !== 1) continue;
        item = { k: 'col', c };
        end = i + 1;
      }
      const base = item.k === 'agg' ? item.a.m : item.k === 'col' ? ({ k: 'col', c: item.c } as Measure) : null;
      if (!base) continue;
      this.use(i, end);
      for (const f of fns) {
        if (item.k === 'agg' && fns.length === 1 && item.a.fn !== 'count') this.selectAggs.push({ ...item.a, fn: item.a.m.k === 'rows' ? 'count' : f });
        else this.selectAggs.push({ fn: base.k === 'rows' ? 'count' : f, m: base });
      }
      if (this.intent === 'list') this.intent = 'agg';
      i = end - 1;
    }
    // "… and the number of singers in each country": a count anywhere in the question.
    for (let i = 0; i < this.t.length; i++) {
      if (this.used[i] || !this.seq(i, ['number|count|total', 'of'])) continue;
      // "staff number of the museum" names a column, not a count.
      if (i > 0 && !FILLER.has(this.w(i - 1)) && !this.mentionAt[i - 1]) continue;
      if (i > 0 && this.mentionAt[i - 1]?.kind === 'column') continue;
      if (this.w(i) === 'total' && !this.seq(i, ['total', 'number|count'])) continue;
      const meas = this.measureAt(i);
      if (!meas || meas.item.k !== 'agg') continue;
      this.use(i, meas.end);
      this.selectAggs.push(meas.item.a);
      if (this.intent === 'list') this.intent = 'agg';
    }
    // Bare measure words: "revenue per category", "units sold by month".
    for (let i = 0; i < this.t.length; i++) {
      if (this.used[i] || this.mentionAt[i]) continue;
      const w = this.w(i);
      if (REVENUE_WORDS.has(w) || (UNITS_WORDS.has(w) && (this.intent === 'count' || this.w(i + 1) === 'sold' || w === 'sold'))) {
        const m = REVENUE_WORDS.has(w) ? this.revenueMeasure() : this.unitsMeasure();
        if (!m) continue;
        this.use(i, i + 1);
        if (this.w(i + 1) === 'sold') this.use(i + 1, i + 2);
        if (this.selectAggs.some((a) => JSON.stringify(a.m) === JSON.stringify(m))) continue;
        if (this.intent === 'count' && UNITS_WORDS.has(w)) this.intent = 'agg';
        if (this.intent === 'list' || this.intent === 'agg') {
          this.selectAggs.push({ fn: 'sum', m });
          this.intent = 'agg';
        }
      }
    }
  }

  private groupPhrases(): void {
    const units: Record<string, DatePart> = { year: 'year', month: 'month', day: 'day', date: 'day', yearly: 'year', annually: 'year', annual: 'year', monthly: 'month', daily: 'day' };
    for (let i = 0; i < this.t.length; i++) {
      if (this.used[i]) continue;
      const n = this.seq(i, ['for|in|of|within', 'each|every']) || this.seq(i, ['per|each|every']) || this.seq(i, ['grouped|broken|split|break', 'down?', 'by|per']) || this.seq(i, ['by']) || this.seq(i, ['across', 'all?']);
      const viaBy = n > 0 && this.w(i) === 'by';
      // "placed by customers": the agent of a verb, not a grouping.
      if (viaBy && (VERBS[this.w(i - 1)] || DATE_VERBS[this.w(i - 1)] || /ed$/.test(this.w(i - 1)) || ['made', 'written', 'given', 'sold', 'bought'].includes(this.w(i - 1)))) continue;
      if (!n) {
        const u = units[this.w(i)];
        if (u && ['yearly', 'annually', 'annual', 'monthly', 'daily'].includes(this.w(i))) {
          const c = this.chooseDateCol(i);
          if (c) {
            this.use(i, i + 1);
            this.groupCands.push({ item: { k: 'bucket', c, part: u }, pos: i, viaBy: false });
          }
        }
        continue;
      }
      const j = this.skip(i + n, ['the', 'their', 'its', 'a', 'an', 'single', 'individual', 'different']);
      const unit = units[this.t[j]?.lemma ?? ''];
      if (unit && !(this.mentionAt[j] && this.mentionAt[j]!.kind === 'column' && !this.mentionAt[j]!.weak)) {
        const c = this.chooseDateCol(i);
        if (!c) fail(`no date column to group by ${unit}`);
        this.use(i, j + 1);
        this.groupCands.push({ item: { k: 'bucket', c, part: unit }, pos: i, viaBy });
        continue;
      }
      const m = this.mentionAt[j];
      if (!m || m.kind === 'value') continue;
      if (m.kind === 'table') {
        this.claim(m);
        this.use(i, j);
        this.groupCands.push({ item: { k: 'label', table: this.resolveTable(m) }, pos: i, viaBy });
      } else {
        const c = this.resolveCol(m);
        this.claim(m);
        this.use(i, j);
        this.groupCands.push({ item: { k: 'col', c }, pos: i, viaBy });
      }
    }
  }

  private equalities(): void {
    for (let i = 0; i < this.t.length; i++) {
      if (this.used[i]) continue;
      // "out of stock" / "in stock"
      const oos = this.seq(i, ['out', 'of', 'stock']) || this.seq(i, ['in', 'stock']);
      if (oos) {
        const c = this.findColumn(['stock', 'inventory'], this.nearbyTables(), (x) => x.numeric);
        if (c) {
          const cond: Cond = { k: 'cmp', c, op: this.w(i) === 'out' ? '=' : '>', value: 0 };
          this.conds.push(cond);
          this.condPos.set(cond, i);
          for (let x = i; x < i + oos; x++) if (this.mentionAt[x]) this.claim(this.mentionAt[x]);
          this.use(i, i + oos);
          continue;
        }
      }
      const m = this.mentionAt[i];
      // "order 42", "order #42", "customer id 7", "product number 3"
      if (m && m.kind === 'table' && m.end === i + 1) {
        const k = this.skip(m.end, ['id', 'number', 'no', 'nr', '#', 'with']);
        const v = this.num(k);
        const info = this.idx.table(this.resolveTable(m));
        if (v !== null && info.pk && !this.isYear(k) && (k > m.end || !this.mentionAt[k + 1] || this.mentionAt[k + 1]!.kind !== 'table')) {
          const cond: Cond = { k: 'cmp', c: { table: info.name, column: info.pk }, op: '=', value: v };
          this.conds.push(cond);
          this.condPos.set(cond, i);
          this.use(m.end, k + 1);
          if (info.name !== this.subject) this.claim(m);
          continue;
        }
      }
      // "rating 5", "rating of 5", "stock is 0" (not "named 'X'", handled below)
      if (m && m.kind === 'column' && m.start === i && !['named', 'called', 'titled'].includes(this.w(i))) {
        const c = this.resolveCol(m);
        const info = this.colInfo(c);
        const k = this.skip(m.end, ['of', 'is', 'equal', 'equals', 'to', '=', 'exactly', 'was']);
        const v = this.num(k);
        if (v !== null && (info.numeric || info.year)) {
          this.claim(m);
          this.use(m.end, k + 1);
          const cond: Cond = { k: 'cmp', c, op: '=', value: v };
          this.conds.push(cond);
          this.condPos.set(cond, i);
          continue;
        }
        const q = this.t[k];
        if (q && q.kind === 'quoted' && !this.used[k]) {
          this.claim(m);
          this.use(m.end, k + 1);
          const cond: Cond = { k: 'in', c, values: [q.raw], negate: false };
          this.conds.push(cond);
          this.condPos.set(cond, i);
          continue;
        }
      }
      // "3 years old"
      if (this.num(i) !== null && this.seq(i + 1, ['year|years', 'old'])) {
        const near = [...this.mentions].filter((x) => x.kind === 'value' && Math.abs(x.start - i) <= 5).map((x) => (x as { cands: { table: string }[] }).cands[0].table);
        const c = this.findColumn(['age'], [...near, ...this.nearbyTables()], (x) => x.numeric);
        if (c) {
          const cond: Cond = { k: 'cmp', c, op: '=', value: this.num(i)! };
          this.conds.push(cond);
          this.condPos.set(cond, i);
          this.use(i, i + 3);
          continue;
        }
      }
      // "5 stars", "with 3 units"
      const v = this.num(i);
      if (v !== null && !this.isYear(i)) {
        const nm = this.mentionAt[i + 1];
        if (nm && nm.kind === 'column' && this.colInfo(this.resolveCol(nm)).numeric && !this.claimed.has(nm)) {
          this.claim(nm);
          this.use(i, i + 1);
          const cond: Cond = { k: 'cmp', c: this.resolveCol(nm), op: '=', value: v };
          this.conds.push(cond);
          this.condPos.set(cond, i);
          continue;
        }
      }
      // named / called / titled X
      const n = this.seq(i, ['named|called|titled|name|title', 'is?']);
      if (n) {
        let k = i + n;
        const vals: string[] = [];
        if (this.t[k]?.kind === 'quoted') {
          vals.push(this.t[k].raw);
          k++;
        } else {
          while (k < this.t.length && (this.t[k].capital || this.t[k].kind === 'number') && !this.used[k]) vals.push(this.t[k++].raw);
        }
        if (vals.length === 0) continue;
        const table = this.nearestTableBefore(i) ?? this.subject;
        // "named 'Anna Schmidt'" on a first/last-name label: two words, two columns.
        if (vals.length === 1 && table && this.idx.table(table).label.length === 2 && vals[0].split(/\s+/).length === 2) {
          vals.splice(0, 1, ...vals[0].split(/\s+/));
        }
        if (!table) continue;
        const info = this.idx.table(table);
        const col = info.label.length === 1 ? info.label[0] : (info.cols.find((c) => c.words.includes('name') && c.text)?.name ?? null);
        const value = vals.join(' ');
        if (info.label.length === 2 && vals.length === 2) {
          for (const [ci, v] of [[0, vals[0]], [1, vals[1]]] as const) {
            const cond: Cond = { k: 'in', c: { table, column: info.label[ci] }, values: [v], negate: false };
            this.conds.push(cond);
            this.condPos.set(cond, i);
          }
        } else if (col) {
          const cond: Cond = { k: 'in', c: { table, column: col }, values: [value], negate: false };
          this.conds.push(cond);
          this.condPos.set(cond, i);
        } else continue;
        // A value already linked inside the name is part of it.
        for (let x = i; x < k; x++) if (this.mentionAt[x]) this.claim(this.mentionAt[x]);
        this.use(i, k);
      }
    }
  }

  private nearestTableBefore(i: number): string | null {
    for (let k = i - 1; k >= 0; k--) {
      const m = this.mentionAt[k];
      if (m && m.kind === 'table') return this.resolveTable(m);
    }
    return null;
  }

  private values(): void {
    const byCol = new Map<string, { c: ColRef; values: string[]; negate: boolean; pos: number }>();
    for (const m of this.mentions) {
      if (m.kind !== 'value' || this.claimed.has(m) || this.used[m.start]) continue;
      // Prefer a column named just before ("city Berlin", "status shipped"), the subject's
      // own column, then the column nearest the subject.
      const before = this.mentionAt[m.start - 1] ?? this.mentionAt[m.start - 2];
      let beforeCol: ColRef | null = null;
      if (before && before.kind === 'column') beforeCol = this.resolveCol(before);
      const nearTable = before && before.kind === 'table' ? this.resolveTable(before) : null;
      const after = this.mentionAt[m.end];
      const afterTable = after && after.kind === 'table' ? this.resolveTable(after) : null;
      const scored = m.cands.map((c) => {
        let s = 0;
        if (beforeCol && beforeCol.table === c.table && beforeCol.column === c.column) s += 100;
        if (afterTable === c.table) s += 50;
        if (nearTable === c.table) s += 40;
        if (c.table === this.subject) s += 20;
        if (this.tablesInQuestion().includes(c.table)) s += 10;
        if (this.subject) s -= this.idx.distance(this.subject, c.table);
        return { c, s };
      });
      scored.sort((a, b) => b.s - a.s);
      const pick = scored[0].c;
      if (beforeCol && beforeCol.table === pick.table && beforeCol.column === pick.column && before) this.claim(before);
      // "Electronics category": the table word after a value of its own column is part of it.
      if (after && after.kind === 'table' && afterTable === pick.table) this.claim(after);
      const negate = ['not', 'except', 'excluding', 'than', 'besides', 'exclude'].includes(this.w(m.start - 1)) || (this.w(m.start - 1) === 'in' && this.w(m.start - 2) === 'not');
      if (negate) this.use(m.start - (this.w(m.start - 1) === 'in' ? 2 : 1), m.start);
      this.claim(m);
      const key = `${pick.table}.${pick.column}.${negate}`;
      const entry = byCol.get(key) ?? { c: { table: pick.table, column: pick.column }, values: [], negate, pos: m.start };
      if (!entry.values.includes(pick.value)) entry.values.push(pick.value);
      byCol.set(key, entry);
    }
    for (const e of byCol.values()) {
      const cond: Cond = { k: 'in', c: e.c, values: e.values, negate: e.negate };
      this.conds.push(cond);
      this.condPos.set(cond, e.pos);
    }
  }

  /** Quoted text, numbers and capitalised words nobody placed: refuse rather than guess. */
  private leftovers(): void {
    for (let i = 0; i < this.t.length; i++) {
      if (this.used[i]) continue;
      const tok = this.t[i];
      const m = this.mentionAt[i];
      if (tok.kind === 'quoted') {
        // 'X' after a column or table word: equality on that column / the table's label.
        const prev = this.mentionAt[i - 1] ?? this.mentionAt[this.skip(i - 1, [])];
        let c: ColRef | null = null;
        if (prev && prev.kind === 'column') {
          c = this.resolveCol(prev);
          this.claim(prev);
        } else if (prev && prev.kind === 'table') {
          const info = this.idx.table(this.resolveTable(prev));
          if (info.label.length === 1) c = { table: info.name, column: info.label[0] };
          if (info.name !== this.subject) this.claim(prev);
        } else {
          // After a verb ("bought 'X'") the value names the verb's object: the nearest
          // other table with a one-column label; otherwise the subject's label.
          const verbBefore = [1, 2, 3].some((d) => VERBS[this.w(i - d)]);
          const subj = this.subject ? this.idx.table(this.subject) : null;
          if (verbBefore || !subj || subj.label.length !== 1) {
            for (const t of this.nearbyTables()) {
              const info = this.idx.table(t);
              if (t !== this.subject && info.label.length === 1 && this.colInfo({ table: t, column: info.label[0] }).text) {
                c = { table: t, column: info.label[0] };
                break;
              }
            }
          }
          if (!c && subj && subj.label.length === 1) c = { table: subj.name, column: subj.label[0] };
        }
        if (!c) fail(`could not tell which column "${tok.raw}" is a value of`);
        const cond: Cond = { k: 'in', c, values: [tok.raw], negate: this.w(i - 1) === 'not' };
        this.conds.push(cond);
        this.condPos.set(cond, i);
        this.use(i, i + 1);
        continue;
      }
      if (tok.kind === 'number' || tok.kind === 'date') fail(`could not tell what ${tok.raw} refers to`);
      if (tok.capital && !m && !STOPWORDS.has(tok.lower) && !FILLER.has(tok.lower) && !MONTHS[tok.lower]) {
        const prev = this.mentionAt[i - 1];
        if (prev && prev.kind === 'column' && this.colInfo(this.resolveCol(prev)).text) {
          let k = i;
          const vals: string[] = [];
          while (k < this.t.length && this.t[k].capital && !this.used[k] && !this.mentionAt[k]) vals.push(this.t[k++].raw);
          const cond: Cond = { k: 'in', c: this.resolveCol(prev), values: [vals.join(' ')], negate: false };
          this.claim(prev);
          this.conds.push(cond);
          this.condPos.set(cond, i);
          this.use(i, k);
          continue;
        }
        let k = i;
        const vals: string[] = [];
        while (k < this.t.length && this.t[k].capital && !this.used[k] && !this.mentionAt[k]) vals.push(this.t[k++].raw);
        const guess = this.guessValueColumn(i, k, vals.join(' '));
        if (guess) {
          const cond: Cond = { k: 'in', c: guess, values: [vals.join(' ')], negate: false };
          this.conds.push(cond);
          this.condPos.set(cond, i);
          this.use(i, k);
          i = k - 1;
          continue;
        }
        fail(`"${tok.raw}" does not match any table, column or known value`);
      }
    }
  }

  /**
   * A proper noun the samples do not contain ("Brazil", "Kabul"): the column it is a value of,
   * when the question says so ("population of Brazil", "in Brazil" with a country table or a
   * location column). A column whose sampled values are complete and lack the word is ruled
   * out, so "customers from Atlantis" is refused rather than answered with an empty list.
   */
  private guessValueColumn(start: number, end: number, value: string): ColRef | null {
    const LOCATION = new Set(['city', 'country', 'region', 'continent', 'location', 'place', 'state', 'district', 'nation', 'town', 'area', 'province', 'county', 'address']);
    const maxSamples = 20;
    const mayHold = (c: ColRef): boolean => {
      const info = this.colInfo(c);
      if (!info.text) return false;
      const sample = this.idx.ctx.samples[`${c.table}.${c.column}`];
      if (!sample || sample.length >= maxSamples) return true;
      return sample.some((v) => v.toLowerCase() === value.toLowerCase());
    };
    const labelOf = (table: string): ColRef | null => {
      const info = this.idx.table(table);
      return info.label.length === 1 ? { table, column: info.label[0] } : null;
    };
    // "population of Brazil" / "Brazil population"
    const before = this.w(start - 1) === 'of' ? this.mentionAt[start - 2] : null;
    const after = this.mentionAt[end];
    for (const m of [before, after]) {
      if (m && m.kind === 'column') {
        const l = labelOf(this.resolveCol(m).table);
        if (l && mayHold(l)) return l;
      }
      if (m && m.kind === 'table') {
        const l = labelOf(this.resolveTable(m));
        if (l && mayHold(l)) return l;
      }
    }
    // "in Brazil", "from Kabul": a location table's name or a location column.
    if (['in', 'from', 'at', 'of', 'for', 'to', 'by', 'near'].includes(this.w(start - 1)) || this.w(end) === 'in') {
      for (const t of this.nearbyTables()) {
        const info = this.idx.table(t);
        if (info.words.some((w) => LOCATION.has(w))) {
          const l = labelOf(t);
          if (l && mayHold(l)) return l;
        }
        for (const col of info.cols) {
          if (col.fk || col.pk || !col.words.some((w) => LOCATION.has(w))) continue;
          const c = { table: t, column: col.name };
          if (mayHold(c)) return c;
        }
      }
    }
    // "Which continent is Anguilla in?": the subject's own name column.
    if (this.subject && this.w(end) === 'in') {
      const l = labelOf(this.subject);
      if (l && mayHold(l)) return l;
    }
    return null;
  }

  private assemble(): Plan {
    const subject = this.subject!;
    const plan = emptyPlan(subject);
    const target = this.target;
    const targetItem: Item | null = target
      ? target.k === 'col' && target.c
        ? { k: 'col', c: target.c }
        : { k: 'label', table: target.table }
      : null;

    // Conditions inside a negation's clause go into its NOT EXISTS.
    for (const ex of this.exists) {
      for (const c of [...this.conds]) {
        const pos = this.condPos.get(c) ?? -1;
        if (pos < ex.pos || pos > ex.end) continue;
        const t = c.c.table;
        if (t === subject) continue;
        const p = this.idx.path(subject, t);
        if (!p || (t !== ex.target && !p.some((s) => s.table === ex.target))) continue;
        ex.conds.push(c);
        this.conds.splice(this.conds.indexOf(c), 1);
      }
      plan.exists.push({ negate: ex.negate, target: ex.target, conds: ex.conds });
    }
    // Conditions on the related table of a "fewer than N orders" count go inside it.
    for (const cc of this.counts) {
      for (const c of [...this.conds]) {
        if (c.c.table === cc.target) {
          cc.conds.push(c);
          this.conds.splice(this.conds.indexOf(c), 1);
        }
      }
      plan.counts.push(cc);
    }
    // Two equalities on one column can only both hold as alternatives: "X or Y".
    const merged: Cond[] = [];
    for (const c of this.conds) {
      const prev = merged.find((m) => m.k === 'in' && c.k === 'in' && !m.negate && !c.negate && m.c.table === c.c.table && m.c.column === c.c.column);
      if (prev && prev.k === 'in' && c.k === 'in') {
        for (const v of c.values) if (!prev.values.includes(v)) prev.values.push(v);
      } else merged.push(c);
    }
    plan.conds = merged;
    this.selectAggs = this.selectAggs.filter((a, k) => this.selectAggs.findIndex((b) => JSON.stringify(a) === JSON.stringify(b)) === k);
    plan.having = this.having;
    plan.limit = this.limit;

    // Explicit projections: column mentions nobody consumed.
    const explicit: Item[] = [];
    for (const m of this.mentions) {
      if (this.claimed.has(m) || m.start < 0) continue;
      if (m.start < this.t.length && this.used[m.start] && !(target && m.start === target.pos)) continue;
      if (m.kind === 'column' && (!m.weak || m.start < this.headEnd + 3)) {
        const c = this.resolveCol(m);
        explicit.push({ k: 'col', c });
      }
    }
    const aggregated = this.selectAggs.length > 0 || this.having.length > 0 || this.orderBy.some((o) => o.item.k === 'agg');

    // Grouping: explicit "per X", else the asked-for entity when something is aggregated
    // over another table ("customers with more than 5 orders", "city with most customers").
    for (const g of this.groupCands) {
      const isAgg = this.selectAggs.length > 0 || this.intent === 'count' || aggregated;
      if (g.viaBy && !isAgg) {
        plan.orderBy.push({ item: g.item, dir: 'ASC' });
        continue;
      }
      // "the email of every customer": without an aggregate, "every" only means all.
      if (!isAgg && g.item.k !== 'bucket') continue;
      this.groupBy.push(g.item);
      if (g.item.k === 'bucket' && this.orderBy.length === 0) plan.orderBy.push({ item: g.item, dir: 'ASC' });
    }

    if (this.intent === 'count') {
      if (target?.k === 'col' && target.c && this.distinct) {
        this.selectAggs.unshift({ fn: 'count', m: { k: 'col', c: target.c }, distinct: true });
      } else if (target?.k === 'col' && target.c && !this.colInfo(target.c).pk && this.groupBy.length === 0 && this.colInfo(target.c).text) {
        this.selectAggs.unshift({ fn: 'count', m: { k: 'col', c: target.c }, distinct: true });
      } else {
        this.selectAggs.unshift({ fn: 'count', m: { k: 'rows', table: subject } });
      }
    }

    const entityGroupNeeded =
      this.groupBy.length === 0 &&
      (this.wantsEntityGroup || this.orderBy.some((o) => o.item.k === 'agg')) &&
      targetItem !== null &&
      (this.having.length > 0 || this.orderBy.some((o) => o.item.k === 'agg')) &&
      !(this.intent === 'count');
    if (entityGroupNeeded) {
      // The aggregate counts/sums rows of another table per asked-for entity (or column).
      const aggTables = [...this.having.map((h) => measureTable(h.a.m)), ...this.orderBy.filter((o) => o.item.k === 'agg').map((o) => measureTable((o.item as { a: Agg }).a.m))];
      const overSelf = target?.k === 'table' && aggTables.every((t) => t === target.table) && this.orderBy.every((o) => o.item.k !== 'agg' || (o.item.a.m.k !== 'rows'));
      if (!overSelf || target?.k === 'col') this.groupBy.push(targetItem!);
    }

    const select: Item[] = [];
    if (this.intent === 'count' || this.intent === 'agg') {
      for (const g of this.groupBy) select.push(g);
      for (const a of this.selectAggs) select.push({ k: 'agg', a });
      if (this.selectAggs.length === 0) {
        if (explicit.length > 0) select.push(...explicit);
        else if (targetItem) select.push(targetItem);
      }
    } else {
      const tablesUsed = new Set<string>([subject]);
      for (const c of plan.conds) tablesUsed.add(c.c.table);
      if (explicit.length > 0) {
        select.push(...explicit);
        // "which cities …": an attribute asked for directly lists its distinct values.
        if (explicit.length === 1 && target?.k === 'col' && target.c && sameItem(explicit[0], { k: 'col', c: target.c }) && this.groupBy.length === 0) {
          const info = this.idx.table(target.table);
          if (!info.label.includes(target.c.column) && this.w(target.end ?? 0) !== 'of' && !this.colInfo(target.c).pk) plan.distinct = true;
        }
      } else if (this.groupBy.length > 0) {
        select.push(...this.groupBy);
      } else if (targetItem) {
        select.push(targetItem);
        if (target?.k === 'col') plan.distinct = true;
      }
      // Other tables named but not used by any condition: "products and their category".
      for (const m of this.mentions) {
        if (m.kind !== 'table' || this.claimed.has(m) || this.used[m.start]) continue;
        const t = this.resolveTable(m);
        if (t === subject || tablesUsed.has(t) || (target && target.table === t)) continue;
        if (this.idx.distance(subject, t) === Infinity) continue;
        // A related table named after a value of one of its columns was already claimed;
        // here it is a projection only in "X and their Y" / "X with Y" phrasing.
        if (['and', 'their', 'its', 'with', 'along', 'plus', 'including'].includes(this.w(m.start - 1)) || ['and', 'their', 'its'].includes(this.w(m.start - 2))) {
          if (this.isChild(t)) {
            // "customers with orders": an existence condition, not a projection.
            if (this.w(m.start - 1) === 'with' || this.w(m.start - 2) === 'with') {
              plan.exists.push({ negate: false, target: t, conds: [] });
              continue;
            }
          }
          select.push({ k: 'label', table: t });
        }
      }
      for (const g of this.groupBy) if (!select.some((s) => sameItem(s, g))) select.unshift(g);
      if (this.selectAggs.length > 0) for (const a of this.selectAggs) select.push({ k: 'agg', a });
    }
    // "students who have a pet", "dogs who have gone through any treatments": a related
    // table nobody else used is an existence condition.
    for (const m of this.mentions) {
      if (m.kind !== 'table' || this.claimed.has(m) || this.used[m.start]) continue;
      const t = this.resolveTable(m);
      if (t === subject || !this.isChild(t) || plan.exists.some((e) => e.target === t)) continue;
      if (select.some((x) => x.k === 'label' && x.table === t)) continue;
      if (['have', 'has', 'had', 'placed', 'made', 'with', 'any', 'some', 'written', 'through'].some((x) => this.w(m.start - 1) === x || this.w(m.start - 2) === x)) {
        plan.exists.push({ negate: false, target: t, conds: [] });
        this.claim(m);
      }
    }
    // Verb without object: "customers who ordered" → EXISTS on the verb's table.
    if (plan.exists.length === 0 && plan.conds.every((c) => c.c.table === subject) && this.intent !== 'agg') {
      for (let i = this.headEnd; i < this.t.length; i++) {
        if (this.used[i]) continue;
        const vt = VERBS[this.w(i)];
        if (!vt || !['who', 'that', 'which', 'have', 'has', 'had'].includes(this.w(i - 1))) continue;
        const t = this.verbTarget(vt, subject);
        if (t && this.isChild(t)) {
          plan.exists.push({ negate: false, target: t, conds: [] });
          this.use(i, i + 1);
        }
      }
    }

    // Sorting: superlatives and explicit ORDER BY; the measure is shown when no columns
    // were asked for by name.
    plan.orderBy = [...this.orderBy, ...plan.orderBy];
    for (const o of plan.orderBy) {
      if (o.item.k === 'label' && o.item.table === '') o.item = targetItem ?? { k: 'label', table: subject };
    }
    // With columns named in the question only an aggregate sort key is added ("which city
    // has the most customers" shows the count); without any, the sort key is shown too.
    const explicitOthers = explicit.filter((e) => !(target?.k === 'col' && target.c && sameItem(e, { k: 'col', c: target.c })));
    if (this.intent === 'list' && explicitOthers.length === 0) {
      for (const o of plan.orderBy) {
        if (o.item.k === 'label' || o.item.k === 'bucket') continue;
        if (explicit.length > 0 && o.item.k !== 'agg') continue;
        if (!select.some((s) => sameItem(s, o.item))) {
          if (o.item.k === 'col' && target?.k === 'table' && this.idx.table(target.table).label.length === 0 && o.item.c.table === target.table) continue;
          select.push(o.item);
        }
      }
    }
    plan.select = select;
    plan.groupBy = this.groupBy;
    // Verbs pick the route between tables: "customers who bought X" goes through orders,
    // not through reviews, even when reviews is the shorter path to products.
    for (const tok of this.t) {
      const vt = VERBS[tok.lower];
      if (!vt) continue;
      const t = this.verbTarget(vt, subject);
      if (t && !plan.via.includes(t)) plan.via.push(t);
    }
    plan.distinct = plan.distinct || (this.distinct && this.intent === 'list');

    this.checkGrounds(plan);
    return plan;
  }

  /** The thing asked about must be known; so must most content words. */
  private checkGrounds(plan: Plan): void {
    const content = (tok: Token): boolean =>
      tok.kind === 'word' && !STOPWORDS.has(tok.lower) && !FILLER.has(tok.lower) && !MONTHS[tok.lower] && tok.lower.length > 1;
    // The first content word after the head ("how many unicorns", "what is the meaning").
    for (let i = this.headEnd; i < this.t.length; i++) {
      const tok = this.t[i];
      if (this.used[i] || this.mentionAt[i]) break;
      if (!content(tok)) continue;
      if (AGG_WORDS[tok.lower] || SUPERLATIVES.some(([s]) => s[0] === tok.lower) || REVENUE_WORDS.has(tok.lower) || UNITS_WORDS.has(tok.lower) || VERBS[tok.lower] || DATE_VERBS[tok.lower]) break;
      if (['top', 'most', 'least', 'first', 'last', 'new', 'old', 'recent', 'biggest', 'cheap', 'expensive', 'popular', 'best', 'worst'].includes(tok.lower)) break;
      // A modifier of the noun that follows ("car models", "sports cars") is not the subject.
      if (this.mentionAt[i + 1] && this.mentionAt[i + 1]!.kind !== 'value') break;
      fail(`"${tok.raw}" does not match any table or column of this database`);
    }
    // A negation nobody placed would silently turn the answer around: refuse instead.
    for (let i = 0; i < this.t.length; i++) {
      const w = this.w(i);
      if (this.used[i] || this.mentionAt[i]) continue;
      if (['not', 'never', 'without', 'except', 'excluding', 'neither', 'nor'].includes(w) || (w === 'no' && i > 0 && !['no', 'yes'].includes(this.w(i - 1)))) {
        fail(`could not tell what "${this.t[i].raw}" applies to`);
      }
    }
    let unknown = 0;
    let known = 0;
    for (let i = 0; i < this.t.length; i++) {
      const tok = this.t[i];
      if (this.mentionAt[i] || this.used[i]) {
        known++;
        continue;
      }
      if (content(tok)) unknown++;
    }
    if (known === 0 || unknown > known + 1) fail('too much of the question does not match this database');
    if (plan.select.length === 0) fail('nothing to select');
  }
}
