// The shutdown both pooled adapters (postgres, mysql) share: refuse new work, cancel what is
// running, wait (bounded) for the cancelled statements to end — ending a pool under them
// would close connections still in use — then end the pool, also bounded.
import { ConnectionFailedError } from '../errors.ts';
import type { Slots } from './slots.ts';
import { settleWithin, type StatementWatch } from './statement-watch.ts';

export interface ClosableSession {
  watch: StatementWatch;
  ended: Promise<void>;
}

export async function closePooledEngine(
  slots: Slots,
  running: Iterable<ClosableSession>,
  endPool: (() => Promise<void>) | null,
  bounds: { sessionsMs: number; poolMs: number },
): Promise<void> {
  slots.close(new ConnectionFailedError('the connection was closed'));
  const sessions = [...running];
  for (const session of sessions) session.watch.stop('canceled');
  await settleWithin(Promise.all(sessions.map((s) => s.ended)), bounds.sessionsMs);
  if (endPool) await settleWithin(endPool(), bounds.poolMs);
}
