// What broke: connection errors were the driver's message with the password's text replaced by
// `***`. When the password was a substring of the message, the mask itself told it: a refused
// connection answered `connect ECONNREFUSED 127.***:5999`, so the password was "0.0.1". The
// reasons are now built from the error's fields (code, syscall, address, port, SQLSTATE, the
// server's own message), which hold no secret: nothing is masked, and the message is the same
// whatever the password. Ad-hoc and stored tests, PostgreSQL and MariaDB, and a query's 502.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './support/harness.ts';

let h: Harness;
const tag = `${process.pid}_${Math.random().toString(36).slice(2, 7)}`;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h?.close();
});

interface Case {
  engine: 'postgres' | 'mysql';
  /** Connection settings, without the password. */
  settings: Record<string, unknown>;
  /** The reason every password must produce, exactly. */
  reason: string;
  /** Passwords that are substrings of `reason` (the old mask turned each into an oracle). */
  passwords: string[];
}

const REFUSED = 'connect ECONNREFUSED 127.0.0.1:5999';
const REFUSED_PASSWORDS = ['127', '0.0.1', '127.0.0.1', 'ECONNREFUSED', 'connect', '5999', ':5999', 'ECONN'];
const NO_ROLE = `dbq_norole_${tag}`;

const CASES: Case[] = [
  {
    engine: 'postgres',
    settings: { host: '127.0.0.1', port: 5999, database: 'test', user: 'postgres' },
    reason: REFUSED,
    passwords: [...REFUSED_PASSWORDS, 'postgres'],
  },
  {
    engine: 'mysql',
    settings: { host: '127.0.0.1', port: 5999, database: 'test', user: 'root' },
    reason: REFUSED,
    passwords: [...REFUSED_PASSWORDS, 'root'],
  },
  {
    // The server's own message, naming the user only (trust authentication here, so an
    // unknown role is the authentication failure this server can produce).
    engine: 'postgres',
    settings: { host: '127.0.0.1', port: 5432, database: 'test', user: NO_ROLE },
    reason: `role "${NO_ROLE}" does not exist`,
    passwords: [NO_ROLE, 'role', 'does not exist', 'exist', 'dbq_norole'],
  },
  {
    engine: 'mysql',
    settings: { host: '127.0.0.1', port: 3306, database: 'test', user: 'root' },
    reason: "Access denied for user 'root'@'127.0.0.1' (using password: YES)",
    passwords: ['root', 'password', 'Access denied', 'YES', '127.0.0.1', 'using password'],
  },
];

function expectClean(error: string, reason: string, password: string): void {
  expect(error, `password ${JSON.stringify(password)}`).toBe(reason);
  expect(error).not.toContain('***');
  expect(error).not.toContain('…');
}

describe.each(CASES)('$engine: $reason', ({ engine, settings, reason, passwords }) => {
  it('an ad-hoc test answers the same reason, unmasked, whatever the password', async () => {
    for (const password of passwords) {
      const res = await h.call('POST', '/api/connections/test', h.adminKey, { engine, ...settings, password });
      expect(res.status).toBe(200);
      expect(res.body.data.ok).toBe(false);
      expectClean(res.body.data.error, reason, password);
    }
  });

  it('a stored connection: its test and its queries (502, history) carry the same reason', async () => {
    for (const [i, password] of passwords.entries()) {
      const name = `oracle-${engine}-${settings.port}-${String(settings.user).length}-${i}`;
      const created = await h.call('POST', '/api/connections', h.adminKey, { name, engine, ...settings, password });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const id = created.body.data.connection.id;

      const tested = await h.call('POST', '/api/connections/test', h.readerKey, { connectionId: id });
      expect(tested.body.data.ok).toBe(false);
      expectClean(tested.body.data.error, reason, password);

      const sql = `SELECT 1 AS oracle_${i}`;
      const queried = await h.call('POST', '/api/query', h.adminKey, { connectionId: id, sql });
      expect(queried.status).toBe(502);
      expect(queried.body.code).toBe('connection_failed');
      expectClean(queried.body.error, `Could not connect to database: ${reason}`, password);

      // PostgreSQL fails earlier, loading the catalog the read guard decides with, and writes
      // no entry; whatever entries there are must be as clean as the answer.
      const history = await h.call('GET', `/api/query/history?limit=5&connectionId=${id}`, h.adminKey);
      const entries = history.body.data.entries as { sql: string; status: string; error: string }[];
      if (engine === 'mysql') expect(entries.map((e) => [e.sql, e.status])).toEqual([[sql, 'failed']]);
      for (const entry of entries) expectClean(entry.error, `Could not connect to database: ${reason}`, password);
    }
  });
});
