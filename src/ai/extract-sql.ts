// Takes the SQL out of a model's reply. Models wrap it in ```sql fences, bare ``` fences,
// prose ("Here is the query: …"), "SQL:" prefixes, or send it bare; some add a trailing ';'
// or several. The result is the statement text without trailing semicolons, or '' when the
// reply holds no SQL at all.

const SQL_START =
  /^\s*(with|select|insert|update|delete|merge|create|alter|drop|truncate|explain|show|describe|desc|values|table|replace|pragma|grant|revoke|call)\b/i;

export interface ExtractedSql {
  sql: string;
  /** Reply text outside the SQL (the model's explanation), trimmed. */
  prose: string;
}

// A fence's info line (blanks, language tag, blanks), each part taken whole: `(?=(x*))\1` is
// JavaScript's atomic group. The plain `[ \t]*[A-Za-z0-9_+-]*[ \t]*` split a run of blanks
// every way before giving up on an unclosed fence: ``` and 20,000 spaces held the event loop
// 1 s. Taking each part whole is what the greedy match does when it succeeds.
const FENCED = /```(?=([ \t]*))\1(?=([A-Za-z0-9_+-]*))\2(?=([ \t]*))\3\n?([\s\S]*?)```/g;
const OPEN_FENCE = /```(?=([ \t]*))\1(?=([A-Za-z0-9_+-]*))\2(?=([ \t]*))\3\n([\s\S]*)$/;

function stripTrailing(sql: string): string {
  const s = sql.trim();
  // Trailing semicolons (and whitespace between them) go; inner ones stay, so a two-statement
  // reply is still seen as two statements by the guard. One backward pass: a regex loop that
  // removed one `;` per pass took 350 ms for 5,000 of them, 6.5 s for 20,000.
  let end = s.length;
  while (end > 0 && (s[end - 1] === ';' || /\s/.test(s[end - 1]))) end--;
  return s.slice(0, end);
}

function stripPrefix(s: string): string {
  return s.replace(/^\s*(sql|query|sql query|answer)\s*:\s*/i, '');
}

export function extractSqlDetailed(reply: string): ExtractedSql {
  const text = reply.replace(/\r\n/g, '\n');
  // 1. Fenced blocks: prefer one tagged sql; else the first block that looks like SQL.
  // Groups: 2 the language tag, 4 the block.
  const fences = [...text.matchAll(FENCED)];
  if (fences.length > 0) {
    const tagged = fences.find((m) => /^(sql|postgres|postgresql|mysql|sqlite|pgsql|plpgsql|mariadb)$/i.test(m[2]));
    const looks = fences.find((m) => SQL_START.test(stripPrefix(m[4])));
    const chosen = tagged ?? looks ?? fences[0];
    const prose = text
      .replace(chosen[0], ' ')
      .replace(/```[\s\S]*?```/g, ' ')
      .replace(/\s+/g, ' ')
      .trim();
    return { sql: stripTrailing(stripPrefix(chosen[4])), prose };
  }
  // An opened fence the model never closed (reply cut at max tokens).
  const open = text.match(OPEN_FENCE);
  if (open && SQL_START.test(stripPrefix(open[4]))) {
    return { sql: stripTrailing(stripPrefix(open[4])), prose: text.slice(0, open.index).trim() };
  }
  // 2. Inline `single backticks` holding a statement.
  const inline = text.match(/`([^`\n]+)`/);
  if (inline && SQL_START.test(inline[1])) {
    return { sql: stripTrailing(inline[1]), prose: text.replace(inline[0], ' ').replace(/\s+/g, ' ').trim() };
  }
  // 3. Bare: from the first line that starts a statement (after an optional "SQL:" prefix)
  //    to the first blank line or the end.
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = stripPrefix(lines[i]);
    if (!SQL_START.test(line)) continue;
    const body: string[] = [line];
    let j = i + 1;
    for (; j < lines.length && lines[j].trim() !== ''; j++) body.push(lines[j]);
    let sql = body.join('\n');
    // "SELECT … ; This query counts …": cut prose after the final semicolon of the block.
    const lastSemi = sql.lastIndexOf(';');
    let after = '';
    if (lastSemi >= 0 && /[A-Za-z]/.test(sql.slice(lastSemi + 1)) && !SQL_START.test(sql.slice(lastSemi + 1))) {
      after = sql.slice(lastSemi + 1);
      sql = sql.slice(0, lastSemi);
    }
    const prose = [...lines.slice(0, i), after, ...lines.slice(j)].join(' ').replace(/\s+/g, ' ').trim();
    return { sql: stripTrailing(sql), prose };
  }
  return { sql: '', prose: text.trim() };
}

/** The SQL of a model reply, or '' when there is none. */
export function extractSql(reply: string): string {
  return extractSqlDetailed(reply).sql;
}
