// Which of the four JSON-RPC kinds a message is, for the hooks dbq sets on a session's
// transport (session-calls.ts, release-json-streams.ts). Those hooks only see messages the SDK
// has already validated — incoming ones parsed by its transport with JSONRPCMessageSchema (a
// union of four strict shapes, so the kind follows from which keys are there), outgoing ones
// built by its Protocol — so they need the kind, not a second validation. The SDK's guards
// (isJSONRPCRequest and the like) are full zod parses: a result response is copied whole, and a
// guard that does not match builds a zod error. With four of them per tool call this was a
// measurable part of what MCP costs over REST (docs/performance.md, "MCP per call").
import type {
  JSONRPCErrorResponse,
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  JSONRPCResultResponse,
} from '@modelcontextprotocol/sdk/types.js';

type Fields = Partial<Record<'jsonrpc' | 'id' | 'method' | 'result' | 'error', unknown>>;

const isId = (id: unknown): boolean => typeof id === 'string' || Number.isInteger(id);
const isObject = (value: unknown): boolean => typeof value === 'object' && value !== null && !Array.isArray(value);

export function isRequest(message: JSONRPCMessage): message is JSONRPCRequest {
  const m = message as Fields;
  return m.jsonrpc === '2.0' && typeof m.method === 'string' && isId(m.id);
}

export function isNotification(message: JSONRPCMessage): message is JSONRPCNotification {
  const m = message as Fields;
  return m.jsonrpc === '2.0' && typeof m.method === 'string' && !('id' in m);
}

export function isResultResponse(message: JSONRPCMessage): message is JSONRPCResultResponse {
  const m = message as Fields;
  return m.jsonrpc === '2.0' && isObject(m.result) && isId(m.id) && !('method' in m) && !('error' in m);
}

export function isErrorResponse(message: JSONRPCMessage): message is JSONRPCErrorResponse {
  const m = message as Fields;
  return m.jsonrpc === '2.0' && isObject(m.error) && !('method' in m) && !('result' in m);
}
