// The key is checked again on every message, not once per session: revoking it, disabling its
// user or demoting the user changes what an already open session may do at its very next
// call, on both transports — and a dead key's session is closed.
import { cliActor } from '../src/audit/audit.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeApiKey } from '../src/workspaces/api-keys.ts';
import { setUserDisabled, setUserRole } from '../src/workspaces/users.ts';
import { createMcpHarness, dataOf, eventually, textOf, TRANSPORTS, type McpHarness } from './support/mcp-harness.ts';

let m: McpHarness;

beforeAll(async () => {
  m = await createMcpHarness();
});
afterAll(async () => {
  await m?.close();
});

const select = { name: 'execute_query', arguments: { connectionId: 'lite', sql: 'SELECT count(*) FROM items' } };

describe.each(TRANSPORTS)('over %s', (transport) => {
  it('a revoked key stops an open session at its next call', async () => {
    const key = await m.freshKey('read_only');
    const client = await m.connect(transport, key.secret, transport === 'sse' ? { keyIn: 'query' } : {});
    const before = m.sessions.size;
    dataOf(await client.callTool(select));
    await revokeApiKey(m.h.svc.db, 'default', key.keyId);
    await expect(client.callTool(select)).rejects.toThrow(/401|Invalid or missing API key/);
    await eventually(() => m.sessions.size === before - 1);
  });

  it('a disabled user stops an open session at its next call', async () => {
    const key = await m.freshKey('admin');
    const client = await m.connect(transport, key.secret);
    dataOf(await client.callTool(select));
    await setUserDisabled(m.h.svc.db, 'default', key.email, true, cliActor());
    await expect(client.callTool(select)).rejects.toThrow(/401|Invalid or missing API key/);
  });

  it('a demoted user is read-only at the next call of the same session', async () => {
    const key = await m.freshKey('admin');
    const client = await m.connect(transport, key.secret);
    const update = {
      name: 'execute_query',
      arguments: { connectionId: 'lite', sql: "UPDATE items SET price = price WHERE name = 'pear'" },
    };
    expect(dataOf(await client.callTool(update)).affectedRows).toBe(1);
    await setUserRole(m.h.svc.db, 'default', key.email, 'read_only', cliActor());
    const res = await client.callTool(update);
    expect(res.isError).toBe(true);
    expect(textOf(res)).toMatch(/^Insufficient permissions/);
    dataOf(await client.callTool(select));
  });
});
