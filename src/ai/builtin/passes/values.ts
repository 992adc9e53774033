// Pass: known values. A value linked from the samples ("Berlin", "shipped", "Books") becomes
// column = value (or <> after "not"/"except"); several values of one column are alternatives
// (IN). Which column, when the value occurs in several: one named just before ("city
// Berlin"), a table named next to it, the subject's, the nearest the subject.
import type { ColumnRef } from '../plan.ts';
import { addCondition, claim, consume, word, type ParseState } from '../parse-state.ts';
import { isChildTable, resolveColumn, resolveTable, tablesInQuestion } from '../parse-schema.ts';

const NOT_PREPOSITIONS = new Set(['in', 'from', 'of', 'by', 'at', 'on', 'as', 'for', 'to', 'use', 'speak', 'equal']);
const LINK_WORDS = new Set(['is', 'are', 'was', 'were', 'not', 'equal', 'equals', 'to', '=', '!=', '<>', 'of', 'the', 'as', 'a', 'an']);

export function readValues(state: ParseState): void {
  const { mentionAt } = state;
  const byColumn = new Map<string, { column: ColumnRef; values: string[]; negate: boolean; pos: number }>();
  for (const m of state.mentions) {
    if (m.kind !== 'value' || state.claimed.has(m) || state.consumed[m.start]) continue;
    // The column named before the value, past "is", "not", "equal to": "whose hometown is
    // not 'X'" names hometown for the condition, not for the SELECT list.
    let k = m.start - 1;
    while (k >= 0 && k >= m.start - 4 && !mentionAt[k] && LINK_WORDS.has(word(state, k))) k--;
    const before = mentionAt[k] ?? mentionAt[m.start - 1] ?? mentionAt[m.start - 2];
    let columnBefore: ColumnRef | null = null;
    if (before && before.kind === 'column') columnBefore = resolveColumn(state, before);
    const tableBefore = before && before.kind === 'table' ? resolveTable(before) : null;
    const after = mentionAt[m.end];
    const tableAfter = after && after.kind === 'table' ? resolveTable(after) : null;
    const scored = m.cands.map((c) => {
      let score = 0;
      if (columnBefore && columnBefore.table === c.table && columnBefore.column === c.column) score += 100;
      if (tableAfter === c.table) score += 50;
      if (tableBefore === c.table) score += 40;
      if (c.table === state.subject) score += 20;
      if (tablesInQuestion(state).includes(c.table)) score += 10;
      if (state.subject) score -= state.index.distance(state.subject, c.table);
      return { candidate: c, score };
    });
    scored.sort((a, b) => b.score - a.score);
    const pick = scored[0].candidate;
    if (columnBefore && columnBefore.table === pick.table && columnBefore.column === pick.column && before) claim(state, before);
    // "Electronics category": the table word after a value of its own column is part of it.
    if (after && after.kind === 'table' && tableAfter === pick.table) claim(state, after);
    // "not Berlin", "not in Berlin", "not from Russia", "is not 'X'": the negation may sit
    // before a preposition or before the column named for the value.
    let notAt = -1;
    if (['not', 'except', 'excluding', 'than', 'besides', 'exclude'].includes(word(state, m.start - 1))) notAt = m.start - 1;
    else if (NOT_PREPOSITIONS.has(word(state, m.start - 1)) && word(state, m.start - 2) === 'not') notAt = m.start - 2;
    else if (before && before !== m) {
      let b = before.start - 1;
      while (b >= 0 && b >= before.start - 3 && ['the', 'a', 'an', 'have', 'has', 'its', 'their'].includes(word(state, b))) b--;
      if (word(state, b) === 'not' && !state.consumed[b]) notAt = b;
      else if (word(state, m.start - 1) === 'not' || (k < m.start - 1 && state.tokens.slice(k + 1, m.start).some((t) => t.lower === 'not')))
        notAt = state.tokens.slice(k + 1, m.start).find((t) => t.lower === 'not')?.i ?? -1;
    }
    const negate = notAt >= 0 && !state.consumed[notAt];
    if (negate) consume(state, notAt, notAt + 1);
    claim(state, m);
    // A value inside a negated clause ("shipped but not delivered") stays apart from the
    // others on its column: assemble.ts moves it into that clause's NOT EXISTS by position.
    const span = state.negatedExists.find((ex) => ex.pos >= 0 && m.start >= ex.pos && m.start <= ex.end);
    const key = `${pick.table}.${pick.column}.${negate}${span ? `.${span.pos}` : ''}`;
    const entry = byColumn.get(key) ?? { column: { table: pick.table, column: pick.column }, values: [], negate, pos: m.start };
    if (!entry.values.includes(pick.value)) entry.values.push(pick.value);
    byColumn.set(key, entry);
  }
  for (const e of byColumn.values()) {
    // "students who have both cat and dog pets": each value on its own related row, so one
    // EXISTS per value; IN would accept either.
    const both = e.values.length > 1 && !e.negate && bothBefore(state, e.pos);
    if (both && state.subject && e.column.table !== state.subject && isChildTable(state, e.column.table)) {
      for (const v of e.values) {
        state.negatedExists.push({
          negate: false,
          target: e.column.table,
          conditions: [{ kind: 'in', column: e.column, values: [v], negate: false }],
          pos: -1,
          end: -1,
        });
      }
      continue;
    }
    // "students who do not own cats", "airlines with flights from CVO but not from APG": no
    // related row has the value (NOT EXISTS), rather than some related row lacking it.
    if (e.negate && state.subject && e.column.table !== state.subject && isChildTable(state, e.column.table)) {
      state.negatedExists.push({
        negate: true,
        target: e.column.table,
        conditions: [{ kind: 'in', column: e.column, values: e.values, negate: false }],
        pos: -1,
        end: -1,
      });
      continue;
    }
    addCondition(state, { kind: 'in', column: e.column, values: e.values, negate: e.negate }, e.pos);
  }
}

/** "both" a few words before the first of several values. */
function bothBefore(state: ParseState, pos: number): boolean {
  for (let k = pos - 1; k >= Math.max(0, pos - 3); k--) if (word(state, k) === 'both') return true;
  return false;
}
