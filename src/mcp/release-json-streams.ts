// @modelcontextprotocol/sdk 1.x (1.32.2 included) never completes the life of a request in
// JSON response mode (`enableJsonResponse`, which dbq's Streamable HTTP sessions use), so its
// transport's `_streamMapping` keeps an entry per POST until the session closes
// (typescript-sdk#2559; the v1.x fix, PR #2747, is not released):
//
// - Answered: the transport resolves the POST's pending Response but skips the entry's
//   cleanup, so the entry — and through its settled promise the whole Response and body —
//   stays. One `execute_query` of 100 rows left ~16 KB (6 KB for `SELECT 1`); a long agent
//   session ran a 256 MB heap out of memory (test/mcp-session-heap.test.ts).
// - Cancelled (`notifications/cancelled`, as SDK clients send on their request timeout): the
//   SDK stops the handler and sends no response, which is right, but then nothing ever answers
//   the POST: the HTTP request hangs open and its entry, request and response (~15 KB) stay.
//   The POST is answered `202` with no body here — no JSON-RPC response, as the cancellation
//   rules ask, and SDK clients take a 202 quietly.
//
// Both are patched on the web-standard transport inside the Node one, so messages relayed from
// another process (relay.ts calls that transport directly) are covered too. An SDK without
// these private fields has reworked this path; nothing is patched then, and the heap test says
// whether the leak is gone.
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isErrorResponse, isNotification, isResultResponse } from './message-kind.ts';

/** The slice of the SDK's private state this works on. */
interface WebTransportInternals {
  send: Transport['send'];
  onmessage?: Transport['onmessage'];
  _streamMapping?: unknown;
  _requestToStreamMapping?: unknown;
}
type StreamEntry = { resolveJson?: (response: Response) => void; cleanup?: () => void };

/** Call once the session's server is connected (it sets the transport's onmessage). */
export function releaseJsonStreams(transport: StreamableHTTPServerTransport): void {
  const web = (transport as unknown as { _webStandardTransport?: WebTransportInternals })._webStandardTransport;
  const streams = web?._streamMapping;
  const requests = web?._requestToStreamMapping;
  if (!web || !(streams instanceof Map) || !(requests instanceof Map)) return;
  /** The POST's entry while it is JSON-mode and waits on nothing but `requestId`, if given. */
  const pending = (streamId: unknown, requestId?: unknown): StreamEntry | undefined => {
    const entry = streamId === undefined ? undefined : (streams.get(streamId) as StreamEntry | undefined);
    if (typeof entry?.resolveJson !== 'function' || typeof entry.cleanup !== 'function') return undefined;
    // A batch is answered once, whole: its entry goes with the last of its requests.
    for (const [id, sid] of requests) if (sid === streamId && id !== requestId) return undefined;
    return entry;
  };

  const send = web.send.bind(web);
  web.send = async (message, options) => {
    const streamId: unknown = isResultResponse(message) || isErrorResponse(message) ? requests.get(message.id) : undefined;
    try {
      await send(message, options);
    } finally {
      // An SDK that released the entry itself leaves nothing here.
      pending(streamId)?.cleanup!();
    }
  };

  const onmessage = web.onmessage;
  web.onmessage = (message, extra) => {
    onmessage?.(message, extra);
    if (!isNotification(message) || message.method !== 'notifications/cancelled') return;
    const requestId = (message.params as { requestId?: unknown } | undefined)?.requestId;
    if (requestId === undefined) return;
    // After the SDK's own handling (it aborts the handler in a microtask), so a result that
    // was already on its way is sent, and the entry gone, before this looks.
    setImmediate(() => {
      const streamId = requests.get(requestId);
      const entry = pending(streamId, requestId);
      if (!entry) return;
      requests.delete(requestId);
      entry.resolveJson!(new Response(null, { status: 202 }));
      entry.cleanup!();
    });
  };
}
