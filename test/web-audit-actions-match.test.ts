// The audit page's action filter offers every action the API records, and only those: the
// browser app keeps its own copy of the list (it imports no server module), which drifted once
// (the OAuth and SSO actions were missing from the filter).
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AUDIT_ACTIONS } from '../src/audit/audit.ts';

describe('the audit page action filter', () => {
  it('lists exactly the API audit actions, in the same order', () => {
    const page = fs.readFileSync(path.join(import.meta.dirname, '..', 'web', 'src', 'pages', 'audit.tsx'), 'utf8');
    const list = /const ACTIONS = \[([^\]]*)\]/.exec(page)?.[1] ?? '';
    const actions = [...list.matchAll(/'([a-z_.]+)'/g)].map((m) => m[1]);
    expect(actions).toEqual([...AUDIT_ACTIONS]);
  });
});
