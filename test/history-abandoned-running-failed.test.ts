// A write's history entry is written `running` before its statement is sent; a process killed
// before completing it left it `running` for ever. The server's hourly retention pass marks
// entries older than any statement can run as failed, saying the outcome is unknown, and
// leaves recent running entries (a statement may still be running) and finished ones alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ABANDONED_AFTER_MS, ABANDONED_ERROR, failAbandonedRunning } from '../src/history/history.ts';
import { firstIdAt, newId } from '../src/ids.ts';
import type { HistoryRow } from '../src/store/schema.ts';
import { createHarness, type Harness } from './support/harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

async function entryAt(ms: number, status: HistoryRow['status'], workspace = 'default'): Promise<string> {
  const ws = await h.svc.db.selectFrom('workspaces').select('id').where('slug', '=', workspace).executeTakeFirstOrThrow();
  const user = await h.svc.db.selectFrom('users').select(['id', 'email']).where('workspace_id', '=', ws.id).executeTakeFirstOrThrow();
  // Ids start with their creation time (the sweep finds old entries by id): one from then.
  const id = firstIdAt('h', ms) + newId('h').slice(firstIdAt('h', 0).length);
  await h.svc.db
    .insertInto('query_history')
    .values({
      id,
      workspace_id: ws.id,
      query_id: newId('q'),
      connection_id: 'conn_x',
      connection_name: 'x',
      sql: 'UPDATE t SET v = 1',
      statement_type: 'UPDATE',
      status,
      row_count: null,
      affected_rows: null,
      duration_ms: 0,
      error: null,
      source: 'api',
      api_key_id: null,
      api_key_name: null,
      user_id: user.id,
      user_email: user.email,
      created_at: new Date(ms).toISOString(),
      tool_name: null,
      tool_version: null,
    })
    .execute();
  return id;
}

const statusOf = async (id: string) =>
  h.svc.db.selectFrom('query_history').select(['status', 'error']).where('id', '=', id).executeTakeFirstOrThrow();

describe('running entries a stopped process left behind', () => {
  it('are marked failed once older than any statement can run, in every workspace; recent and finished ones stay', async () => {
    const now = Date.now();
    const abandoned = await entryAt(now - ABANDONED_AFTER_MS - 60_000, 'running');
    const abandonedOther = await entryAt(now - 2 * ABANDONED_AFTER_MS, 'running', 'other');
    const recent = await entryAt(now - 60_000, 'running');
    const oldSucceeded = await entryAt(now - 2 * ABANDONED_AFTER_MS, 'succeeded');

    expect(await failAbandonedRunning(h.svc.db)).toBe(2);
    expect(await statusOf(abandoned)).toEqual({ status: 'failed', error: ABANDONED_ERROR });
    expect(await statusOf(abandonedOther)).toEqual({ status: 'failed', error: ABANDONED_ERROR });
    expect(await statusOf(recent)).toEqual({ status: 'running', error: null });
    expect(await statusOf(oldSucceeded)).toEqual({ status: 'succeeded', error: null });
    // Done once: a second pass finds nothing.
    expect(await failAbandonedRunning(h.svc.db)).toBe(0);
  });

  it('GET /history shows the swept entry as failed with the reason', async () => {
    const id = await entryAt(Date.now() - ABANDONED_AFTER_MS - 1_000, 'running');
    await failAbandonedRunning(h.svc.db);
    const res = await h.call('GET', '/api/query/history?status=failed', h.adminKey);
    expect(res.status).toBe(200);
    const entry = res.body.data.entries.find((e: { id: string }) => e.id === id);
    expect(entry).toMatchObject({ status: 'failed', error: ABANDONED_ERROR });
  });
});
