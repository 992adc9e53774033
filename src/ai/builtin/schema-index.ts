// What the builtin generator knows about a schema: per table its words, label columns (what
// identifies a row to a person: name, title, first+last name), numeric/date columns and
// default measure; the foreign-key graph with shortest join paths; and the phrase and value
// dictionaries that schema linking looks words up in.
import type { ForeignKey, SchemaTable } from '../../engines/engine.ts';
import { isDateType, isNumericType, isTextType, type SchemaContext } from '../schema-context.ts';
import { splitIdentifier, tokenize, valueWords } from './text.ts';

export interface ColInfo {
  table: string;
  name: string;
  type: string;
  words: string[];
  numeric: boolean;
  date: boolean;
  /** An integer year column (release_year, year): "in 2014" means equality there. */
  year: boolean;
  text: boolean;
  pk: boolean;
  fk: ForeignKey | null;
}

export interface TableInfo {
  name: string;
  schema: string | null;
  words: string[];
  cols: ColInfo[];
  pk: string | null;
  /** Columns that identify a row for a reader; [] when the table has none. */
  label: string[];
  person: boolean;
  /** The column "value", "amount", "over 500" mean for this table, if any. */
  measure: string | null;
  dates: string[];
  /** quantity × unit price columns, when the table holds line items. */
  line: { quantity: string; price: string } | null;
}

/** A foreign key: `from`'s columns reference `to`'s (many `from` rows per `to` row). */
export interface Edge {
  from: string;
  fromCols: string[];
  to: string;
  toCols: string[];
}

/** One hop of a join path; `up` is true when it goes from the referencing table to the
 * referenced one (many-to-one: joining it never multiplies rows). */
export interface Step {
  edge: Edge;
  up: boolean;
  /** Table reached by this step. */
  table: string;
}

export type PhraseTarget =
  { kind: 'table'; table: string; score: number } | { kind: 'column'; table: string; column: string; score: number };

export interface ValueTarget {
  table: string;
  column: string;
  value: string;
}

const PERSON_WORDS = new Set([
  'customer',
  'person',
  'user',
  'employee',
  'student',
  'teacher',
  'singer',
  'player',
  'member',
  'author',
  'owner',
  'client',
  'driver',
  'staff',
  'manager',
  'artist',
  'people',
  'professional',
  'visitor',
  'voter',
  'host',
  'actor',
  'director',
  'patient',
  'doctor',
  'pilot',
  'musician',
  'conductor',
  'contestant',
  'candidate',
  'professor',
  'instructor',
  'writer',
  'buyer',
  'seller',
]);
const MEASURE_NAMES = ['price', 'total', 'amount', 'revenue', 'sale', 'cost', 'value', 'salary', 'budget', 'balance', 'fee', 'charge'];
const GENERIC = new Set([
  'id',
  'at',
  'no',
  'of',
  'the',
  'is',
  'has',
  'nr',
  'num',
  'code',
  'key',
  'in',
  'on',
  'to',
  'by',
  'for',
  'and',
  'type',
]);

export class SchemaIndex {
  readonly tables = new Map<string, TableInfo>();
  readonly edges: Edge[] = [];
  readonly phrases = new Map<string, PhraseTarget[]>();
  readonly values = new Map<string, ValueTarget[]>();
  readonly maxValueWords: number;

  constructor(readonly ctx: SchemaContext) {
    for (const t of ctx.tables) this.tables.set(t.name, describeTable(t));
    for (const t of ctx.tables) {
      for (const fk of t.foreignKeys) {
        const to = this.resolveName(fk.refTable);
        if (!to) continue;
        const toInfo = this.tables.get(to)!;
        const toCols = fk.refColumns.length > 0 ? fk.refColumns : toInfo.pk ? [toInfo.pk] : [];
        if (toCols.length !== fk.columns.length) continue;
        this.edges.push({ from: t.name, fromCols: fk.columns, to, toCols });
      }
    }
    // Keys nobody declared (common in SQLite files): `<table>_id` or a column named after a
    // table (flights.airline → airlines) that has a one-column primary key.
    this.inferEdges();
    for (const info of this.tables.values()) this.addPhrases(info);
    this.addSynonyms(ctx.tables);
    let maxWords = 1;
    for (const [key, vals] of Object.entries(ctx.samples)) {
      const dot = key.indexOf('.');
      const table = this.resolveName(key.slice(0, dot));
      if (!table) continue;
      const column = key.slice(dot + 1);
      for (const value of vals) {
        const words = valueWords(value);
        if (words.length === 0 || words.length > 6) continue;
        maxWords = Math.max(maxWords, words.length);
        const k = words.join(' ');
        const list = this.values.get(k) ?? [];
        if (!list.some((v) => v.table === table && v.column === column)) list.push({ table, column, value });
        this.values.set(k, list);
      }
    }
    this.maxValueWords = maxWords;
  }

  resolveName(name: string): string | null {
    if (this.tables.has(name)) return name;
    const lower = name.toLowerCase();
    for (const n of this.tables.keys()) if (n.toLowerCase() === lower) return n;
    return null;
  }

  table(name: string): TableInfo {
    const t = this.tables.get(name);
    if (!t) throw new Error(`unknown table ${name}`);
    return t;
  }

  col(table: string, column: string): ColInfo | undefined {
    return this.tables.get(table)?.cols.find((c) => c.name === column);
  }

  private inferEdges(): void {
    for (const t of this.tables.values()) {
      for (const c of t.cols) {
        if (c.fk || (c.pk && t.cols.filter((x) => x.pk).length === 1)) continue;
        const words = c.words[c.words.length - 1] === 'id' ? c.words.slice(0, -1) : c.words;
        if (words.length === 0) continue;
        const key = words.join(' ');
        const target = [...this.tables.values()].find((o) => o.name !== t.name && o.pk && o.words.join(' ') === key);
        if (!target || !target.pk) continue;
        const pkCol = target.cols.find((x) => x.name === target.pk)!;
        // The referencing column must hold the same kind of value as the key it points at.
        if (pkCol.numeric !== c.numeric) continue;
        if (this.edges.some((e) => e.from === t.name && e.fromCols.includes(c.name))) continue;
        this.edges.push({ from: t.name, fromCols: [c.name], to: target.name, toCols: [target.pk] });
      }
    }
  }

  private addPhrase(phrase: string, target: PhraseTarget): void {
    if (!phrase) return;
    const list = this.phrases.get(phrase) ?? [];
    const same = list.find(
      (p) =>
        p.kind === target.kind &&
        p.table === target.table &&
        (p.kind === 'table' || (target.kind === 'column' && p.column === target.column)),
    );
    if (same) {
      same.score = Math.max(same.score, target.score);
      return;
    }
    list.push(target);
    this.phrases.set(phrase, list);
  }

  private addPhrases(t: TableInfo): void {
    const full = t.words.join(' ');
    this.addPhrase(full, { kind: 'table', table: t.name, score: 1 });
    this.addPhrase(t.name.toLowerCase(), { kind: 'table', table: t.name, score: 1 });
    // Multi-word tables also answer to their last and first words ("items" → order_items),
    // weaker than a table named exactly that.
    if (t.words.length > 1) {
      const content = t.words.filter((w) => !GENERIC.has(w));
      const last = content[content.length - 1];
      if (last) this.addPhrase(last, { kind: 'table', table: t.name, score: 0.6 });
      for (let len = 2; len < t.words.length; len++) {
        for (let s = 0; s + len <= t.words.length; s++) {
          const part = t.words.slice(s, s + len);
          // "singer in" / "in concert" of singer_in_concert would swallow "singers in …".
          if (GENERIC.has(part[0]) || GENERIC.has(part[part.length - 1])) continue;
          this.addPhrase(part.join(' '), { kind: 'table', table: t.name, score: 0.7 });
        }
      }
    }
    // "the id" / "their ids": the table's own key, when it is one column named like an id.
    const pkInfo = t.pk ? t.cols.find((c) => c.name === t.pk) : undefined;
    if (pkInfo && pkInfo.words[pkInfo.words.length - 1] === 'id')
      this.addPhrase('id', { kind: 'column', table: t.name, column: pkInfo.name, score: 0.9 });
    for (const c of t.cols) {
      const words = c.words;
      this.addPhrase(words.join(' '), { kind: 'column', table: t.name, column: c.name, score: 1 });
      // Abbreviated name columns: fname / lname / firstname.
      const abbrev: Record<string, string> = {
        fname: 'first name',
        firstname: 'first name',
        lname: 'last name',
        lastname: 'last name',
        surname: 'last name',
        dob: 'date of birth',
      };
      if (words.length === 1 && abbrev[words[0]])
        this.addPhrase(abbrev[words[0]], { kind: 'column', table: t.name, column: c.name, score: 1 });
      // number_products is what a question calls "number of products".
      if (words.length > 1 && ['number', 'count', 'amount', 'total', 'num', 'no'].includes(words[0]) && words[1] !== 'of') {
        this.addPhrase(['number', 'of', ...words.slice(1)].join(' '), { kind: 'column', table: t.name, column: c.name, score: 1 });
      }
      this.addPhrase(c.name.toLowerCase(), { kind: 'column', table: t.name, column: c.name, score: 1 });
      // singer.singer_name / song.song_title: the part after the table's own name.
      const tw = t.words;
      if (words.length > tw.length && tw.every((w, i) => words[i] === w)) {
        this.addPhrase(words.slice(tw.length).join(' '), { kind: 'column', table: t.name, column: c.name, score: 0.95 });
      }
      if (words.length > 1) {
        for (let len = words.length - 1; len >= 1; len--) {
          for (let s = 0; s + len <= words.length; s++) {
            const part = words.slice(s, s + len);
            if (GENERIC.has(part[0]) || GENERIC.has(part[part.length - 1])) continue;
            if (len === 1 && GENERIC.has(part[0])) continue;
            // A foreign key's "customer" in customer_id names the table, not this column.
            if (c.fk && len === 1) continue;
            if (len === 1 && (part[0] === 'first' || part[0] === 'last')) continue;
            this.addPhrase(part.join(' '), { kind: 'column', table: t.name, column: c.name, score: 0.5 + 0.4 * (len / words.length) });
          }
        }
      }
    }
  }

  /** An admin's synonyms (annotations: "purchases" for orders) link like the name itself. */
  private addSynonyms(tables: SchemaTable[]): void {
    const phraseOf = (text: string): string =>
      tokenize(text)
        .filter((t) => t.kind === 'word')
        .map((t) => t.lemma)
        .join(' ');
    for (const t of tables) {
      for (const s of t.synonyms ?? []) this.addPhrase(phraseOf(s), { kind: 'table', table: t.name, score: 1 });
      for (const c of t.columns) {
        for (const s of c.synonyms ?? []) this.addPhrase(phraseOf(s), { kind: 'column', table: t.name, column: c.name, score: 1 });
      }
    }
  }

  /** Shortest paths already found (no tables avoided): the parser asks for the same pairs
   * for many words of one question. */
  private readonly paths = new Map<string, Step[] | null>();

  /** Shortest FK path between two tables (BFS, either direction), or null. */
  path(from: string, to: string, avoid: ReadonlySet<string> = new Set()): Step[] | null {
    if (from === to) return [];
    if (avoid.size > 0) return this.searchPath(from, to, avoid);
    const key = `${from}\u0000${to}`;
    let hit = this.paths.get(key);
    if (hit === undefined) {
      hit = this.searchPath(from, to, avoid);
      this.paths.set(key, hit);
    }
    return hit ? [...hit] : null;
  }

  private searchPath(from: string, to: string, avoid: ReadonlySet<string>): Step[] | null {
    const prev = new Map<string, Step & { prevTable: string }>();
    const seen = new Set([from]);
    const queue = [from];
    while (queue.length > 0) {
      const cur = queue.shift()!;
      for (const e of this.edges) {
        const hops: Step[] = [];
        if (e.from === cur) hops.push({ edge: e, up: true, table: e.to });
        if (e.to === cur) hops.push({ edge: e, up: false, table: e.from });
        for (const h of hops) {
          if (seen.has(h.table) || (avoid.has(h.table) && h.table !== to)) continue;
          seen.add(h.table);
          prev.set(h.table, { ...h, prevTable: cur });
          if (h.table === to) {
            const steps: Step[] = [];
            let t = to;
            while (t !== from) {
              const p = prev.get(t)!;
              steps.unshift({ edge: p.edge, up: p.up, table: p.table });
              t = p.prevTable;
            }
            return steps;
          }
          queue.push(h.table);
        }
      }
    }
    return null;
  }

  /** FK distance, Infinity when unconnected. */
  distance(a: string, b: string): number {
    const p = this.path(a, b);
    return p ? p.length : Infinity;
  }

  /** True when every row of `from` meets at most one row of `to` along the path. */
  isUpPath(steps: Step[]): boolean {
    return steps.every((s) => s.up);
  }
}

function describeTable(t: SchemaTable): TableInfo {
  const cols: ColInfo[] = t.columns.map((c) => {
    const words = splitIdentifier(c.name);
    const fk = t.foreignKeys.find((f) => f.columns.includes(c.name)) ?? null;
    const numeric = isNumericType(c.type);
    const nameLooksDate =
      /(^|_)(date|time|timestamp|datetime|at|on)$/i.test(c.name) ||
      /^(date|datetime|timestamp)/i.test(c.name) ||
      /(Date|Time)$/.test(c.name);
    const year = numeric && /(^|_|[a-z])year$/i.test(c.name);
    return {
      table: t.name,
      name: c.name,
      type: c.type,
      words,
      numeric,
      date: isDateType(c.type) || (nameLooksDate && !numeric && !/^(is|has)_/.test(c.name)),
      year: year || (/year/i.test(c.name) && !isDateType(c.type)),
      text: isTextType(c.type),
      pk: c.primaryKey,
      fk,
    };
  });
  const pkCols = cols.filter((c) => c.pk);
  const pk = pkCols.length === 1 ? pkCols[0].name : (cols.find((c) => c.name.toLowerCase() === 'id')?.name ?? null);
  const words = splitIdentifier(t.name);
  const byWords = (ws: string[]): ColInfo | undefined => cols.find((c) => c.words.join(' ') === ws.join(' '));
  const tableWords = words.join(' ');
  let label: string[] = [];
  const first = byWords(['first', 'name']) ?? byWords(['firstname']) ?? byWords(['fname']) ?? byWords(['given', 'name']);
  const last =
    byWords(['last', 'name']) ?? byWords(['lastname']) ?? byWords(['lname']) ?? byWords(['family', 'name']) ?? byWords(['surname']);
  const exactName = cols.find((c) => c.words.join(' ') === 'name' && c.text);
  const ownName = cols.find((c) => c.words.join(' ') === `${tableWords} name` && c.text);
  const title =
    cols.find((c) => c.words.join(' ') === 'title' && c.text) ?? cols.find((c) => c.words.join(' ') === `${tableWords} title` && c.text);
  // airlines.Airline, country.Country: a text column named after its own table names the row.
  const ownWord = cols.find((c) => c.words.join(' ') === tableWords && c.text && !c.pk && !c.fk);
  if (exactName) label = [exactName.name];
  else if (ownName) label = [ownName.name];
  else if (ownWord) label = [ownWord.name];
  else if (first && last) label = [first.name, last.name];
  else if (title) label = [title.name];
  else {
    const named = cols.filter((c) => c.text && !c.pk && !c.fk && c.words[c.words.length - 1] === 'name');
    if (named.length >= 1) label = [named[0].name];
    else {
      const full = cols.find((c) => /^(full_?name|username|user_?name|login|email)$/i.test(c.name));
      if (full) label = [full.name];
    }
  }
  const person = (first !== undefined && last !== undefined) || words.some((w) => PERSON_WORDS.has(w));
  const numericCols = cols.filter((c) => c.numeric && !c.pk && !c.fk && !c.year && !/(^|_)id$/i.test(c.name));
  let measure: string | null = null;
  for (const m of MEASURE_NAMES) {
    const hit = numericCols.find((c) => c.words.includes(m));
    if (hit) {
      measure = hit.name;
      break;
    }
  }
  const qty = numericCols.find((c) => c.words.some((w) => w === 'quantity' || w === 'qty'));
  const unitPrice = numericCols.find((c) => c.words.includes('price'));
  const line = qty && unitPrice ? { quantity: qty.name, price: unitPrice.name } : null;
  return {
    name: t.name,
    schema: t.schema,
    words,
    cols,
    pk,
    label,
    person,
    measure,
    dates: cols.filter((c) => c.date).map((c) => c.name),
    line,
  };
}
