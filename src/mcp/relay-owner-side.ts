// The owner's side of the MCP relay (relay.ts): a message another process relayed to a session
// of this process is fed into that session's SDK transport, and the transport's answer goes
// back to the caller. Kept apart from the relay's Redis plumbing: this part knows the SDK
// transports, the relay only knows channels.
import type { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { RelayedRequest, ToCaller } from './relay-protocol.ts';
import { authInfoOf, type McpSessions } from './sessions.ts';

/** Replies travel in pieces so no single Redis message approaches the pub/sub buffer limits. */
const CHUNK_CHARS = 256 * 1024;
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length']);

export class RelayOwnerSide {
  /** Streams this process is sending back for others: request id → cancel. */
  readonly serving = new Map<string, () => void>();
  /** Relayed requests waiting on a session of this process → what ends the wait if it closes. */
  readonly waiting = new Map<string, Set<() => void>>();

  constructor(
    private readonly sessions: McpSessions,
    /** Publishes a reply on the caller's reply channel; resolves to its receiver count. */
    private readonly answer: (m: RelayedRequest, message: ToCaller) => Promise<number>,
  ) {}

  async serve(m: RelayedRequest): Promise<void> {
    const session = this.sessions.get(m.sessionId);
    // The caller checked the binding; the session may have closed since, and a binding that
    // disagrees with the session (it never should) is refused rather than trusted.
    if (
      !session ||
      session.kind !== m.kind ||
      session.workspaceSlug !== m.principal.workspace.slug ||
      session.keyId !== (m.principal.apiKey?.id ?? null)
    ) {
      await this.answer(m, { t: 'gone', id: m.id });
      return;
    }
    // A session used through other processes is not idle.
    session.lastSeenAt = Date.now();
    const authInfo = authInfoOf(m.principal);
    if (session.kind === 'sse') {
      // As SSEServerTransport.handlePostMessage: hand the message over, answer 202; the
      // JSON-RPC answer goes out on this process's stream.
      await (session.transport as SSEServerTransport).handleMessage(m.body, { authInfo, requestInfo: { headers: m.headers } });
      await this.answer(m, { t: 'head', id: m.id, status: 202, headers: {}, body: 'Accepted', done: true });
      return;
    }
    const web = webTransportOf(session.transport as StreamableHTTPServerTransport);
    const request = new Request(new URL(m.path, 'http://mcp-relay.invalid'), { method: m.method, headers: m.headers });
    // The SDK leaves a pending JSON answer unresolved when its session closes meanwhile
    // (DELETE, idle sweep, shutdown); the caller must not wait for it until its timeout. Only
    // POSTs wait on answers (a DELETE closes the session itself; a GET returns its stream).
    let giveUp!: () => void;
    const closed = new Promise<null>((resolve) => (giveUp = () => resolve(null)));
    const waiters = this.waiting.get(m.sessionId) ?? new Set<() => void>();
    if (m.method === 'POST') this.waiting.set(m.sessionId, waiters.add(giveUp));
    let response: Response | null;
    try {
      response = await Promise.race([
        web.handleRequest(request, { authInfo, parsedBody: m.method === 'POST' ? m.body : undefined }),
        closed,
      ]);
    } finally {
      waiters.delete(giveUp);
      if (waiters.size === 0 && this.waiting.get(m.sessionId) === waiters) this.waiting.delete(m.sessionId);
    }
    if (!response) {
      await this.answer(m, { t: 'gone', id: m.id });
      return;
    }
    await this.sendResponse(m, response);
  }

  private async sendResponse(m: RelayedRequest, response: Response): Promise<void> {
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      if (!HOP_BY_HOP.has(name)) headers[name] = value;
    });
    const head = { t: 'head' as const, id: m.id, status: response.status, headers };
    if (!response.body) {
      await this.answer(m, { ...head, done: true });
      return;
    }
    if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      const text = await response.text();
      if (text.length <= CHUNK_CHARS) {
        await this.answer(m, { ...head, body: text, done: true });
        return;
      }
      await this.answer(m, { ...head, done: false });
      for (let i = 0; i < text.length; i += CHUNK_CHARS)
        await this.answer(m, { t: 'data', id: m.id, chunk: text.slice(i, i + CHUNK_CHARS) });
      await this.answer(m, { t: 'end', id: m.id });
      return;
    }
    // An open stream (the session's GET stream): forward events until it ends, the caller
    // leaves (abort, or nobody subscribed on its reply channel), or this process closes.
    const reader = response.body.getReader();
    this.serving.set(m.id, () => void reader.cancel().catch(() => {}));
    const decoder = new TextDecoder();
    try {
      if ((await this.answer(m, { ...head, done: false })) === 0) return;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const chunk = decoder.decode(value, { stream: true });
        if (chunk && (await this.answer(m, { t: 'data', id: m.id, chunk })) === 0) break;
      }
    } finally {
      this.serving.delete(m.id);
      await reader.cancel().catch(() => {});
      await this.answer(m, { t: 'end', id: m.id }).catch(() => 0);
    }
  }
}

/** The web-standard transport inside the SDK's Node wrapper: it takes a Request and returns
 * the Response, which is what a relayed request needs (no Node socket on this side). */
function webTransportOf(transport: StreamableHTTPServerTransport): WebStandardStreamableHTTPServerTransport {
  const inner = (transport as unknown as { _webStandardTransport?: WebStandardStreamableHTTPServerTransport })._webStandardTransport;
  if (!inner) throw new Error('MCP SDK: StreamableHTTPServerTransport no longer wraps a web-standard transport');
  return inner;
}
