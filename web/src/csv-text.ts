// CSV text of a result (RFC 4180: quoted when needed, CRLF rows), without the DOM, so it can be
// tested under Node. Always with the OWASP CSV-injection guard: the file is meant for a
// spreadsheet, where a cell beginning with =, +, -, @, tab or CR runs as a formula (a stored
// `=HYPERLINK(…)` would run on the machine of whoever opens it). Such a cell gets a leading '
// and is quoted. Numbers, and text that is just a number (int8 and numeric values arrive as
// strings), are left alone. POST /query/export applies the same rule (`csvFormulaGuard`).

const FORMULA_START = /^[=+\-@\t\r]/;
const PLAIN_NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

function field(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (typeof value !== 'number' && FORMULA_START.test(text) && !PLAIN_NUMBER.test(text)) return `"'${text.replace(/"/g, '""')}"`;
  return /[",\r\n]/.test(text) || /^\s|\s$/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function toCsv(columns: { name: string }[], rows: unknown[][]): string {
  const lines = [columns.map((c) => field(c.name)).join(',')];
  for (const r of rows) lines.push(columns.map((_, i) => field(r[i])).join(','));
  return `${lines.join('\r\n')}\r\n`;
}
