// Tool outcomes as MCP results. Success: the API's `data` object as structuredContent and as
// JSON text (for clients that show text only). Failure: `isError: true` with the API's error
// message first — what the REST envelope would say — then the envelope as JSON for the code
// and details (sqlState, the permission reason). No structuredContent on errors: clients
// validate it against the tool's output schema. A 500 says only "Internal server error".
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import { envelopeOf, logFailure, toDbqError } from '../http-kit/error-handler.ts';

export function toToolResult(data: object): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data as Record<string, unknown> };
}

export function toToolError(err: unknown, log: FastifyBaseLogger, context: Record<string, unknown>): CallToolResult {
  const dbqErr = toDbqError(err);
  logFailure(log, err, dbqErr, context, 'mcp tool call failed');
  return {
    isError: true,
    content: [
      { type: 'text', text: dbqErr.message },
      { type: 'text', text: JSON.stringify(envelopeOf(dbqErr)) },
    ],
  };
}
