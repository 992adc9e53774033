// CSV of the current result, made in the browser; the text (with the formula guard) comes
// from csv-text.ts.
import { toCsv } from './csv-text.ts';
import { cellText } from './format.ts';

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

export { cellText, toCsv };
