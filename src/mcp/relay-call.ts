// The caller's side of the MCP relay (relay.ts): one message this process relayed to a
// session's owner, from the wait for the answer's head to the last chunk written to the client.
// Kept apart from the relay's Redis plumbing because it only turns replies into a response.
import type { ServerResponse } from 'node:http';
import { InternalError } from '../errors.ts';
import type { Head, ToCaller } from './relay-protocol.ts';
import { sessionNotFound } from './sessions.ts';

export class RelayTimeout extends Error {}

/** One relayed message, as its caller sees it: the head, then (for streams) data until the end. */
export class RelayCall {
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
