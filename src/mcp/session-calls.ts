// The requests a session has received and not answered yet. Shutdown closes a session only once
// this is empty (or the grace period is over), because closing it aborts its calls and, for a
// Streamable HTTP session, leaves the POST waiting on a JSON answer the SDK never sends (and that
// POST held the server open for good). A session with a call in flight is never
// evicted to make room for another either.
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isErrorResponse, isNotification, isRequest, isResultResponse } from './message-kind.ts';

type RequestId = string | number;

export class SessionCalls {
  private readonly open = new Set<RequestId>();
  /** Called each time the last call in flight is answered. */
  onIdle: (() => void) | null = null;

  get inFlight(): number {
    return this.open.size;
  }

  /** Call once the session's server is connected (it sets the transport's onmessage). Both
   * hooks sit on the transport the SDK server talks to, so messages relayed from another
   * process (relay-owner-side.ts) are counted too. */
  watch(transport: Transport): void {
    const onmessage = transport.onmessage;
    transport.onmessage = (message, extra) => {
      if (isRequest(message)) this.open.add(message.id);
      else if (isNotification(message) && message.method === 'notifications/cancelled') {
        // A cancelled request gets no answer at all (the SDK stops its handler silently).
        const id = (message.params as { requestId?: unknown } | undefined)?.requestId;
        if (typeof id === 'string' || typeof id === 'number') queueMicrotask(() => this.settle(id));
      }
      onmessage?.(message, extra);
    };
    const send = transport.send.bind(transport);
    transport.send = async (message, options) => {
      try {
        await send(message, options);
      } finally {
        if (isResultResponse(message) || isErrorResponse(message)) {
          if (message.id !== undefined) this.settle(message.id);
        }
      }
    };
  }

  private settle(id: RequestId): void {
    if (this.open.delete(id) && this.open.size === 0) this.onIdle?.();
  }
}
