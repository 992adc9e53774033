// Open MCP sessions of one server process, and the rule every message to one of them passes:
// the session id is only a handle, never a credential on its own. A message is accepted when
// it arrives at the workspace address the session was opened at, and its key — the one it
// presents, or for SSE clients that cannot add headers to their POSTs the one the stream was
// opened with — still authenticates now (revoked, user disabled → 401, session closed) and is
// the key the session was opened with (another key, even of the same user → 404). Unknown,
// closed and not-yours sessions all answer the same 404, so an id reveals nothing.
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { FastifyRequest } from 'fastify';
import { InvalidApiKeyError, NotFoundError } from '../errors.ts';
import { addressedWorkspace, authenticateRequest } from '../http/auth.ts';
import type { Services } from '../services.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { hashKey } from '../workspaces/key-format.ts';

export type McpTransportKind = 'sse' | 'streamable';

export interface McpSession {
  id: string;
  kind: McpTransportKind;
  workspaceSlug: string;
  keyId: string | null;
  keyHash: string;
  /** SSE only: the key the stream was opened with, re-checked on each key-less POST. */
  secret: string | null;
  transport: Transport;
  openedAt: number;
  lastSeenAt: number;
}

export function sessionNotFound(): NotFoundError {
  return new NotFoundError('Session not found');
}

export class McpSessions {
  private readonly sessions = new Map<string, McpSession>();

  get size(): number {
    return this.sessions.size;
  }

  add(session: McpSession): void {
    this.sessions.set(session.id, session);
  }

  get(id: string): McpSession | undefined {
    return this.sessions.get(id);
  }

  /** Called from the transport's onclose; closing is idempotent. */
  remove(id: string): void {
    this.sessions.delete(id);
  }

  async close(id: string): Promise<void> {
    const session = this.sessions.get(id);
    this.sessions.delete(id);
    await session?.transport.close().catch(() => {});
  }

  async closeAll(): Promise<void> {
    const all = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.allSettled(all.map((s) => s.transport.close()));
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
  session: McpSession;
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
  const found = sessionId ? sessions.get(sessionId) : undefined;
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
    if (session && err instanceof InvalidApiKeyError && key && hashKey(key) === session.keyHash) await sessions.close(session.id);
    throw err;
  }
  if (!session || (principal.apiKey?.id ?? null) !== session.keyId) throw sessionNotFound();
  session.lastSeenAt = Date.now();
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
