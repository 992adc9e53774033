// "The set of curated tools of a workspace changed": MCP sessions send
// notifications/tools/list_changed when it does. Two sources, because a change can come from
// anywhere: this process's own create/edit/delete announce it at once; another process (the
// CLI, a second server) is noticed by a cheap check every second, made only while some
// session of that workspace is open and only when the store says something changed
// (store.epoch(): PRAGMA data_version on SQLite, LISTEN/NOTIFY on PostgreSQL).
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../store/schema.ts';

/** The store: its database and its change epoch. */
interface Store {
  db: Kysely<Database>;
  epoch(): string | null;
}

type Listener = () => void;

interface Watched {
  listeners: Set<Listener>;
  timer: NodeJS.Timeout | null;
  fingerprint: string | null;
  epoch: string | null;
  checking: boolean;
  /** A forced check asked for while one ran: run again after it (it may have read too early). */
  again: boolean;
}

export const TOOL_CHECK_INTERVAL_MS = 1000;

/** Count, newest row and number of deletions: any create, edit or delete moves one of them.
 * The connection grants too: who may see a tool follows who may use its connection, so a grant
 * change is a change of some sessions' tool lists (each session compares its own list). */
export async function toolSetFingerprint(db: Kysely<Database>, workspaceId: string): Promise<string> {
  const row = await db
    .selectFrom('curated_tools')
    .select([
      sql<number>`count(*)`.as('n'),
      sql<number>`count(deleted_at)`.as('d'),
      sql<string | null>`max(created_at)`.as('c'),
      sql<string | null>`max(deleted_at)`.as('x'),
    ])
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  const grants = await db
    .selectFrom('connection_grants')
    .select([sql<number>`count(*)`.as('g'), sql<string | null>`max(created_at)`.as('gc')])
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  const open = await db
    .selectFrom('connections')
    .select(sql<number>`coalesce(sum(grants_everyone), 0)`.as('e'))
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  return `${row?.n ?? 0}:${row?.d ?? 0}:${row?.c ?? ''}:${row?.x ?? ''}|${grants?.g ?? 0}:${grants?.gc ?? ''}:${open?.e ?? 0}`;
}

/** Who listens to which workspace's tool set: one per Services object (`svc.toolChanges`,
 * built by src/services.ts), so this process's announcements reach its own sessions. */
export class ToolChanges {
  private readonly workspaces = new Map<string, Watched>();

  constructor(
    private readonly store: Store,
    private readonly intervalMs = TOOL_CHECK_INTERVAL_MS,
  ) {}

  /** Calls `listener` whenever the workspace's tool set may have changed; returns the unsubscribe. */
  subscribe(workspaceId: string, listener: Listener): () => void {
    let w = this.workspaces.get(workspaceId);
    if (!w) {
      w = { listeners: new Set(), timer: null, fingerprint: null, epoch: null, checking: false, again: false };
      this.workspaces.set(workspaceId, w);
      const watched = w;
      void this.check(workspaceId, watched, true);
      w.timer = setInterval(() => void this.check(workspaceId, watched, false), this.intervalMs);
      w.timer.unref();
    }
    w.listeners.add(listener);
    return () => {
      const current = this.workspaces.get(workspaceId);
      if (!current) return;
      current.listeners.delete(listener);
      if (current.listeners.size === 0) {
        if (current.timer) clearInterval(current.timer);
        this.workspaces.delete(workspaceId);
      }
    };
  }

  /** This process changed the workspace's tools: listeners hear it now, not at the next check. */
  announce(workspaceId: string): void {
    const w = this.workspaces.get(workspaceId);
    if (!w) return;
    // The next check must not report the same change a second time.
    w.epoch = null;
    void this.check(workspaceId, w, true);
  }

  private async check(workspaceId: string, w: Watched, force: boolean): Promise<void> {
    if (w.checking) {
      if (force) w.again = true;
      return;
    }
    const epoch = this.store.epoch();
    if (!force && epoch !== null && epoch === w.epoch) return;
    w.checking = true;
    try {
      const fingerprint = await toolSetFingerprint(this.store.db, workspaceId);
      w.epoch = epoch;
      const before = w.fingerprint;
      w.fingerprint = fingerprint;
      if (before !== null && before !== fingerprint) for (const l of [...w.listeners]) l();
    } catch {
      // The store is closing or unreachable: the next tick tries again.
    } finally {
      w.checking = false;
    }
    if (w.again) {
      w.again = false;
      await this.check(workspaceId, w, true);
    }
  }

  /** Open watches (tests: nothing may outlive its sessions). */
  get size(): number {
    return this.workspaces.size;
  }
}
