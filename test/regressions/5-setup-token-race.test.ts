// Two dbq processes starting together on one PostgreSQL store both issued the first-run setup
// token with delete-then-insert; the loser hit web_setup_tokens_pkey and failed to start
// (seen in test/multi-process.test.ts). Issuing is now one upsert.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/store.ts';
import { ensureDefaultWorkspace } from '../../src/workspaces/workspaces.ts';
import { issueSetupToken, setupTokenUsable } from '../../src/workspaces/setup-token.ts';
import { freshPostgresDatabase, tempDir } from '../support/databases.ts';

let store: Store;
let drop: () => Promise<void>;

beforeAll(async () => {
  const fresh = await freshPostgresDatabase();
  drop = fresh.drop;
  store = await openStore({ dataDir: tempDir(), storeUrl: fresh.url });
  await ensureDefaultWorkspace(store.db);
});
afterAll(async () => {
  await store.close();
  await drop();
});

it('issues setup tokens concurrently without failing, and exactly one of them works', async () => {
  const tokens = await Promise.all(Array.from({ length: 8 }, () => issueSetupToken(store.db, 'default')));
  expect(tokens.every((t) => typeof t === 'string')).toBe(true);
  const usable = await Promise.all(tokens.map((t) => setupTokenUsable(store.db, 'default', t!)));
  expect(usable.filter(Boolean)).toHaveLength(1);
});
