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
// sessions it opened, as before, and unknown ids are 404. A Redis that hangs instead of dying
// counts as unreachable from its first timed-out command until it answers a probe
// again (src/limits/redis-breaker.ts): look-ups, registrations and relayed messages then skip it
// at once instead of each waiting out the 2 s command timeout.
//
// Redis settings, names and messages: relay-protocol.ts; the two connections, their breaker and
// sealing: relay-link.ts; one relayed message as its caller waits for it: relay-call.ts; the
// delivery into the owner's session: relay-owner-side.ts.
import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SecretBox } from '../secrets/secret-box.ts';
import { InternalError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { RelayCall, RelayTimeout } from './relay-call.ts';
import { RelayLink } from './relay-link.ts';
import { RelayOwnerSide } from './relay-owner-side.ts';
import {
  FORWARDED_HEADERS,
  procChannel,
  REPLAY_WINDOW_MS,
  replyChannel,
  sessionKey,
  type Binding,
  type Head,
  type RelayedRequest,
  type ToCaller,
  type ToOwner,
} from './relay-protocol.ts';
import { sessionLogTag, sessionNotFound, type McpSession, type McpSessions, type RemoteSession } from './sessions.ts';

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

const RELAY_DEFAULTS = { bindingTtlMs: 60_000, probeMs: 2_000 };

export class McpRelay {
  readonly processId = randomUUID();
  private readonly link: RelayLink;
  private readonly opts: Required<RelayOptions>;
  private readonly log: Logger;
  /** Sessions of this process: id → sealed binding, rewritten by the refresher. */
  private readonly bindings = new Map<string, string>();
  /** Messages this process relayed and waits on. */
  private readonly calls = new Map<string, RelayCall>();
  /** The owner's side: relayed messages fed into the sessions of this process. */
  private readonly owner: RelayOwnerSide;
  /** Request ids served recently (replay guard) → when they were sent. */
  private readonly seen = new Map<string, number>();
  private refresher: NodeJS.Timeout | null = null;
  private prober: NodeJS.Timeout | null = null;
  private closed = false;
  private started = false;

  constructor(opts: RelayOptions) {
    this.opts = { ...RELAY_DEFAULTS, ...opts };
    this.log = opts.logger.child({ component: 'mcp-relay' });
    this.owner = new RelayOwnerSide(opts.sessions, (m, message) => this.answer(m, message));
    this.link = new RelayLink({
      redisUrl: opts.redisUrl,
      secretBox: opts.secretBox,
      log: this.log,
      channels: [procChannel(opts.keyPrefix, this.processId), replyChannel(opts.keyPrefix, this.processId)],
      onMessage: (channel, raw) => this.receive(channel, raw),
      // Answers published while this process was not subscribed are lost: fail what waits.
      onSubscriberClosed: () => {
        for (const call of this.calls.values()) call.lost();
      },
      onRecovered: () => this.refresh(),
    });
  }

  /** Connects in the background; `dbq serve` calls it at start so the first session is quick. */
  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    this.link.connect();
    const every = Math.max(1000, Math.floor(this.opts.bindingTtlMs / 3));
    this.refresher = setInterval(() => this.refresh(), every);
    this.refresher.unref();
  }

  /** Registers a session of this process. Resolves once Redis has it (or could not take it):
   * the routes wait, so a client's next message, sent anywhere, finds the binding. */
  async register(session: McpSession): Promise<void> {
    const key = sessionKey(this.opts.keyPrefix, session.id);
    const binding: Binding = {
      owner: this.processId,
      kind: session.kind,
      workspaceSlug: session.workspaceSlug,
      keyId: session.keyId,
      keyHash: session.keyHash,
      secret: session.secret,
    };
    const sealed = this.link.seal(binding, key);
    this.bindings.set(session.id, sealed);
    if (!(await this.live())) return;
    await this.link.track(this.link.cmd.set(key, sealed, 'PX', this.opts.bindingTtlMs));
  }

  /** Forgets a session of this process (idempotent). */
  unregister(id: string): void {
    // A relayed request the closing session will now never answer is answered `gone`.
    for (const giveUp of this.owner.waiting.get(id) ?? []) giveUp();
    this.owner.waiting.delete(id);
    if (!this.bindings.delete(id)) return;
    if (this.link.ready) void this.link.track(this.link.cmd.del(sessionKey(this.opts.keyPrefix, id)));
  }

  /** The binding of a session another process holds, or null (unknown, expired, ours, or
   * Redis unreachable — all the same 404 to the caller). */
  async lookup(id: string): Promise<RemoteSession | null> {
    if (this.bindings.has(id) || !(await this.live())) return null;
    const key = sessionKey(this.opts.keyPrefix, id);
    let sealed: string | null;
    try {
      sealed = await this.link.breaker.watch(this.link.cmd.get(key));
    } catch {
      return null;
    }
    if (!sealed) return null;
    const binding = this.link.open<Binding>(sealed, key);
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
    void this.link
      .publish(procChannel(this.opts.keyPrefix, session.owner), {
        t: 'close',
        sessionId: session.id,
        keyHash: session.keyHash,
        from: this.processId,
        at: Date.now(),
      })
      .catch(() => 0);
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
      // Found a moment ago, but Redis stopped answering since: as if the owner were gone.
      if (this.link.breaker.open) throw sessionNotFound();
      const receivers = await this.link
        .publish(procChannel(this.opts.keyPrefix, session.owner), {
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
        })
        .catch(() => 0);
      if (receivers === 0) {
        // Nobody listens on the owner's channel: it exited (or lost Redis). Its bindings would
        // linger until their TTL; drop this one now. A live owner rewrites it on its next refresh.
        if (this.link.ready) void this.link.track(this.link.cmd.del(sessionKey(this.opts.keyPrefix, session.id)));
        throw sessionNotFound();
      }
      head = await call.head;
    } catch (err) {
      this.calls.delete(id);
      if (err instanceof RelayTimeout) {
        void this.link
          .publish(procChannel(this.opts.keyPrefix, session.owner), { t: 'abort', id, from: this.processId, at: Date.now() })
          .catch(() => 0);
        request.log.error(
          { mcpSession: sessionLogTag(session.id), owner: session.owner, timeoutMs: this.opts.timeoutMs },
          'mcp relay: the owning process did not answer in time',
        );
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
      if (!call.ended)
        void this.link
          .publish(procChannel(this.opts.keyPrefix, session.owner), { t: 'abort', id, from: this.processId, at: Date.now() })
          .catch(() => 0);
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
    this.link.stop();
    if (this.refresher) clearInterval(this.refresher);
    if (this.prober) clearInterval(this.prober);
    for (const call of this.calls.values()) call.lost();
    for (const cancel of this.owner.serving.values()) cancel();
    const keys = [...this.bindings.keys()].map((id) => sessionKey(this.opts.keyPrefix, id));
    this.bindings.clear();
    if (keys.length > 0 && this.link.ready) void this.link.track(this.link.cmd.del(...keys));
    await this.link.close();
  }

  // --- the owner's side -------------------------------------------------------------------

  private receive(channel: string, raw: string): void {
    if (channel === replyChannel(this.opts.keyPrefix, this.processId)) {
      const m = this.link.open<ToCaller>(raw, channel);
      if (m) this.calls.get(m.id)?.receive(m);
      return;
    }
    if (channel !== procChannel(this.opts.keyPrefix, this.processId)) return;
    const m = this.link.open<ToOwner>(raw, channel);
    if (!m || Math.abs(Date.now() - m.at) > REPLAY_WINDOW_MS) return;
    if (m.t === 'req') {
      if (this.seen.has(m.id)) return;
      this.seen.set(m.id, m.at);
      this.owner.serve(m).catch((err: unknown) => {
        this.log.error({ err, mcpSession: sessionLogTag(m.sessionId) }, 'mcp relay: serving a relayed message failed');
        void this.answer(m, { t: 'fail', id: m.id }).catch(() => 0);
      });
    } else if (m.t === 'abort') {
      this.owner.serving.get(m.id)?.();
    } else if (m.t === 'close') {
      const session = this.opts.sessions.get(m.sessionId);
      if (session && session.keyHash === m.keyHash) void this.opts.sessions.close(m.sessionId);
    }
  }

  private answer(m: RelayedRequest, message: ToCaller): Promise<number> {
    return this.link.publish(replyChannel(this.opts.keyPrefix, m.from), message);
  }

  // --- bindings and owners ---------------------------------------------------------------

  /** Whether Redis can be used now; the first call connects (RelayLink.live). */
  private async live(): Promise<boolean> {
    this.start();
    return this.link.live();
  }

  /** Rewrites every binding of this process (TTL refresh; also restores them after Redis lost
   * its data) and forgets old replay-guard entries. */
  private refresh(): void {
    const now = Date.now();
    for (const [id, at] of this.seen) if (now - at > 2 * REPLAY_WINDOW_MS) this.seen.delete(id);
    // A hung Redis would only queue the rewrites; the probe that closes the breaker recovers,
    // and recovering rewrites them all.
    if (this.bindings.size === 0 || !this.link.ready || this.link.breaker.open) return;
    const pipeline = this.link.cmd.pipeline();
    for (const [id, sealed] of this.bindings) pipeline.set(sessionKey(this.opts.keyPrefix, id), sealed, 'PX', this.opts.bindingTtlMs);
    void this.link.track(pipeline.exec());
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
      if (this.link.breaker.open) return;
      const owners = [...new Set([...this.calls.values()].map((c) => c.owner))];
      this.link.cmd.pubsub('NUMSUB', ...owners.map((o) => procChannel(this.opts.keyPrefix, o))).then(
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
}
