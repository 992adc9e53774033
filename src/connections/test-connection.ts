// POST /connections/test: a stored connection (any key) or an ad-hoc config (admins only,
// since it makes the server dial an address of the caller's choosing). Always bounded in time;
// failure is a 200 with ok:false, because "the database is down" is the answer, not an error.
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import type { Engine, ReadAccess } from '../engines/engine.ts';
import { DbqError, InsufficientPermissionsError } from '../errors.ts';
import type { Services } from '../services.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { adHocConnectionSchema, connectionSettingsShape, resolveReader, resolveSettings, toEngineConfig } from './connections.ts';
import { checkConnectionTarget } from './connection-targets.ts';
import { storeReadAccess } from './read-access.ts';
import { workspaceSqliteDir } from '../sqlite-files/sqlite-path.ts';
import { getConnectionFor } from '../access/grants.ts';

export const testConnectionSchema = z.union([
  z.object({ connectionId: z.string().min(1).max(200) }).strict(),
  z.object({ ...connectionSettingsShape, name: z.string().max(100).optional() }).strict(),
]);
export type TestConnectionInput = z.infer<typeof testConnectionSchema>;

/** `readAccess`: the privilege audit of the credential reads use (null when the test failed). */
export type TestOutcome = ({ ok: true; latencyMs: number; serverVersion: string } | { ok: false; latencyMs: number; error: string }) & {
  readAccess: ReadAccess | null;
};

/** The server answers, then the credential reads use is audited: a reader login that fails
 * fails the test, since every read would. */
async function testAndAudit(
  engine: Engine,
  reader: Engine,
  hasReader: boolean,
  timeoutMs: number,
): Promise<{ serverVersion: string; readAccess: ReadAccess }> {
  const { serverVersion } = await engine.test(timeoutMs);
  try {
    if (!reader.readAccess) throw new Error(`the ${reader.name} engine cannot audit privileges`);
    return { serverVersion, readAccess: await reader.readAccess() };
  } catch (err) {
    throw new Error(`${hasReader ? 'reader credentials' : 'privilege audit'}: ${reasonOf(err)}`, { cause: err });
  }
}

export async function testConnection(svc: Services, principal: Principal, input: TestConnectionInput): Promise<TestOutcome> {
  const timeoutMs = svc.config.connectionTestTimeoutMs;
  let run: () => Promise<{ serverVersion: string; readAccess: ReadAccess }>;
  let store: (access: ReadAccess) => Promise<void> = async () => {};
  let host: string | null;
  if ('connectionId' in input) {
    const row = await getConnectionFor(svc, principal, input.connectionId);
    host = row.engine === 'sqlite' ? null : row.host;
    const engine = svc.pools.get(row);
    const reader = svc.pools.forRead(row);
    run = () => testAndAudit(engine, reader, Boolean(row.read_username), timeoutMs);
    store = (access) => storeReadAccess(svc.db, row, access);
  } else {
    if (principal.user.role !== 'admin') throw new InsufficientPermissionsError({ reason: 'ad-hoc connection tests need an admin key' });
    const { name: _name, ...settings } = input;
    const parsed = adHocConnectionSchema.parse(settings);
    const fields = resolveSettings(parsed);
    host = fields.engine === 'sqlite' ? null : fields.host;
    const readerCredentials = resolveReader(parsed, fields, null);
    const sqliteWorkspaceDir = workspaceSqliteDir(svc.config.sqliteDir, principal.workspace.slug);
    const options = { sqliteWorkspaceDir, maxConnections: 1, acquireTimeoutMs: timeoutMs, connectTimeoutMs: timeoutMs };
    const engineConfig = toEngineConfig(fields, options);
    const readerConfig = readerCredentials
      ? toEngineConfig({ ...fields, user: readerCredentials.user, password: readerCredentials.password }, options)
      : null;
    run = async () => {
      const engine = svc.createEngine(engineConfig);
      const reader = readerConfig ? svc.createEngine(readerConfig) : engine;
      try {
        return await testAndAudit(engine, reader, readerConfig !== null, timeoutMs);
      } finally {
        void engine.close().catch(() => {});
        if (reader !== engine) void reader.close().catch(() => {});
      }
    };
  }
  // Outside DBQ_CONNECTION_TARGETS: one 403 for every host, before anything is dialled. The
  // engine refuses too, but here it would read as ok:false, an answer that says "down".
  if (host !== null) await checkConnectionTarget(svc.connectionTargets, host);
  const started = performance.now();
  const latency = () => Math.round(performance.now() - started);
  let timer: NodeJS.Timeout | undefined;
  // The adapter bounds its own connect; this outer bound also covers DNS and TLS stalls.
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  let outcome: TestOutcome;
  try {
    const { serverVersion, readAccess } = await Promise.race([run(), deadline]);
    outcome = { ok: true, latencyMs: latency(), serverVersion, readAccess };
  } catch (err) {
    return { ok: false, latencyMs: latency(), error: reasonOf(err), readAccess: null };
  } finally {
    clearTimeout(timer);
  }
  await store(outcome.readAccess!);
  return outcome;
}

function reasonOf(err: unknown): string {
  if (err instanceof DbqError) return err.message.replace(/^Could not connect to database: /, '');
  return err instanceof Error ? err.message : String(err);
}
