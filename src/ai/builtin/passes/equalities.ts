// Pass: equalities said outright. "out of stock", "order 42" / "customer id 7" (primary key),
// "rating 5" / "stock is 0", "status 'paid'", "3 years old", "5 stars", "named 'Anna Schmidt'"
// (on a first/last-name label: one word per column).
import type { ParseState } from '../parse-state.ts';
import { addCondition, claim, consume, isYearAt, matchWords, numberAt, skipWords, word } from '../parse-state.ts';
import { columnInfo, findColumn, nearbyTables, nearestTableBefore, resolveColumn, resolveTable } from '../parse-schema.ts';

export function readEqualities(state: ParseState): void {
  const { tokens, mentionAt, index } = state;
  for (let i = 0; i < tokens.length; i++) {
    if (state.consumed[i]) continue;
    // "out of stock" / "in stock"
    const stock = matchWords(state, i, ['out', 'of', 'stock']) || matchWords(state, i, ['in', 'stock']);
    if (stock) {
      const c = findColumn(state, ['stock', 'inventory'], nearbyTables(state), (x) => x.numeric);
      if (c) {
        addCondition(state, { kind: 'compare', column: c, op: word(state, i) === 'out' ? '=' : '>', value: 0 }, i);
        for (let x = i; x < i + stock; x++) if (mentionAt[x]) claim(state, mentionAt[x]);
        consume(state, i, i + stock);
        continue;
      }
    }
    const m = mentionAt[i];
    // "order 42", "order #42", "customer id 7", "product number 3"
    if (m && m.kind === 'table' && m.end === i + 1) {
      const k = skipWords(state, m.end, ['id', 'number', 'no', 'nr', '#', 'with']);
      const v = numberAt(state, k);
      const info = index.table(resolveTable(m));
      if (v !== null && info.pk && !isYearAt(state, k) && (k > m.end || !mentionAt[k + 1] || mentionAt[k + 1]!.kind !== 'table')) {
        addCondition(state, { kind: 'compare', column: { table: info.name, column: info.pk }, op: '=', value: v }, i);
        consume(state, m.end, k + 1);
        if (info.name !== state.subject) claim(state, m);
        continue;
      }
    }
    // "rating 5", "rating of 5", "stock is 0" (not "named 'X'", handled below)
    if (m && m.kind === 'column' && m.start === i && !['named', 'called', 'titled'].includes(word(state, i))) {
      const c = resolveColumn(state, m);
      const info = columnInfo(state, c);
      const k = skipWords(state, m.end, ['of', 'is', 'are', 'was', 'were', 'equal', 'equals', 'to', '=', 'exactly', 'either']);
      const v = numberAt(state, k);
      // A number stored as text (an age in a SQLite file) is compared as the text it is.
      // Only a column named in full ("age", not "line" of line_1) and a short number ("32",
      // not a phone number whose leading zero the number token lost).
      const asText =
        info.text &&
        !info.pk &&
        !info.fk &&
        !info.date &&
        !/\d/.test(c.column) &&
        m.cands.some((x) => x.score >= 0.9) &&
        /^[1-9]\d{0,3}$/.test(tokens[k]?.raw ?? '');
      if (v !== null && (info.numeric || info.year || asText)) {
        claim(state, m);
        // "aged either 32 or 33", "3, 4 or 5 stars": alternatives on one column.
        const values: number[] = [v];
        let e = k + 1;
        while (matchWords(state, e, [',|or|and', 'or?']) && numberAt(state, e + matchWords(state, e, [',|or|and', 'or?'])) !== null) {
          const step = matchWords(state, e, [',|or|and', 'or?']);
          if (word(state, e) === 'and' && !tokens.slice(e).some((t) => t.lower === 'or')) break;
          values.push(numberAt(state, e + step)!);
          e += step + 1;
        }
        consume(state, m.end, e);
        const typed = asText && !info.numeric ? values.map((x) => String(x)) : values;
        if (typed.length > 1 || asText) addCondition(state, { kind: 'in', column: c, values: typed, negate: false }, i);
        else addCondition(state, { kind: 'compare', column: c, op: '=', value: v }, i);
        continue;
      }
      const quoted = tokens[k];
      if (quoted && quoted.kind === 'quoted' && !state.consumed[k]) {
        claim(state, m);
        consume(state, m.end, k + 1);
        addCondition(state, { kind: 'in', column: c, values: [quoted.raw], negate: false }, i);
        continue;
      }
    }
    // "3 years old"
    if (numberAt(state, i) !== null && matchWords(state, i + 1, ['year|years', 'old'])) {
      const valueTables = [...state.mentions]
        .filter((x) => x.kind === 'value' && Math.abs(x.start - i) <= 5)
        .map((x) => (x as { cands: { table: string }[] }).cands[0].table);
      const c = findColumn(state, ['age'], [...valueTables, ...nearbyTables(state)], (x) => x.numeric);
      if (c) {
        addCondition(state, { kind: 'compare', column: c, op: '=', value: numberAt(state, i)! }, i);
        consume(state, i, i + 3);
        continue;
      }
    }
    // "5 stars", "with 3 units"
    const v = numberAt(state, i);
    if (v !== null && !isYearAt(state, i)) {
      const next = mentionAt[i + 1];
      if (next && next.kind === 'column' && columnInfo(state, resolveColumn(state, next)).numeric && !state.claimed.has(next)) {
        claim(state, next);
        consume(state, i, i + 1);
        addCondition(state, { kind: 'compare', column: resolveColumn(state, next), op: '=', value: v }, i);
        continue;
      }
    }
    // named / called / titled X
    const n = matchWords(state, i, ['named|called|titled|name|title', 'is?']);
    if (n) {
      let k = i + n;
      const values: string[] = [];
      if (tokens[k]?.kind === 'quoted') {
        values.push(tokens[k].raw);
        k++;
      } else {
        while (k < tokens.length && (tokens[k].capital || tokens[k].kind === 'number') && !state.consumed[k]) values.push(tokens[k++].raw);
      }
      if (values.length === 0) continue;
      const table = nearestTableBefore(state, i) ?? state.subject;
      // "named 'Anna Schmidt'" on a first/last-name label: two words, two columns.
      if (values.length === 1 && table && index.table(table).label.length === 2 && values[0].split(/\s+/).length === 2) {
        values.splice(0, 1, ...values[0].split(/\s+/));
      }
      if (!table) continue;
      const info = index.table(table);
      const col = info.label.length === 1 ? info.label[0] : (info.cols.find((c) => c.words.includes('name') && c.text)?.name ?? null);
      const value = values.join(' ');
      if (info.label.length === 2 && values.length === 2) {
        for (const [ci, v] of [
          [0, values[0]],
          [1, values[1]],
        ] as const) {
          addCondition(state, { kind: 'in', column: { table, column: info.label[ci] }, values: [v], negate: false }, i);
        }
      } else if (col) {
        addCondition(state, { kind: 'in', column: { table, column: col }, values: [value], negate: false }, i);
      } else continue;
      // A value already linked inside the name is part of it.
      for (let x = i; x < k; x++) if (mentionAt[x]) claim(state, mentionAt[x]);
      consume(state, i, k);
    }
  }
}
