// CSV of the current result, made in the browser (RFC 4180: quoted when needed, CRLF rows).
import { cellText } from './format.ts';

function field(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) || /^\s|\s$/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function toCsv(columns: { name: string }[], rows: unknown[][]): string {
  const lines = [columns.map((c) => field(c.name)).join(',')];
  for (const r of rows) lines.push(columns.map((_, i) => field(r[i])).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

export function downloadCsv(filename: string, columns: { name: string }[], rows: unknown[][]): void {
  const blob = new Blob([toCsv(columns, rows)], { type: 'text/csv;charset=utf-8' });
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export { cellText };
