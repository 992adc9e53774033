// Open MCP sessions of one server process, and the rule every message to one of them passes:
// the session id is only a handle, never a credential on its own. A message is accepted when
// it arrives at the workspace address the session was opened at, and its key — the one it
// presents, or for SSE clients that cannot add headers to their POSTs the one the stream was
// opened with — still authenticates now (revoked, user disabled → 401, session closed) and is
// the key the session was opened with (another key, even of the same user → 404). Unknown,
// closed and not-yours sessions all answer the same 404, so an id reveals nothing. For the SSE
// clients whose POSTs carry no key, holding the id is holding the session: ids stay out of
// logs and metrics (sessionLogTag) and are a secret for as long as the stream lives.
//
// With a relay (relay.ts, when DBQ_REDIS_URL is set) a session another process holds is found
// through Redis and passes the very same checks here; the route then relays the message to it.
import { createHash } from 'node:crypto';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { InvalidApiKeyError, NotFoundError, SessionCapacityError, ShuttingDownError, TooManySessionsError } from '../errors.ts';
import { addressedWorkspace, authenticateRequest } from '../http-kit/auth.ts';
import type { Services } from '../services.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { hashKey } from '../workspaces/key-format.ts';
import type { McpRelay } from './relay.ts';
import type { SessionCalls } from './session-calls.ts';
import { DEFAULT_SESSION_CAPS, evictable, PRESSURE_SHARE, retryAfterSeconds, type SessionCaps } from './session-caps.ts';

export type McpTransportKind = 'sse' | 'streamable';

/** What a message to a session is checked against, wherever the session lives. */
export interface SessionBinding {
  id: string;
  kind: McpTransportKind;
  workspaceSlug: string;
  keyId: string | null;
  keyHash: string;
  /** SSE only: the key the stream was opened with, re-checked on each key-less POST. */
  secret: string | null;
}

/** A session of this process. */
export interface McpSession extends SessionBinding {
  transport: Transport;
  openedAt: number;
  lastSeenAt: number;
  /** Requests received and not answered yet (session-calls.ts). */
  calls: SessionCalls;
}

/** A session another process holds (found through the relay); `owner` is that process. */
export interface RemoteSession extends SessionBinding {
  owner: string;
}

export function isRemote(session: McpSession | RemoteSession): session is RemoteSession {
  return 'owner' in session;
}

/**
 * How a log line names a session. The id itself is a bearer secret for the stream's life (an
 * SSE stream opened with `?api_key=` takes key-less POSTs to `/messages?sessionId=…`), so it
 * never reaches a log: a short one-way tag still lets lines of one session be followed.
 */
export function sessionLogTag(id: string): string {
  return createHash('sha256').update(id).digest('hex').slice(0, 12);
}

export function sessionNotFound(): NotFoundError {
  return new NotFoundError('Session not found');
}

/** Who a new session is for: what its caps count. */
export type SessionOwner = Pick<SessionBinding, 'workspaceSlug' | 'keyId' | 'keyHash'>;

/** A place held for a session being opened (McpSessions.admit), so that concurrent opens are
 * counted before any of them is registered and cannot overshoot a cap together. */
export interface SessionTicket {
  /** Gives the place back when no session was opened after all; idempotent. */
  release(): void;
}

const keyScope = (o: SessionOwner) => `k:${o.keyId ?? `h:${o.keyHash}`}`;
const workspaceScope = (o: SessionOwner) => `w:${o.workspaceSlug}`;

export class McpSessions {
  private readonly sessions = new Map<string, McpSession>();
  /** Open sessions by key and by workspace (keyScope, workspaceScope): what the caps count. */
  private readonly groups = new Map<string, Set<McpSession>>();
  /** Places held by admit() and not yet taken by add(), by the same scopes. */
  private readonly held = new Map<string, number>();
  /** Off once shutdown began: admit() refuses, and sessions close once nothing is in flight. */
  private accepting = true;
  /** Set when every session was closed for good (app close, shutdown's cut). */
  private closedForGood = false;
  /** Set by the plugin when DBQ_REDIS_URL is: sessions are then registered in Redis and
   * messages for other processes' sessions are relayed. */
  relay: McpRelay | null = null;
  /** Told about each session closed to make room or under pressure (the plugin logs it). */
  onEvict: ((session: McpSession, reason: 'make_room' | 'pressure') => void) | null = null;

  constructor(readonly caps: SessionCaps = DEFAULT_SESSION_CAPS) {}

  get size(): number {
    return this.sessions.size;
  }

  /** Open sessions of this key (its id, or its hash for a key without one). */
  countOfKey(owner: SessionOwner): number {
    return this.groups.get(keyScope(owner))?.size ?? 0;
  }

  countOfWorkspace(slug: string): number {
    return this.groups.get(`w:${slug}`)?.size ?? 0;
  }

  /**
   * Makes room for one more session of `owner` and holds it until add() or release (see
   * session-caps.ts): at a cap the least recently used idle session gives way, else this throws
   * TooManySessionsError (the key's cap) or SessionCapacityError (the workspace's, or the heap
   * near its limit), both with their Retry-After; ShuttingDownError once shutdown began.
   */
  admit(owner: SessionOwner, now = Date.now()): SessionTicket {
    if (!this.accepting) throw new ShuttingDownError();
    const { perKey, perWorkspace, idleUnderPressureMs: idleMs } = this.caps;
    const scopes = [keyScope(owner), workspaceScope(owner)];
    const [byKey, byWorkspace] = scopes.map((scope) => this.groups.get(scope) ?? new Set<McpSession>());
    if (byKey.size + (this.held.get(scopes[0]) ?? 0) >= perKey) {
      this.makeRoom(byKey, now, () => new TooManySessionsError({ scope: 'key', limit: perKey }, retryAfterSeconds(byKey, idleMs, now)));
    }
    if (byWorkspace.size + (this.held.get(scopes[1]) ?? 0) >= perWorkspace) {
      this.makeRoom(
        byWorkspace,
        now,
        () => new SessionCapacityError({ scope: 'workspace', limit: perWorkspace }, retryAfterSeconds(byWorkspace, idleMs, now)),
      );
    }
    if (this.caps.heapPressure()) {
      const all = this.sessions.values();
      this.makeRoom(all, now, () => new SessionCapacityError({ scope: 'process' }, retryAfterSeconds(this.sessions.values(), idleMs, now)));
    }
    for (const scope of scopes) this.held.set(scope, (this.held.get(scope) ?? 0) + 1);
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        for (const scope of scopes) {
          const n = (this.held.get(scope) ?? 1) - 1;
          if (n > 0) this.held.set(scope, n);
          else this.held.delete(scope);
        }
      },
    };
  }

  private makeRoom(group: Iterable<McpSession>, now: number, refuse: () => Error): void {
    const victim = evictable(group, this.caps.idleUnderPressureMs, now);
    if (!victim) throw refuse();
    this.onEvict?.(victim, 'make_room');
    // close() takes it out of the counts at once; the transport closes behind.
    void this.close(victim.id);
  }

  /** Resolves once the session is registered where other processes look (at once without a
   * relay; never rejects), so the client's next message finds it whichever process it hits.
   * During shutdown the session is closed as soon as it has nothing in flight. */
  add(session: McpSession, ticket?: SessionTicket): Promise<void> {
    ticket?.release();
    this.sessions.set(session.id, session);
    for (const scope of [keyScope(session), workspaceScope(session)]) {
      const group = this.groups.get(scope) ?? new Set<McpSession>();
      this.groups.set(scope, group.add(session));
    }
    if (this.closedForGood) {
      void this.close(session.id);
      return Promise.resolve();
    }
    if (!this.accepting) this.closeOnceIdle(session);
    return this.relay ? this.relay.register(session).catch(() => {}) : Promise.resolve();
  }

  get(id: string): McpSession | undefined {
    return this.sessions.get(id);
  }

  /** Called from the transport's onclose; closing is idempotent. */
  remove(id: string): void {
    const session = this.sessions.get(id);
    if (!session) return;
    this.sessions.delete(id);
    for (const scope of [keyScope(session), workspaceScope(session)]) {
      const group = this.groups.get(scope);
      group?.delete(session);
      if (group?.size === 0) this.groups.delete(scope);
    }
    this.relay?.unregister(id);
  }

  async close(id: string): Promise<void> {
    const session = this.sessions.get(id);
    this.remove(id);
    await session?.transport.close().catch(() => {});
  }

  /** Shutdown began: no new sessions; each open one closes once its calls are answered (the
   * grace period bounds that: closeAll() at the cut). */
  stopAccepting(): void {
    this.accepting = false;
    for (const session of [...this.sessions.values()]) this.closeOnceIdle(session);
  }

  private closeOnceIdle(session: McpSession): void {
    if (session.calls.inFlight === 0) void this.close(session.id);
    else session.calls.onIdle = () => void this.close(session.id);
  }

  async closeAll(): Promise<void> {
    this.accepting = false;
    this.closedForGood = true;
    const all = [...this.sessions.values()];
    for (const s of all) this.remove(s.id);
    await Promise.allSettled(all.map((s) => s.transport.close()));
  }

  /** The relay, for a route holding a RemoteSession (which only a relay hands out). */
  requireRelay(): McpRelay {
    if (!this.relay) throw new Error('a remote MCP session without a relay');
    return this.relay;
  }

  /** Streamable HTTP sessions end with a DELETE the client may never send, so they expire
   * after `maxIdleMs`; SSE sessions end with their stream. Under pressure (session-caps.ts)
   * sessions of either transport go after `caps.idleUnderPressureMs`. A session with a call in
   * flight is never idle. */
  async closeIdle(maxIdleMs: number, now = Date.now()): Promise<number> {
    const heap = this.caps.heapPressure();
    const idle: McpSession[] = [];
    for (const s of this.sessions.values()) {
      if (s.calls.inFlight > 0) continue;
      const quiet = now - s.lastSeenAt;
      if (s.kind === 'streamable' && quiet > maxIdleMs) idle.push(s);
      else if (quiet >= this.caps.idleUnderPressureMs && (heap || this.crowded(s))) {
        this.onEvict?.(s, 'pressure');
        idle.push(s);
      }
    }
    await Promise.allSettled(idle.map((s) => this.close(s.id)));
    return idle.length;
  }

  /** Whether the session's key or workspace is above its pressure share of the cap. */
  private crowded(s: McpSession): boolean {
    const byKey = this.groups.get(keyScope(s))?.size ?? 0;
    const byWorkspace = this.groups.get(workspaceScope(s))?.size ?? 0;
    return byKey > PRESSURE_SHARE * this.caps.perKey || byWorkspace > PRESSURE_SHARE * this.caps.perWorkspace;
  }
}

export interface SessionMessage {
  session: McpSession | RemoteSession;
  principal: Principal;
}

/** Authorises one message (a POST, or a GET/DELETE on /mcp) to an open session. */
export async function authorizeSessionMessage(
  svc: Services,
  sessions: McpSessions,
  request: FastifyRequest,
  kind: McpTransportKind,
  sessionId: string | undefined,
  presentedKey: string | null,
): Promise<SessionMessage> {
  let found: McpSession | RemoteSession | null | undefined = sessionId ? sessions.get(sessionId) : undefined;
  if (!found && sessionId && sessions.relay) found = await sessions.relay.lookup(sessionId);
  const session =
    found && found.kind === kind && found.workspaceSlug === addressedWorkspace(request, svc.config.baseDomain) ? found : undefined;
  const key = presentedKey ?? session?.secret ?? null;
  let principal: Principal;
  try {
    // A presented key is checked before the session, so a bad key is a 401 whatever the id.
    if (!key && !session) throw sessionNotFound();
    principal = await authenticateRequest(svc, request, key);
  } catch (err) {
    // The session's own key stopped authenticating (revoked, user disabled or deleted): the
    // session is dead. A stranger's bad key must not close someone else's session.
    if (session && err instanceof InvalidApiKeyError && key && hashKey(key) === session.keyHash) {
      if (isRemote(session)) sessions.requireRelay().closeRemote(session);
      else await sessions.close(session.id);
    }
    throw err;
  }
  if (!session || (principal.apiKey?.id ?? null) !== session.keyId) throw sessionNotFound();
  // A relayed message refreshes the session on its owner.
  if (!isRemote(session)) session.lastSeenAt = Date.now();
  return { session, principal };
}

/** Carries the principal of this message to the tool handler (SDK `extra.authInfo`). The
 * token field holds the key id, never the secret. */
export function authInfoOf(principal: Principal): { token: string; clientId: string; scopes: string[]; extra: { principal: Principal } } {
  return {
    token: principal.apiKey?.id ?? '',
    clientId: principal.apiKey?.id ?? principal.user.id,
    scopes: [principal.user.role],
    extra: { principal },
  };
}

export function principalFromExtra(extra: { authInfo?: { extra?: Record<string, unknown> } }): Principal {
  const principal = extra.authInfo?.extra?.principal as Principal | undefined;
  // Every route authenticates before handing a message to a transport; a message without a
  // principal would be a wiring bug, and it must fail closed.
  if (!principal) throw new InvalidApiKeyError();
  return principal;
}

/** McpSessions.admit for a route: a refusal carries its Retry-After on the envelope it becomes
 * (set here: the error handler sends headers already on the reply). */
export function admitSession(sessions: McpSessions, owner: SessionOwner, reply: FastifyReply): SessionTicket {
  try {
    return sessions.admit(owner);
  } catch (err) {
    if (err instanceof TooManySessionsError || err instanceof SessionCapacityError) {
      void reply.header('retry-after', String(err.retryAfterSeconds));
    }
    throw err;
  }
}
