// The one module-level singleton dbq allows: the logger. API keys travel in the Authorization
// header and, for /sse only, in `?api_key=`; both are redacted here, and request URLs are
// logged through redactUrl so the query parameter never reaches a log line. The same goes for
// MCP session ids (`/messages?sessionId=…`, the Mcp-Session-Id header): under the SSE transport
// an id alone carries a message, so it is a secret for as long as its stream lives.
import pino, { type Logger } from 'pino';

export type { Logger } from 'pino';

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers.cookie',
          'req.headers["x-api-key"]',
          'req.headers["mcp-session-id"]',
          'headers["mcp-session-id"]',
          'headers.authorization',
          'password',
          '*.password',
          'secret',
          '*.secret',
          'apiKey.secret',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}

const SECRET_PARAMS = /([?&](?:api_key|apikey|token|password|sessionid)=)[^&#]*/gi;

export function redactUrl(url: string): string {
  return url.replace(SECRET_PARAMS, '$1[redacted]');
}
