// How many MCP sessions one process holds, and which give way (without a cap, one key opened
// 3,000 Streamable HTTP sessions in 10.7 s, +135 MB, each kept for the 30-minute idle timeout).
// Per process, like the sessions themselves (a session lives in the process that opened it;
// the relay only forwards messages): with N processes a key may hold N × the cap in all.
//
// - A key holds at most `perKey` sessions, a workspace at most `perWorkspace`.
// - At a cap, the least recently used session of that key (or workspace) that has nothing in
//   flight and no message for `idleUnderPressureMs` is closed to make room; if there is none,
//   the new session is refused: 429 `too_many_sessions` for the key, 503 `session_capacity`
//   for the workspace, with Retry-After saying when the first one could give way.
// - Under pressure — a key or workspace above 80% of its cap, or the heap above 80% of its
//   limit — the idle sweep closes such sessions (either transport) after `idleUnderPressureMs`
//   instead of the normal 30 minutes; with the heap that high a new session needs an idle one
//   to give way, or it is refused 503 (`details.scope: "process"`).
import v8 from 'node:v8';
import type { McpSession } from './sessions.ts';

export interface SessionCaps {
  perKey: number;
  perWorkspace: number;
  /** Idle this long, a session may be closed for a new one at a cap, and under pressure. */
  idleUnderPressureMs: number;
  /** Whether the process is short of memory (the heap near its limit). */
  heapPressure: () => boolean;
}

/** Share of a cap past which its sessions are under pressure. */
export const PRESSURE_SHARE = 0.8;
const HEAP_PRESSURE_SHARE = 0.8;
export const IDLE_UNDER_PRESSURE_MS = 60_000;
export const DEFAULT_SESSION_CAPS: SessionCaps = {
  perKey: 100,
  perWorkspace: 1_000,
  idleUnderPressureMs: IDLE_UNDER_PRESSURE_MS,
  heapPressure: heapNearLimit,
};

function heapNearLimit(): boolean {
  const { used_heap_size: used, heap_size_limit: limit } = v8.getHeapStatistics();
  return used > HEAP_PRESSURE_SHARE * limit;
}

function idleFor(session: McpSession, now: number): number {
  return session.calls.inFlight > 0 ? -1 : now - session.lastSeenAt;
}

/** The least recently used of `group` that may give way now, if any. */
export function evictable(group: Iterable<McpSession>, idleMs: number, now: number): McpSession | null {
  let victim: McpSession | null = null;
  for (const s of group) {
    if (idleFor(s, now) >= idleMs && (!victim || s.lastSeenAt < victim.lastSeenAt)) victim = s;
  }
  return victim;
}

/** Seconds until one of `group` could give way, as a Retry-After (1 at least; the whole idle
 * time when every one is busy). */
export function retryAfterSeconds(group: Iterable<McpSession>, idleMs: number, now: number): number {
  let soonest = idleMs;
  for (const s of group) {
    const idle = idleFor(s, now);
    if (idle >= 0) soonest = Math.min(soonest, idleMs - idle);
  }
  return Math.max(1, Math.ceil(soonest / 1000));
}
