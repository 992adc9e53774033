// DBQ_CONNECTION_TARGETS confines where connections and connection tests may dial. A
// connection test answers differently for a closed port, an open one and one that speaks
// another protocol, so an admin key could map the server's network; with the setting, a host
// outside the list is refused before anything is dialled, with one answer whatever is there.
import { cliActor } from '../src/audit/audit.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { createConnection } from '../src/connections/connections.ts';
import { checkConnectionTarget, parseConnectionTargets, pinConnectionTarget } from '../src/connections/connection-targets.ts';
import type { EngineConfig } from '../src/engines/engine.ts';
import { getWorkspace } from '../src/workspaces/workspaces.ts';
import { createHarness, MYSQL_URL, PG_URL, type Harness } from './support/harness.ts';

const fakeDns: Record<string, string[]> = {
  'db.internal': ['10.1.2.3'],
  'split.example': ['10.1.2.3', '192.168.7.7'],
  'mapped.example': ['::ffff:10.9.9.9'],
  'v6.example': ['fd00::5'],
  'listed.example': ['203.0.113.9'],
};
const lookup = async (host: string) => {
  const found = fakeDns[host];
  if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return found;
};

describe('DBQ_CONNECTION_TARGETS', () => {
  it('is read once at start: IPs, CIDRs and host names; unset allows any', () => {
    expect(loadConfig({}).connectionTargets).toBeNull();
    expect(loadConfig({ DBQ_CONNECTION_TARGETS: ' ' }).connectionTargets).toBeNull();
    expect(loadConfig({ DBQ_CONNECTION_TARGETS: '10.0.0.0/8, DB.Internal ,::1,fd00::/8,127.0.0.1' }).connectionTargets).toEqual([
      '10.0.0.0/8',
      'db.internal',
      '::1',
      'fd00::/8',
      '127.0.0.1',
    ]);
    for (const bad of ['10.0.0.0/33', '::/129', 'not a host', '10.0.0.0/8/8', 'http://db', '1.2.3.4/x']) {
      expect(() => loadConfig({ DBQ_CONNECTION_TARGETS: bad }), bad).toThrow(ConfigError);
      expect(() => loadConfig({ DBQ_CONNECTION_TARGETS: bad }), bad).toThrow(/DBQ_CONNECTION_TARGETS/);
    }
  });

  it('checks every address a host resolves to', async () => {
    const targets = parseConnectionTargets(['10.0.0.0/8', 'fd00::/8', 'listed.example'], { lookupTimeoutMs: 1000 })!;
    const check = (host: string) => checkConnectionTarget(targets, host, lookup);
    expect(await check('db.internal')).toEqual(['10.1.2.3']);
    expect(await check('10.200.0.1')).toEqual(['10.200.0.1']);
    expect(await check('mapped.example')).toEqual(['::ffff:10.9.9.9']);
    expect(await check('v6.example')).toEqual(['fd00::5']);
    expect(await check('LISTED.example')).toEqual(['203.0.113.9']);
    const refusals = [];
    for (const host of ['split.example', '192.168.7.7', 'nowhere.example', '11.0.0.1', 'fe80::1']) {
      const err = await check(host).catch((e: unknown) => e);
      expect(err, host).toMatchObject({ code: 'insufficient_permissions', status: 403 });
      refusals.push(JSON.stringify([(err as any).message, (err as any).details]));
    }
    expect(new Set(refusals).size).toBe(1);
    await expect(checkConnectionTarget(null, 'anything', lookup)).resolves.toBeNull();
  });

  it('refuses a host whose look-up does not answer in time, like any other', async () => {
    const targets = parseConnectionTargets(['10.0.0.0/8'], { lookupTimeoutMs: 50 })!;
    const slow = () => new Promise<string[]>(() => {});
    await expect(checkConnectionTarget(targets, 'db.internal', slow)).rejects.toMatchObject({ status: 403 });
  });

  it('dials the address it checked (no second look-up to rebind), except over TLS', async () => {
    const targets = parseConnectionTargets(['10.0.0.0/8'], { lookupTimeoutMs: 1000 })!;
    const base: EngineConfig = {
      engine: 'postgres',
      host: 'db.internal',
      port: 5432,
      database: 'x',
      user: 'u',
      password: null,
      ssl: false,
      maxConnections: 1,
      acquireTimeoutMs: 1000,
      connectTimeoutMs: 1000,
    };
    expect((await pinConnectionTarget(targets, base, lookup)).host).toBe('10.1.2.3');
    // TLS checks the certificate against the name, so the name stays; it was checked all the same.
    expect((await pinConnectionTarget(targets, { ...base, ssl: true }, lookup)).host).toBe('db.internal');
    await expect(pinConnectionTarget(targets, { ...base, host: 'split.example' }, lookup)).rejects.toMatchObject({ status: 403 });
    const sqlite = { ...base, engine: 'sqlite' as const, host: null, port: null };
    expect(await pinConnectionTarget(targets, sqlite, lookup)).toBe(sqlite);
  });
});

describe('a server confined to targets where nothing listens', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ DBQ_CONNECTION_TARGETS: '10.255.255.0/24' });
  });
  afterAll(async () => {
    await h?.close();
  });

  const places = [
    { engine: 'postgres', host: '127.0.0.1', port: 5432, database: 'test', user: 'postgres' }, // open, right protocol
    { engine: 'postgres', host: '127.0.0.1', port: 1, database: 'test', user: 'postgres' }, // closed
    { engine: 'mysql', host: '127.0.0.1', port: 6379, database: 'test', user: 'root' }, // Redis: wrong protocol
    { engine: 'mysql', host: 'localhost', port: 3306, database: 'test', user: 'root' },
    { engine: 'postgres', host: 'no-such-host.invalid', port: 5432, database: 'test', user: 'postgres' },
  ];

  it('answers every ad-hoc test and create outside the list with the same 403, before dialling', async () => {
    const answers = new Set<string>();
    for (const [i, place] of places.entries()) {
      const started = Date.now();
      const tested = await h.call('POST', '/api/connections/test', h.adminKey, place);
      expect(tested.status, JSON.stringify([place, tested.body])).toBe(403);
      const created = await h.call('POST', '/api/connections', h.adminKey, { name: `t${i}`, ...place });
      expect(created.status, JSON.stringify([place, created.body])).toBe(403);
      expect(Date.now() - started).toBeLessThan(2000);
      answers.add(JSON.stringify(tested.body)).add(JSON.stringify(created.body));
    }
    expect(answers.size).toBe(1);
    expect(JSON.parse([...answers][0])).toMatchObject({ code: 'insufficient_permissions', details: { field: 'host' } });
    expect((await h.call('GET', '/api/connections', h.adminKey)).body.data.connections).toEqual([]);
  });

  it('refuses a stored connection outside the list when it is opened, tested or changed', async () => {
    // Stored before the setting was there (or by a store shared with another deployment).
    const ws = await getWorkspace(h.svc.db, 'default');
    await createConnection(
      { db: h.svc.db, secretBox: h.svc.secretBox, sqliteDir: h.config.sqliteDir },
      ws.id,
      { name: 'old-pg', url: PG_URL },
      cliActor(),
    );
    await createConnection(
      { db: h.svc.db, secretBox: h.svc.secretBox, sqliteDir: h.config.sqliteDir },
      ws.id,
      { name: 'old-my', url: MYSQL_URL },
      cliActor(),
    );
    for (const name of ['old-pg', 'old-my']) {
      const query = await h.call('POST', '/api/query', h.adminKey, { connectionId: name, sql: 'SELECT 1' });
      expect(query.status, JSON.stringify(query.body)).toBe(403);
      expect(query.body.details).toMatchObject({ field: 'host' });
      expect((await h.call('POST', '/api/connections/test', h.readerKey, { connectionId: name })).status).toBe(403);
      expect((await h.call('PATCH', `/api/connections/${name}`, h.adminKey, { readOnly: true })).status).toBe(403);
    }
  });

  it('leaves SQLite connections alone', async () => {
    expect((await h.call('POST', '/api/connections', h.adminKey, { name: 'lite', engine: 'sqlite', database: 'x.db' })).status).toBe(201);
  });
});

describe('a server confined to the loopback address', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ DBQ_CONNECTION_TARGETS: '127.0.0.1/32' });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('reaches the listed address, and nothing next to it', async () => {
    for (const url of [PG_URL, MYSQL_URL]) {
      const tested = await h.call('POST', '/api/connections/test', h.adminKey, { url });
      expect(tested.body.data?.ok, JSON.stringify(tested.body)).toBe(true);
    }
    expect((await h.call('POST', '/api/connections', h.adminKey, { name: 'pg', url: PG_URL })).status).toBe(201);
    const query = await h.call('POST', '/api/query', h.adminKey, { connectionId: 'pg', sql: 'SELECT 1 AS one' });
    expect(query.status, JSON.stringify(query.body)).toBe(200);
    expect((await h.call('PATCH', '/api/connections/pg', h.adminKey, { host: '127.0.0.2' })).status).toBe(403);
    expect((await h.call('POST', '/api/connections/test', h.adminKey, { url: PG_URL.replace('127.0.0.1', '127.0.0.2') })).status).toBe(403);
  });
});
