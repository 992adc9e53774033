// POST /connections/test: a stored connection (any key) or an ad-hoc config (admins only,
// since it makes the server dial an address of the caller's choosing). Always bounded in time;
// failure is a 200 with ok:false, because "the database is down" is the answer, not an error.
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { DbqError, InsufficientPermissionsError } from '../errors.ts';
import type { Services } from '../services.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { adHocConnectionSchema, connectionSettingsShape, getConnectionRow, resolveSettings, toEngineConfig } from './connections.ts';

export const testConnectionSchema = z.union([
  z.object({ connectionId: z.string().min(1).max(200) }).strict(),
  z.object({ ...connectionSettingsShape, name: z.string().max(100).optional() }).strict(),
]);
export type TestConnectionInput = z.infer<typeof testConnectionSchema>;

export type TestOutcome = { ok: true; latencyMs: number; serverVersion: string } | { ok: false; latencyMs: number; error: string };

export async function testConnection(svc: Services, principal: Principal, input: TestConnectionInput): Promise<TestOutcome> {
  const timeoutMs = svc.config.connectionTestTimeoutMs;
  let run: () => Promise<{ serverVersion: string }>;
  if ('connectionId' in input) {
    const row = await getConnectionRow(svc.db, principal.workspace.id, input.connectionId);
    const engine = svc.pools.get(row);
    run = () => engine.test(timeoutMs);
  } else {
    if (principal.user.role !== 'admin') throw new InsufficientPermissionsError({ reason: 'ad-hoc connection tests need an admin key' });
    const { name: _name, ...settings } = input;
    const fields = resolveSettings(adHocConnectionSchema.parse(settings));
    const engineConfig = toEngineConfig(fields, {
      sqliteDir: svc.config.sqliteDir,
      maxConnections: 1,
      acquireTimeoutMs: timeoutMs,
      connectTimeoutMs: timeoutMs,
    });
    run = async () => {
      const engine = svc.createEngine(engineConfig);
      try {
        return await engine.test(timeoutMs);
      } finally {
        void engine.close().catch(() => {});
      }
    };
  }
  const started = performance.now();
  const latency = () => Math.round(performance.now() - started);
  let timer: NodeJS.Timeout | undefined;
  // The adapter bounds its own connect; this outer bound also covers DNS and TLS stalls.
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const { serverVersion } = await Promise.race([run(), deadline]);
    return { ok: true, latencyMs: latency(), serverVersion };
  } catch (err) {
    return { ok: false, latencyMs: latency(), error: reasonOf(err) };
  } finally {
    clearTimeout(timer);
  }
}

function reasonOf(err: unknown): string {
  if (err instanceof DbqError) return err.message.replace(/^Could not connect to database: /, '');
  return err instanceof Error ? err.message : String(err);
}
