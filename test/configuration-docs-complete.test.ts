// docs/configuration.md is the reference for every DBQ_* setting; src/config.ts's SETTINGS is
// what runs. They must not drift: every setting has an entry, no entry names a setting that
// does not exist, and each entry's default and accepted range or values are the schema's.
// (test/config-docs.test.ts keeps the README's short table complete and the validation itself.)
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { SETTINGS } from '../src/config.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const doc = fs.readFileSync(path.join(ROOT, 'docs/configuration.md'), 'utf8');

/** `### \`DBQ_X\`` entries: name → the lines up to the next heading. */
function entries(text: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const m of text.matchAll(/^### `(DBQ_[A-Z0-9_]+)`\n([\s\S]*?)(?=^#{2,3} |(?![\s\S]))/gm)) found.set(m[1], m[2]);
  return found;
}

const CLI_ONLY = '## Read by the CLI only';
const serverPart = doc.slice(0, doc.indexOf(CLI_ONLY) >= 0 ? doc.indexOf(CLI_ONLY) : undefined);
const cliPart = doc.indexOf(CLI_ONLY) >= 0 ? doc.slice(doc.indexOf(CLI_ONLY)) : '';

/** DBQ_* names src/ reads from process.env outside src/config.ts (the CLI's DBQ_API_KEY). */
function envReadsOutsideConfig(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (/\.(ts|mjs|js)$/.test(entry.name) && file !== path.join(ROOT, 'src/config.ts')) {
        for (const m of fs.readFileSync(file, 'utf8').matchAll(/process\.env\.(DBQ_[A-Z0-9_]+)/g)) names.add(m[1]);
      }
    }
  };
  walk(path.join(ROOT, 'src'));
  return names;
}

interface Facts {
  /** The raw default as written in the environment, or null when the setting may be unset. */
  defaultValue: string | null;
  range?: [number, number];
  options?: readonly string[];
}

/** Reads the default, integer range and enum values out of a setting's zod schema. */
function factsOf(schema: z.ZodType): Facts {
  let s: z.ZodType = schema;
  if (s instanceof z.ZodPipe) s = s.in as z.ZodType;
  if (s instanceof z.ZodOptional) return { defaultValue: null };
  if (!(s instanceof z.ZodDefault)) throw new Error('a setting is neither optional nor defaulted');
  const defaultValue = String(s.def.defaultValue);
  const inner = s.unwrap() as z.ZodType;
  if (inner instanceof z.ZodNumber) return { defaultValue, range: [inner.minValue!, inner.maxValue!] };
  if (inner instanceof z.ZodEnum) return { defaultValue, options: inner.options as string[] };
  return { defaultValue };
}

describe('docs/configuration.md', () => {
  const documented = entries(serverPart);

  it('has an entry for every setting of src/config.ts, and no other', () => {
    expect([...documented.keys()].sort()).toEqual(Object.keys(SETTINGS).sort());
  });

  it('names no DBQ_ variable that dbq does not read', () => {
    const known = new Set([...Object.keys(SETTINGS), ...envReadsOutsideConfig()]);
    const named = new Set([...doc.matchAll(/\bDBQ_[A-Z0-9_]+/g)].map((m) => m[0]));
    expect([...named].filter((n) => !known.has(n))).toEqual([]);
  });

  it('documents what src/ reads from the environment outside config.ts', () => {
    const cli = entries(cliPart);
    expect([...cli.keys()].sort()).toEqual([...envReadsOutsideConfig()].sort());
  });

  for (const [name, setting] of Object.entries(SETTINGS)) {
    it(`gives ${name}'s default and accepted values as the schema does`, () => {
      const body = documented.get(name);
      expect(body, `no entry for ${name}`).toBeDefined();
      const facts = factsOf(setting.schema as z.ZodType);
      const defaultLine = body!.match(/^- Default: (.*)$/m)?.[1];
      expect(defaultLine, `${name}: "- Default:" line`).toBeDefined();
      if (facts.defaultValue === null) expect(defaultLine).toMatch(/^unset\b/);
      else expect(defaultLine!.startsWith(`\`${facts.defaultValue}\``), `${name}: default ${defaultLine}`).toBe(true);
      const accepts = body!.match(/^- Accepts: ([\s\S]*?)(?=^- |(?![\s\S]))/m)?.[1].replace(/\s+/g, ' ');
      expect(accepts, `${name}: "- Accepts:" line`).toBeDefined();
      if (facts.range) expect(accepts).toContain(`an integer from ${facts.range[0]} to ${facts.range[1]}`);
      if (facts.options) {
        const listed = [...accepts!.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
        expect(listed.sort()).toEqual([...facts.options].sort());
      }
    });
  }
});
