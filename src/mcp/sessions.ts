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
import type { FastifyRequest } from 'fastify';
import { InvalidApiKeyError, NotFoundError } from '../errors.ts';
import { addressedWorkspace, authenticateRequest } from '../http/auth.ts';
import type { Services } from '../services.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { hashKey } from '../workspaces/key-format.ts';
import type { McpRelay } from './relay.ts';

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

export class McpSessions {
  private readonly sessions = new Map<string, McpSession>();
  /** Set by the plugin when DBQ_REDIS_URL is: sessions are then registered in Redis and
   * messages for other processes' sessions are relayed. */
  relay: McpRelay | null = null;

  get size(): number {
    return this.sessions.size;
  }

  /** Resolves once the session is registered where other processes look (at once without a
   * relay; never rejects), so the client's next message finds it whichever process it hits. */
  add(session: McpSession): Promise<void> {
    this.sessions.set(session.id, session);
    return this.relay ? this.relay.register(session).catch(() => {}) : Promise.resolve();
  }

  get(id: string): McpSession | undefined {
    return this.sessions.get(id);
  }

  /** Called from the transport's onclose; closing is idempotent. */
  remove(id: string): void {
    this.sessions.delete(id);
    this.relay?.unregister(id);
  }

  async close(id: string): Promise<void> {
    const session = this.sessions.get(id);
    this.remove(id);
    await session?.transport.close().catch(() => {});
  }

  async closeAll(): Promise<void> {
    const all = [...this.sessions.values()];
    this.sessions.clear();
    for (const s of all) this.relay?.unregister(s.id);
    await Promise.allSettled(all.map((s) => s.transport.close()));
  }

  /** The relay, for a route holding a RemoteSession (which only a relay hands out). */
  requireRelay(): McpRelay {
    if (!this.relay) throw new Error('a remote MCP session without a relay');
    return this.relay;
  }

  /** Streamable HTTP sessions end with a DELETE the client may never send; SSE sessions end
   * with their stream, so only the former expire. */
  async closeIdle(maxIdleMs: number, now = Date.now()): Promise<number> {
    const idle = [...this.sessions.values()].filter((s) => s.kind === 'streamable' && now - s.lastSeenAt > maxIdleMs);
    await Promise.allSettled(idle.map((s) => this.close(s.id)));
    return idle.length;
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
  return { token: principal.apiKey?.id ?? '', clientId: principal.apiKey?.id ?? principal.user.id, scopes: [principal.user.role], extra: { principal } };
}

export function principalFromExtra(extra: { authInfo?: { extra?: Record<string, unknown> } }): Principal {
  const principal = extra.authInfo?.extra?.principal as Principal | undefined;
  // Every route authenticates before handing a message to a transport; a message without a
  // principal would be a wiring bug, and it must fail closed.
  if (!principal) throw new InvalidApiKeyError();
  return principal;
}
