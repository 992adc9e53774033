// Prints the README's settings table from src/config.ts (node --import tsx scripts/settings-table.ts).
import { SETTINGS } from '../src/config.ts';

export function settingsTable(): string {
  const lines = ['| setting | default | what it does |', '|---|---|---|'];
  for (const [name, { schema, doc }] of Object.entries(SETTINGS)) {
    const def = (schema as { def?: { defaultValue?: unknown } }).def?.defaultValue;
    const shown = def === undefined || def === null ? '' : `\`${typeof def === 'function' ? (def as () => unknown)() : def}\``;
    lines.push(`| \`${name}\` | ${shown} | ${doc} |`);
  }
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) process.stdout.write(`${settingsTable()}\n`);
