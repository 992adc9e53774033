// docs/errors.md is what users read; src/errors.ts is what runs. They must not drift.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CLASSES, DbqError } from '../src/errors.ts';

const doc = fs.readFileSync(new URL('../docs/errors.md', import.meta.url), 'utf8');
const rows = [...doc.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \| `(\w+)` \|/gm)].map((m) => ({ code: m[1], status: Number(m[2]), cls: m[3] }));

function instantiate(Cls: (typeof ERROR_CLASSES)[number]): DbqError {
  return new (Cls as unknown as new (...a: unknown[]) => DbqError)('x', {});
}

describe('error table', () => {
  it('documents every error class with its code and status, and nothing else', () => {
    const actual = ERROR_CLASSES.map((Cls) => {
      const e = instantiate(Cls);
      return { code: e.code, status: e.status, cls: Cls.name };
    });
    expect(rows.sort((a, b) => a.code.localeCompare(b.code))).toEqual(actual.sort((a, b) => a.code.localeCompare(b.code)));
  });

  it('has one class per code', () => {
    const codes = ERROR_CLASSES.map((Cls) => instantiate(Cls).code);
    expect(new Set(codes).size).toBe(codes.length);
  });
});
