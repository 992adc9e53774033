// MCP sessions across processes, so a load balancer needs no session affinity. With
// DBQ_REDIS_URL set, every process:
//
// - registers each MCP session it holds in Redis (`{prefix}:mcp:session:{id}` → owner process,
//   kind, workspace, key id and hash, and for SSE the key the stream was opened with), with a
//   TTL refreshed while the session lives and a DEL when it closes;
// - subscribes to its own channels `{prefix}:mcp:proc:{processId}` (messages for its sessions)
//   and `{prefix}:mcp:reply:{processId}` (answers to the messages it relayed).
//
// A process that receives a message for a session it does not hold reads the binding and
// applies exactly the local rules (sessions.ts: same transport, same workspace address, a key
// that authenticates now and is the session's key; else 404), counts the message against the
// plan, then publishes it to the owner. The owner feeds it into the session's SDK transport —
// SSE: `handleMessage`, so the answer travels on the owner's stream as for a local POST;
// Streamable HTTP: the web-standard transport's `handleRequest`, whose Response (JSON for a
// tool call; a stream for GET) is shipped back in chunks — and the receiving process writes
// that reply to its client. The owner gone (no subscriber on its channel, binding expired) is
// 404 `Session not found`, which tells MCP clients to open a new session.
//
// Everything written to Redis here is sealed with DBQ_SECRET_KEY (AES-256-GCM, the secret box
// of connection passwords; every process of a shared store has the same key), bound to the key
// or channel name it is written to. Redis access alone therefore can neither read an SSE key
// nor forge a binding or a message (which would run a tool as anybody); requests also carry
// their time and id, and one is served once and only within REPLAY_WINDOW_MS.
//
// Without Redis, or while it is unreachable, nothing is relayed: each process serves the
// sessions it opened, as before, and unknown ids are 404.
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Redis } from 'ioredis';
import type { SecretBox } from '../connections/secret-box.ts';
import { InternalError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { authInfoOf, sessionLogTag, sessionNotFound, type McpSession, type McpSessions, type McpTransportKind, type RemoteSession } from './sessions.ts';

export interface RelayOptions {
  redisUrl: string;
  keyPrefix: string;
  secretBox: SecretBox;
  logger: Logger;
  sessions: McpSessions;
  /** Longest wait for the owner's answer to one relayed message. */
  timeoutMs: number;
  /** Lifetime of a binding in Redis; rewritten every third of it while the session lives. */
  bindingTtlMs?: number;
  /** While relayed messages wait, how often the owners are checked to be still subscribed. */
  probeMs?: number;
}

/** What Redis says about a session (sealed). */
interface Binding {
  owner: string;
  kind: McpTransportKind;
  workspaceSlug: string;
  keyId: string | null;
  keyHash: string;
  secret: string | null;
}

/** To an owner: a message for one of its sessions, the caller giving up, or a dead key. */
type ToOwner =
  | {
      t: 'req';
      id: string;
      from: string;
      at: number;
      sessionId: string;
      kind: McpTransportKind;
      method: string;
      path: string;
      headers: Record<string, string>;
      body: unknown;
      principal: Principal;
    }
  | { t: 'abort'; id: string; from: string; at: number }
  | { t: 'close'; sessionId: string; keyHash: string; from: string; at: number };
type RelayedRequest = Extract<ToOwner, { t: 'req' }>;

/** Back to the caller: the response head (and the whole body when it is small), body chunks,
 * the end, or that the session is not there (`gone`) or the owner failed (`fail`). */
type ToCaller =
  | { t: 'head'; id: string; status: number; headers: Record<string, string>; body?: string; done: boolean }
  | { t: 'data'; id: string; chunk: string }
  | { t: 'end'; id: string }
  | { t: 'gone'; id: string }
  | { t: 'fail'; id: string };
type Head = Extract<ToCaller, { t: 'head' }>;

export const RELAY_DEFAULTS = { bindingTtlMs: 60_000, probeMs: 2_000 };
/** A relayed request older than this (or from a clock this far ahead) is dropped. */
const REPLAY_WINDOW_MS = 120_000;
/** Bound on the first connection to Redis (later, commands fail fast while it is down). */
const FIRST_CONNECT_WAIT_MS = 2_000;
/** Replies travel in pieces so no single Redis message approaches the pub/sub buffer limits. */
const CHUNK_CHARS = 256 * 1024;
/** Request headers the owner's transport reads; never the key (the principal travels sealed). */
const FORWARDED_HEADERS = ['accept', 'content-type', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id'];
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length']);

export class McpRelay {
  readonly processId = randomUUID();
  private readonly cmd: Redis;
  private readonly sub: Redis;
  private readonly opts: Required<RelayOptions>;
  private readonly log: Logger;
  /** Sessions of this process: id → sealed binding, rewritten by the refresher. */
  private readonly bindings = new Map<string, string>();
  /** Messages this process relayed and waits on. */
  private readonly calls = new Map<string, RelayCall>();
  /** Streams this process is sending back for others: request id → cancel. */
  private readonly serving = new Map<string, () => void>();
  /** Relayed requests waiting on a session of this process → what ends the wait if it closes. */
  private readonly waiting = new Map<string, Set<() => void>>();
  /** Request ids served recently (replay guard) → when they were sent. */
  private readonly seen = new Map<string, number>();
  private readonly writes = new Set<Promise<unknown>>();
  private refresher: NodeJS.Timeout | null = null;
  private prober: NodeJS.Timeout | null = null;
  private subscribed = false;
  private firstConnect: Promise<void> | null = null;
  private degraded = false;
  private closed = false;
  private started = false;
  private warnedSeal = false;

  constructor(opts: RelayOptions) {
    this.opts = { ...RELAY_DEFAULTS, ...opts };
    this.log = opts.logger.child({ component: 'mcp-relay' });
    this.cmd = redisClient(opts.redisUrl);
    this.sub = redisClient(opts.redisUrl);
    this.cmd.on('error', (err: Error) => this.degrade(err.message));
    this.sub.on('error', (err: Error) => this.degrade(err.message));
    this.cmd.on('ready', () => this.recover());
    this.sub.on('ready', () => {
      // ioredis subscribes again by itself after a reconnect; only the first time is ours.
      if (!this.subscribed) {
        this.sub.subscribe(this.procChannel(this.processId), this.replyChannel(this.processId)).then(
          () => {
            this.subscribed = true;
            this.recover();
          },
          (err: Error) => this.degrade(err.message),
        );
      }
    });
    // Answers published while this process was not subscribed are lost: fail what waits.
    this.sub.on('close', () => {
      for (const call of this.calls.values()) call.lost();
    });
    this.sub.on('message', (channel: string, raw: string) => this.receive(channel, raw));
  }

  /** Connects in the background; `dbq serve` calls it at start so the first session is quick. */
  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    this.cmd.connect().catch(() => {});
    this.sub.connect().catch(() => {});
    const every = Math.max(1000, Math.floor(this.opts.bindingTtlMs / 3));
    this.refresher = setInterval(() => this.refresh(), every);
    this.refresher.unref();
  }

  /** Registers a session of this process. Resolves once Redis has it (or could not take it):
   * the routes wait, so a client's next message, sent anywhere, finds the binding. */
  async register(session: McpSession): Promise<void> {
    const key = this.sessionKey(session.id);
    const binding: Binding = {
      owner: this.processId,
      kind: session.kind,
      workspaceSlug: session.workspaceSlug,
      keyId: session.keyId,
      keyHash: session.keyHash,
      secret: session.secret,
    };
    const sealed = this.opts.secretBox.seal(JSON.stringify(binding), key);
    this.bindings.set(session.id, sealed);
    if (!(await this.live())) return;
    await this.track(this.cmd.set(key, sealed, 'PX', this.opts.bindingTtlMs));
  }

  /** Forgets a session of this process (idempotent). */
  unregister(id: string): void {
    // A relayed request the closing session will now never answer is answered `gone`.
    for (const giveUp of this.waiting.get(id) ?? []) giveUp();
    this.waiting.delete(id);
    if (!this.bindings.delete(id)) return;
    if (this.cmd.status === 'ready') void this.track(this.cmd.del(this.sessionKey(id)));
  }

  /** The binding of a session another process holds, or null (unknown, expired, ours, or
   * Redis unreachable — all the same 404 to the caller). */
  async lookup(id: string): Promise<RemoteSession | null> {
    if (this.bindings.has(id) || !(await this.live())) return null;
    const key = this.sessionKey(id);
    let sealed: string | null;
    try {
      sealed = await this.cmd.get(key);
    } catch {
      return null;
    }
    if (!sealed) return null;
    const binding = this.open<Binding>(sealed, key);
    if (!binding || binding.owner === this.processId) return null;
    return {
      id,
      kind: binding.kind,
      workspaceSlug: binding.workspaceSlug,
      keyId: binding.keyId,
      keyHash: binding.keyHash,
      secret: binding.secret,
      owner: binding.owner,
    };
  }

  /** The session's own key stopped authenticating: its owner closes it. */
  closeRemote(session: RemoteSession): void {
    void this.publish(this.procChannel(session.owner), { t: 'close', sessionId: session.id, keyHash: session.keyHash, from: this.processId, at: Date.now() }).catch(() => 0);
  }

  /**
   * Relays one authorised (and counted) message to the session's owner and answers the
   * client with the owner's reply. Throws the 404 (owner or session gone) or 500 (no answer
   * in time) before anything is written, so the caller's error handler sends the envelope.
   */
  async forward(request: FastifyRequest, reply: FastifyReply, session: RemoteSession, principal: Principal): Promise<void> {
    const id = randomUUID();
    const call = new RelayCall(session.owner, this.opts.timeoutMs);
    this.calls.set(id, call);
    this.probe();
    const headers: Record<string, string> = {};
    for (const name of FORWARDED_HEADERS) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    let head: Head;
    try {
      const receivers = await this.publish(this.procChannel(session.owner), {
        t: 'req',
        id,
        from: this.processId,
        at: Date.now(),
        sessionId: session.id,
        kind: session.kind,
        method: request.method,
        path: request.url,
        headers,
        body: request.body ?? null,
        principal,
      }).catch(() => 0);
      if (receivers === 0) {
        // Nobody listens on the owner's channel: it exited (or lost Redis). Its bindings would
        // linger until their TTL; drop this one now. A live owner rewrites it on its next refresh.
        if (this.cmd.status === 'ready') void this.track(this.cmd.del(this.sessionKey(session.id)));
        throw sessionNotFound();
      }
      head = await call.head;
    } catch (err) {
      this.calls.delete(id);
      if (err instanceof RelayTimeout) {
        void this.publish(this.procChannel(session.owner), { t: 'abort', id, from: this.processId, at: Date.now() }).catch(() => 0);
        request.log.error({ mcpSession: sessionLogTag(session.id), owner: session.owner, timeoutMs: this.opts.timeoutMs }, 'mcp relay: the owning process did not answer in time');
        throw new InternalError(err);
      }
      throw err;
    }

    reply.hijack();
    const res = reply.raw;
    res.setHeader('x-request-id', request.id);
    res.writeHead(head.status, head.headers);
    if (head.done) {
      this.calls.delete(id);
      res.end(head.body);
      return;
    }
    // Headers go out now: a stream (the GET stream) may stay quiet for a while.
    if (head.body) res.write(head.body);
    else res.flushHeaders();
    res.on('close', () => {
      this.calls.delete(id);
      // The client left before the owner finished (a GET stream it closed): release the owner's side.
      if (!call.ended) void this.publish(this.procChannel(session.owner), { t: 'abort', id, from: this.processId, at: Date.now() }).catch(() => 0);
    });
    call.attach(res);
  }

  /** Ends the relayed streams this process is writing (server shutdown, before it waits for
   * open responses); their owners are told to let go. */
  endStreams(): void {
    for (const call of this.calls.values()) call.endStream();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.refresher) clearInterval(this.refresher);
    if (this.prober) clearInterval(this.prober);
    for (const call of this.calls.values()) call.lost();
    for (const cancel of this.serving.values()) cancel();
    const keys = [...this.bindings.keys()].map((id) => this.sessionKey(id));
    this.bindings.clear();
    if (keys.length > 0 && this.cmd.status === 'ready') void this.track(this.cmd.del(...keys));
    await Promise.allSettled([...this.writes]);
    for (const client of [this.cmd, this.sub]) {
      client.removeAllListeners('error');
      client.on('error', () => {});
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    }
  }

  // --- the owner's side -------------------------------------------------------------------

  private receive(channel: string, raw: string): void {
    if (channel === this.replyChannel(this.processId)) {
      const m = this.open<ToCaller>(raw, channel);
      if (m) this.calls.get(m.id)?.receive(m);
      return;
    }
    if (channel !== this.procChannel(this.processId)) return;
    const m = this.open<ToOwner>(raw, channel);
    if (!m || Math.abs(Date.now() - m.at) > REPLAY_WINDOW_MS) return;
    if (m.t === 'req') {
      if (this.seen.has(m.id)) return;
      this.seen.set(m.id, m.at);
      this.serve(m).catch((err: unknown) => {
        this.log.error({ err, mcpSession: sessionLogTag(m.sessionId) }, 'mcp relay: serving a relayed message failed');
        void this.answer(m, { t: 'fail', id: m.id }).catch(() => 0);
      });
    } else if (m.t === 'abort') {
      this.serving.get(m.id)?.();
    } else if (m.t === 'close') {
      const session = this.opts.sessions.get(m.sessionId);
      if (session && session.keyHash === m.keyHash) void this.opts.sessions.close(m.sessionId);
    }
  }

  private async serve(m: RelayedRequest): Promise<void> {
    const session = this.opts.sessions.get(m.sessionId);
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
      response = await Promise.race([web.handleRequest(request, { authInfo, parsedBody: m.method === 'POST' ? m.body : undefined }), closed]);
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
      for (let i = 0; i < text.length; i += CHUNK_CHARS) await this.answer(m, { t: 'data', id: m.id, chunk: text.slice(i, i + CHUNK_CHARS) });
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

  private answer(m: RelayedRequest, message: ToCaller): Promise<number> {
    return this.publish(this.replyChannel(m.from), message);
  }

  // --- plumbing ---------------------------------------------------------------------------

  private async publish(channel: string, message: ToOwner | ToCaller): Promise<number> {
    return this.cmd.publish(channel, this.opts.secretBox.seal(JSON.stringify(message), channel));
  }

  private open<T>(sealed: string, boundTo: string): T | null {
    try {
      return JSON.parse(this.opts.secretBox.open(sealed, boundTo)) as T;
    } catch {
      if (!this.warnedSeal) {
        this.warnedSeal = true;
        this.log.warn('mcp relay: a session binding or message in Redis could not be opened; do all processes share DBQ_SECRET_KEY?');
      }
      return null;
    }
  }

  /** Whether both connections are up and subscribed. Only the first uses wait (once, bounded)
   * for the connection being made; afterwards an outage answers at once. */
  private async live(): Promise<boolean> {
    this.start();
    const ok = () => this.cmd.status === 'ready' && this.sub.status === 'ready' && this.subscribed;
    if (!ok() && !this.closed) {
      this.firstConnect ??= (async () => {
        const deadline = Date.now() + FIRST_CONNECT_WAIT_MS;
        // Stops early when the attempt already failed (refused, unknown host).
        while (!ok() && !this.degraded && Date.now() < deadline && !this.closed) await new Promise((r) => setTimeout(r, 20));
      })();
      await this.firstConnect;
    }
    return ok();
  }

  private track<T>(p: Promise<T>): Promise<T | undefined> {
    const tracked = p.then(
      (v) => {
        this.recover();
        return v;
      },
      (err: Error) => {
        this.degrade(err.message);
        return undefined;
      },
    );
    this.writes.add(tracked);
    void tracked.finally(() => this.writes.delete(tracked));
    return tracked;
  }

  /** Rewrites every binding of this process (TTL refresh; also restores them after Redis lost
   * its data) and forgets old replay-guard entries. */
  private refresh(): void {
    const now = Date.now();
    for (const [id, at] of this.seen) if (now - at > 2 * REPLAY_WINDOW_MS) this.seen.delete(id);
    if (this.bindings.size === 0 || this.cmd.status !== 'ready') return;
    const pipeline = this.cmd.pipeline();
    for (const [id, sealed] of this.bindings) pipeline.set(this.sessionKey(id), sealed, 'PX', this.opts.bindingTtlMs);
    void this.track(pipeline.exec());
  }

  /** While relayed messages wait, checks every probeMs that their owners still listen, so a
   * process that died mid-call is a prompt 404 rather than a timeout. */
  private probe(): void {
    if (this.prober) return;
    this.prober = setInterval(() => {
      if (this.calls.size === 0) {
        clearInterval(this.prober!);
        this.prober = null;
        return;
      }
      const owners = [...new Set([...this.calls.values()].map((c) => c.owner))];
      this.cmd.pubsub('NUMSUB', ...owners.map((o) => this.procChannel(o))).then(
        (counts) => {
          const list = counts as Array<string | number>;
          owners.forEach((owner, i) => {
            if (Number(list[2 * i + 1]) > 0) return;
            for (const call of this.calls.values()) if (call.owner === owner) call.lost();
          });
        },
        () => {},
      );
    }, this.opts.probeMs);
    this.prober.unref();
  }

  private degrade(reason: string): void {
    if (this.degraded || this.closed) return;
    this.degraded = true;
    this.log.warn({ reason }, 'Redis unreachable: MCP sessions are served only by the process that opened them until it is back');
  }

  private recover(): void {
    if (!this.degraded || this.cmd.status !== 'ready' || this.sub.status !== 'ready') return;
    this.degraded = false;
    this.log.info('Redis reachable again: MCP messages are relayed between processes');
    this.refresh();
  }

  private sessionKey(id: string): string {
    return `${this.opts.keyPrefix}:mcp:session:${id}`;
  }

  private procChannel(processId: string): string {
    return `${this.opts.keyPrefix}:mcp:proc:${processId}`;
  }

  private replyChannel(processId: string): string {
    return `${this.opts.keyPrefix}:mcp:reply:${processId}`;
  }
}

class RelayTimeout extends Error {}

/** One relayed message, as its caller sees it: the head, then (for streams) data until the end. */
class RelayCall {
  readonly head: Promise<Head>;
  ended = false;
  private settleHead!: (head: Head | Error) => void;
  private headSettled = false;
  private res: ServerResponse | null = null;
  private pending: ToCaller[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(
    readonly owner: string,
    timeoutMs: number,
  ) {
    this.head = new Promise<Head>((resolve, reject) => {
      this.settleHead = (head) => {
        if (this.headSettled) return;
        this.headSettled = true;
        clearTimeout(this.timer);
        if (head instanceof Error) reject(head);
        else resolve(head);
      };
    });
    // Settled possibly while the caller still awaits the publish; it is awaited right after.
    this.head.catch(() => {});
    this.timer = setTimeout(() => this.settleHead(new RelayTimeout('relay timed out')), timeoutMs);
    this.timer.unref();
  }

  receive(m: ToCaller): void {
    if (!this.headSettled) {
      if (m.t === 'head') this.settleHead(m);
      else if (m.t === 'gone') this.settleHead(sessionNotFound());
      else if (m.t === 'fail') this.settleHead(new InternalError());
      return;
    }
    if (!this.res) {
      this.pending.push(m);
      return;
    }
    this.write(m);
  }

  /** The caller's response, once the head is written; what arrived meanwhile goes first. */
  attach(res: ServerResponse): void {
    this.res = res;
    const queued = this.pending;
    this.pending = [];
    for (const m of queued) this.write(m);
  }

  /** The owner is gone or this process stops relaying: a waiting call is a 404, a stream ends. */
  lost(): void {
    if (!this.headSettled) {
      this.settleHead(sessionNotFound());
      return;
    }
    if (this.res) this.res.end();
    else this.pending.push({ t: 'end', id: '' });
  }

  /** Ends the response if it is a stream being written; a call still waiting is left alone. */
  endStream(): void {
    this.res?.end();
  }

  private write(m: ToCaller): void {
    const res = this.res!;
    if (m.t === 'data') {
      if (!res.writableEnded) res.write(m.chunk);
    } else if (m.t === 'end' || m.t === 'gone' || m.t === 'fail') {
      this.ended = true;
      res.end();
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

function redisClient(url: string): Redis {
  return new Redis(url, {
    lazyConnect: true,
    // Fail fast while Redis is away (a relay then answers 404, local sessions are unaffected);
    // ioredis keeps reconnecting in the background.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 2_000,
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
}
