// `dbq mcp --url <workspace_url>`: a stdio MCP server for clients that only launch local
// processes (Claude Desktop and the like), relaying every message to dbq's Streamable HTTP
// endpoint with the key in the Authorization header. Both sides are the SDK's own transports,
// so framing, sessions (`mcp-session-id`), the server's SSE stream and its reconnection are the
// SDK's, not ours.
// stdout is the protocol channel: nothing but relayed messages may be written there.
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { type JSONRPCMessage, isJSONRPCRequest, isJSONRPCResultResponse, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { InvalidRequestError } from '../errors.ts';

export interface McpBridgeOptions {
  /** The workspace address (`http://host:8080`, `…/w/<slug>`), or its `/mcp` endpoint. */
  url: string;
  apiKey: string | undefined;
  stdin?: NodeJS.ReadableStream;
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
}

/** `{workspace_url}/mcp`; a URL already ending in /mcp is kept, as users paste either. */
export function mcpEndpoint(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidRequestError(
      `--url is not a URL: ${url} (expected a workspace address such as http://localhost:8080 or https://acme.example.com)`,
    );
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new InvalidRequestError(`--url must be an http(s) address, not ${parsed.protocol}`);
  }
  const base = parsed.pathname.replace(/\/+$/, '');
  parsed.pathname = base.endsWith('/mcp') ? base : `${base}/mcp`;
  return parsed;
}

/** fetch reports a refused or unresolvable host as "fetch failed" with the reason in `cause`. */
function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? err.cause.message : undefined;
  return cause && !err.message.includes(cause) ? `${err.message} (${cause})` : err.message;
}

/** What the client is told when a request could not be relayed. An HTTP answer means the
 * server was reached: a 401 is the key refused, not an unreachable address. */
export function relayFailure(endpoint: URL, err: unknown): string {
  const status =
    err instanceof Error && typeof (err as { code?: unknown }).code === 'number' ? (err as unknown as { code: number }).code : null;
  if (status === 401) {
    return `dbq mcp reached ${endpoint.href}, but the server refused the API key in DBQ_API_KEY (401 Invalid or missing API key): check that it is a current key of this workspace (revoked or expired keys are refused)`;
  }
  if (status !== null && status >= 400)
    return `dbq mcp reached ${endpoint.href}, but the server answered HTTP ${status}: ${describeError(err)}`;
  return `dbq mcp could not reach ${endpoint.href}: ${describeError(err)}`;
}

/** Runs until either side closes; resolves once both are closed. */
export async function runMcpBridge(opts: McpBridgeOptions): Promise<void> {
  const stderr = opts.stderr ?? process.stderr;
  // The key is read from the environment only: a flag would show in `ps` to every local user.
  if (!opts.apiKey) {
    throw new InvalidRequestError(
      'DBQ_API_KEY is not set: dbq mcp reads the API key from the environment only (set "env": {"DBQ_API_KEY": "dbq_…"} in the client configuration).',
    );
  }
  const endpoint = mcpEndpoint(opts.url);
  const stdin = opts.stdin ?? process.stdin;
  const local = new StdioServerTransport(stdin as any, (opts.stdout ?? process.stdout) as any);
  const remote = new StreamableHTTPClientTransport(endpoint, { requestInit: { headers: { authorization: `Bearer ${opts.apiKey}` } } });
  const logError = (side: string, err: unknown) => stderr.write(`dbq mcp: ${side}: ${describeError(err)}\n`);

  // After initialize the SDK's Client tells its transport the negotiated version, which then
  // rides every request as `mcp-protocol-version`; a relay has no Client, so it reads the
  // version off the initialize result itself.
  const initializeIds = new Set<RequestId>();

  let closing = false;
  let done!: () => void;
  const closed = new Promise<void>((resolve) => (done = resolve));
  const closeBoth = async () => {
    if (closing) return;
    closing = true;
    // DELETE frees the session on the server now rather than when it idles out.
    await remote.terminateSession().catch(() => {});
    await Promise.allSettled([remote.close(), local.close()]);
    stdin.removeListener('end', onEnd);
    done();
  };
  const onEnd = () => void closeBoth();

  local.onmessage = (message: JSONRPCMessage) => {
    if (isJSONRPCRequest(message) && message.method === 'initialize') initializeIds.add(message.id);
    remote.send(message).catch((err: unknown) => {
      logError('sending to the server failed', err);
      // A request without an answer would leave the client waiting forever.
      if (isJSONRPCRequest(message)) {
        void local.send({ jsonrpc: '2.0', id: message.id, error: { code: -32603, message: relayFailure(endpoint, err) } }).catch(() => {});
      }
    });
  };
  remote.onmessage = (message: JSONRPCMessage) => {
    if (isJSONRPCResultResponse(message) && initializeIds.delete(message.id)) {
      const version = (message.result as { protocolVersion?: unknown }).protocolVersion;
      if (typeof version === 'string') remote.setProtocolVersion(version);
    }
    local.send(message).catch((err: unknown) => logError('writing to the client failed', err));
  };
  local.onerror = (err) => logError('client side', err);
  remote.onerror = (err) => logError('server side', err);
  local.onclose = () => void closeBoth();
  remote.onclose = () => void closeBoth();
  // StdioServerTransport does not watch for the end of stdin; the client closing it is how
  // a stdio server is told to stop.
  stdin.on('end', onEnd);

  await remote.start();
  await local.start();
  await closed;
}
