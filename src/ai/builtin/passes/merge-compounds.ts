// Pass: merge mentions that name one column together. "order total" (a table word, then a
// column of that table) is orders.total, not the orders table and some total; "first and
// last name" is first_name and last_name. Rewrites state.mentions and state.mentionAt.
import type { ColumnMention, ParseState } from '../parse-state.ts';
import { resolveTable } from '../parse-schema.ts';
import { word } from '../parse-state.ts';

export function mergeCompounds(state: ParseState): void {
  const { tokens, mentions, mentionAt } = state;
  for (let k = 0; k < mentions.length - 1; k++) {
    const a = mentions[k];
    const b = mentions[k + 1];
    if (a.kind !== 'table' || b.kind !== 'column' || b.start !== a.end) continue;
    // Only a singular modifier makes a compound: "order total", not "products cost", and
    // not a verb phrase ("cartoon directed by").
    const last = tokens[a.end - 1];
    if (last.lower !== last.lemma) continue;
    const first = tokens[b.start];
    if (/ed$/.test(first.lower) || ['by', 'of', 'at', 'in', 'on', 'for', 'to'].includes(tokens[b.end - 1].lower)) continue;
    const table = resolveTable(a);
    const hit = b.cands.find((c) => c.table === table);
    if (!hit) continue;
    const merged: ColumnMention = { kind: 'column', start: a.start, end: b.end, cands: [hit], weak: false };
    mentions.splice(k, 2, merged);
    for (let i = merged.start; i < merged.end; i++) mentionAt[i] = merged;
  }
  // "first, middle, and last name" / "first and second line": words before a two-word
  // column, each naming a column with the same last word ("middle name", "first name").
  for (const m of [...mentions]) {
    if (m.kind !== 'column' || m.end - m.start !== 2) continue;
    const tail = tokens[m.end - 1].lemma;
    const tables = new Set(m.cands.map((c) => c.table));
    let i = m.start - 1;
    const added: ColumnMention[] = [];
    while (i >= 0) {
      if (word(state, i) === 'and' || word(state, i) === 'or') {
        i--;
        continue;
      }
      const w = tokens[i].lemma;
      const linked = mentionAt[i];
      // "middle" may already link to middle_name on its own: keep it and read on.
      if (
        linked &&
        linked.kind === 'column' &&
        linked.end - linked.start === 1 &&
        linked.cands.some((c) => state.index.col(c.table, c.column)?.words.join(' ') === `${w} ${tail}`)
      ) {
        i--;
        continue;
      }
      if (linked || tokens[i].kind !== 'word') break;
      const cands = [...tables].flatMap((t) => {
        const col = state.index.tables.get(t)?.cols.find((c) => c.words.join(' ') === `${w} ${tail}`);
        return col ? [{ table: t, column: col.name, score: 1 }] : [];
      });
      if (cands.length === 0) break;
      added.push({ kind: 'column', start: i, end: i + 1, cands, weak: false });
      i--;
    }
    if (added.length === 0) continue;
    for (const a of added) {
      mentions.push(a);
      mentionAt[a.start] = a;
    }
    mentions.sort((x, y) => x.start - y.start);
  }
  // "first and last name(s)" → first_name, last_name.
  for (let i = 0; i + 3 < tokens.length; i++) {
    if (word(state, i) !== 'first' || word(state, i + 1) !== 'and' || word(state, i + 2) !== 'last' || tokens[i + 3].lemma !== 'name')
      continue;
    const cands = [...state.index.tables.values()].flatMap((info) => {
      const f = info.cols.find((c) => c.words.join(' ') === 'first name');
      const l = info.cols.find((c) => c.words.join(' ') === 'last name');
      return f && l ? [{ table: info.name, first: f.name, last: l.name }] : [];
    });
    if (cands.length === 0) continue;
    const firstName: ColumnMention = {
      kind: 'column',
      start: i,
      end: i + 1,
      cands: cands.map((c) => ({ table: c.table, column: c.first, score: 1 })),
      weak: false,
    };
    const lastName: ColumnMention = {
      kind: 'column',
      start: i + 2,
      end: i + 4,
      cands: cands.map((c) => ({ table: c.table, column: c.last, score: 1 })),
      weak: false,
    };
    const old = mentions.filter((m) => m.start >= i && m.start < i + 4);
    for (const o of old) mentions.splice(mentions.indexOf(o), 1);
    mentions.push(firstName, lastName);
    mentions.sort((x, y) => x.start - y.start);
    mentionAt[i] = firstName;
    mentionAt[i + 1] = null;
    mentionAt[i + 2] = lastName;
    mentionAt[i + 3] = lastName;
    state.consumed[i + 1] = true;
  }
}
