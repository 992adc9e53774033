// Pass: the subject (the table whose rows the question is about) and what is asked for: a
// person table after "who", a column named right at the head ("which cities …"), the first
// table not inside a grouping or superlative phrase, a column's table, the table a measure
// or a known value belongs to. Refuses when nothing in the question names the schema.
import type { Mention } from '../link.ts';
import { AGG_WORDS, REVENUE_WORDS } from '../lexicon.ts';
import { measureTable } from '../plan.ts';
import { claim, fail, word, type ColumnMention, type ParseState, type TableMention } from '../parse-state.ts';
import { resolveColumnByNamedTables, resolveTable, revenueMeasure, tablesInQuestion } from '../parse-schema.ts';

export function findSubject(state: ParseState): void {
  const { index, mentions } = state;
  const inGroupOrSuperlative = (m: Mention): boolean => {
    const p1 = word(state, m.start - 1);
    const p2 = word(state, m.start - 2);
    return (
      ['per', 'each', 'every', 'most', 'fewest', 'least'].includes(p1) ||
      (p1 === 'by' && state.intent !== 'list') ||
      (p2 === 'number' && p1 === 'of' && state.intent !== 'count')
    );
  };
  // "which year has the most concerts": a weak word ("year", "name", "type") right after
  // which/what is still the thing asked for.
  const askedWeak = (m: Mention): boolean =>
    m.weak &&
    m.kind === 'column' &&
    m.start === state.headEnd &&
    (['which', 'what'].includes(word(state, m.start - 1)) ||
      (word(state, m.start - 1) === 'the' && ['that', 'which', 'when', 'with', 'in'].includes(word(state, m.end))));
  const strong = mentions.filter((m) => !m.weak || askedWeak(m));
  const first = strong.find((m) => m.start >= state.headEnd && m.kind !== 'value') ?? strong.find((m) => m.kind !== 'value');
  // "who …" asks for people.
  if (state.tokens.some((x, i) => i < 3 && x.lower === 'who')) {
    const persons = [...index.tables.values()].filter((x) => x.person);
    const mentioned = tablesInQuestion(state).filter((x) => index.table(x).person);
    const person = mentioned[0] ?? (persons.length === 1 ? persons[0].name : null);
    if (person) {
      state.subject = person;
      state.asked = { kind: 'table', table: person, start: 0 };
      const m = mentions.find((x) => x.kind === 'table' && x.cands[0].table === person);
      if (m && m.start <= 3) claim(state, m);
      return;
    }
  }
  if (first && first.kind === 'column' && !AGG_WORDS[word(state, first.start - 1)] && first.start <= state.headEnd + 1) {
    const c = resolveColumnByNamedTables(state, first);
    // A column named right at the head is what is asked for ("which cities …").
    state.asked = { kind: 'column', table: c.table, column: c, start: first.start, end: first.end };
    state.subject = c.table;
    return;
  }
  const table = mentions.find((m) => m.kind === 'table' && !m.weak && !inGroupOrSuperlative(m)) as TableMention | undefined;
  if (table) {
    state.subject = resolveTable(table);
    state.asked = { kind: 'table', table: state.subject, start: table.start };
    return;
  }
  const col = strong.find((m) => m.kind === 'column') as ColumnMention | undefined;
  if (col) {
    const c = resolveColumnByNamedTables(state, col);
    state.subject = c.table;
    state.asked = { kind: 'table', table: c.table, start: col.start };
    return;
  }
  // Measures without a table: "total revenue", "units sold".
  if (state.selectAggregates.length > 0) {
    state.subject = measureTable(state.selectAggregates[0].measure);
    state.asked = null;
    return;
  }
  if (state.tokens.some((x) => REVENUE_WORDS.has(x.lower))) {
    const m = revenueMeasure(state);
    if (m) {
      state.subject = measureTable(m);
      state.asked = null;
      return;
    }
  }
  const value = mentions.find((m) => m.kind === 'value');
  if (value && value.kind === 'value') {
    state.subject = value.cands[0].table;
    state.asked = { kind: 'table', table: state.subject, start: value.start };
    return;
  }
  const anyTable = mentions.find((m) => m.kind === 'table') as TableMention | undefined;
  if (anyTable) {
    state.subject = resolveTable(anyTable);
    state.asked = { kind: 'table', table: state.subject, start: anyTable.start };
    return;
  }
  fail('nothing in the question matches a table or column of this database');
}
