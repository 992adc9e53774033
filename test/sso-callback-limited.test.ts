// Forged single sign-on callbacks (no flow of this browser behind them) sign nobody in and
// cannot write audit entries without bound: each counts against the address's sign-in budget
// (30 failures in 15 minutes, shared with passwords); past it, the callback answers with the
// sign-in page's "too many attempts" before doing anything.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './support/harness.ts';

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
  const res = await h.call('PUT', '/api/workspace/sso', h.adminKey, {
    issuer: 'https://login.acme.test',
    clientId: 'dbq',
    clientSecret: 'secret',
    allowedDomains: ['acme.test'],
  });
  expect(res.status).toBe(200);
}, 60_000);

afterAll(async () => {
  await h?.close();
});

const failures = async () =>
  (await h.svc.db.selectFrom('audit_log').select('changes').where('action', '=', 'session.sign_in_failed').execute()).length;

describe('forged SSO callbacks', () => {
  it('are refused, then limited per address, with the audit entries bounded', async () => {
    // A forged flow cookie is no better than none.
    const forged = await h.call('GET', '/sso/callback?code=x&state=y', null, undefined, { cookie: 'dbq_sso=v1:AAAA' });
    const reasons = [new URL(String(forged.headers.location), 'http://x').searchParams.get('sso_error')!];
    for (let i = 0; i < 39; i++) {
      const res = await h.call('GET', `/sso/callback?code=forged-${i}&state=forged`, null);
      expect(res.status).toBe(302);
      expect(res.headers['set-cookie']).toContain('dbq_sso=;');
      reasons.push(new URL(String(res.headers.location), 'http://x').searchParams.get('sso_error')!);
    }
    expect(reasons.slice(0, 30).every((r) => r === 'expired')).toBe(true);
    expect(reasons.slice(30).every((r) => r === 'rate_limited')).toBe(true);
    expect(await failures()).toBe(30);
    expect(await h.svc.db.selectFrom('web_sessions').selectAll().execute()).toHaveLength(0);
  });
});
