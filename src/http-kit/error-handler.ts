// The one place errors become HTTP responses. Typed DbqErrors carry their own status and code;
// Fastify's own errors (body limit, JSON syntax, unsupported content type) are translated to
// the matching dbq error first. Below 500 the message is the error's; a 500 body says only
// "Internal server error" — no stack, SQL or secret ever leaves through it. Requests that never
// become a Fastify request (Node's parser refused them) or never reach the router (a URL that
// does not decode) get the envelope too, from answerClientError and answerFrameworkError.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ZodError } from 'zod';
import {
  DbqError,
  HeadersTooLargeError,
  InternalError,
  InvalidJsonError,
  InvalidRequestError,
  MethodNotAllowedError,
  NotFoundError,
  PayloadTooLargeError,
  RateLimitedError,
  RequestTimeoutError,
  StorageFullError,
  StoreUnavailableError,
} from '../errors.ts';
import { requestAdmitted } from '../limits/http.ts';
import { zodToInvalidRequest } from '../zod-error.ts';

export function envelopeOf(err: DbqError): Record<string, unknown> {
  const body: Record<string, unknown> = { success: false, error: err.message, code: err.code };
  if (err.details && Object.keys(err.details).length > 0) body.details = err.details;
  return body;
}

/**
 * One log line per failure. Below 500 at info. A 5xx the database caused (502 a refused login,
 * 503 every connection busy, 504 a statement timeout) at warn, with the message and the
 * driver's code but no stack: it is not dbq's bug, and logging the error object also repeated
 * the driver's text (pino appends each `cause` message: `role "x" does not exist: role "x" does
 * not exist`). Only an internal error (500) is logged at error with its stack.
 */
export function logFailure(
  log: FastifyBaseLogger,
  err: unknown,
  dbqErr: DbqError,
  context: Record<string, unknown> = {},
  what = 'request failed',
): void {
  if (dbqErr.status < 500) {
    log.info({ code: dbqErr.code, status: dbqErr.status, ...context }, dbqErr.message);
  } else if (!(dbqErr instanceof InternalError)) {
    const causeCode = (dbqErr.cause as { code?: unknown } | undefined)?.code;
    log.warn(
      { code: dbqErr.code, status: dbqErr.status, ...(typeof causeCode === 'string' ? { causeCode } : {}), ...context },
      dbqErr.message,
    );
  } else {
    log.error({ err, code: dbqErr.code, ...context }, what);
  }
}

export function toDbqError(err: unknown): DbqError {
  if (err instanceof DbqError) return err;
  if (err instanceof ZodError) return zodToInvalidRequest(err);
  const fe = err as FastifyError;
  switch (fe?.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new PayloadTooLargeError();
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new InvalidJsonError();
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new InvalidRequestError('Content-Type must be application/json');
    case 'FST_ERR_NOT_FOUND':
      return new NotFoundError();
  }
  // secure-json-parse throws a SyntaxError with statusCode 400 for malformed JSON.
  if (err instanceof SyntaxError && (fe as { statusCode?: number }).statusCode === 400) return new InvalidJsonError();
  if (fe?.statusCode === 413) return new PayloadTooLargeError();
  if (fe?.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) return new InvalidRequestError(fe.message);
  // A full disk met outside the store's driver (a file written under the data dir, a store
  // statement that bypassed its wrapper) is still a full disk, not dbq's bug.
  if (fe?.code === 'ENOSPC' || fe?.code === 'SQLITE_FULL') return new StorageFullError('store', err);
  return new InternalError(err);
}

/**
 * Fastify's `clientErrorHandler`: Node's HTTP parser refused what came in on `socket` (a bare LF
 * or a control character inside a header value, an invalid header name, headers past 16 KiB, a
 * broken request line) or the headers did not arrive in time. There is no request or reply, so
 * the envelope is written on the socket, which then closes.
 */
export function answerClientError(log: FastifyBaseLogger, err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const dbqErr =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new HeadersTooLargeError()
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new RequestTimeoutError()
        : new InvalidRequestError('Invalid request: malformed HTTP request');
  const reqId = randomUUID();
  // Never `err` itself: its rawPacket is the bytes the parser saw, Authorization header included.
  log.info({ reqId, code: dbqErr.code, status: dbqErr.status, parserError: err.code }, dbqErr.message);
  const answer = () => {
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const body = JSON.stringify(envelopeOf(dbqErr));
    socket.end(
      `HTTP/1.1 ${dbqErr.status} ${STATUS_CODES[dbqErr.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${reqId}\r\nConnection: close\r\n\r\n${body}`,
    );
  };
  // A pipelined request can fail to parse while the response to the one before it is still
  // being written (Node keeps it in the socket's private `_httpMessage`): the envelope follows
  // that response instead of cutting into it or being read as its answer.
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (inFlight && !inFlight.writableFinished) inFlight.once('close', answer);
  else answer();
}

/** Fastify's `frameworkErrors`: the router could not decode the URL (`/api/%E0%A4%A`) or a
 * parameter was too long; no route, so no hook has run and the request id is set here. */
export function answerFrameworkError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const dbqErr =
    err.code === 'FST_ERR_BAD_URL'
      ? new InvalidRequestError('Invalid request: malformed URL')
      : err.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? new InvalidRequestError('Invalid request: a URL segment is too long')
        : toDbqError(err);
  logFailure(request.log, err, dbqErr);
  void reply.header('x-request-id', request.id).status(dbqErr.status).send(envelopeOf(dbqErr));
}

/** RFC 9110 §11.6.1: a 401 says how to authenticate. A failed authentication of /api or MCP
 * sets its own (src/http-kit/auth.ts: with the RFC 9728 `resource_metadata` an OAuth client
 * starts from); any other 401 says the scheme. */
const WWW_AUTHENTICATE = 'Bearer realm="dbq"';

declare module 'fastify' {
  interface FastifyInstance {
    /** Set by the web app (src/console/plugin.ts): its HTML 404 page for a path of this request. */
    notFoundPage?: (request: FastifyRequest, reply: FastifyReply) => FastifyReply;
  }
}

/** Paths that only programs call: they answer the JSON envelope whatever Accept says. */
const MACHINE_PATH = /^(?:\/w\/[^/]+)?\/(?:api|ui\/api|mcp|sse|messages|metrics|healthz|readyz|openapi\.json)(?:[/?.]|$)/;

/** Every route's URL pattern as a regular expression with its methods, so a request the router
 * did not match can be told apart: a known path with another method is 405 with `Allow`, not
 * 404. Fastify keeps no per-path method list of its own to ask. */
function routeMethodIndex(app: FastifyInstance): (url: string) => string[] {
  const routes: { pattern: RegExp; methods: Set<string> }[] = [];
  app.addHook('onRoute', (route) => {
    const source = route.url
      .split('/')
      .map((seg) => (seg === '*' ? '.*' : seg.startsWith(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('/')
      .replace(/\/$/, '');
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    routes.push({ pattern: new RegExp(`^${source}/?$`), methods: new Set(methods.map((m) => m.toUpperCase())) });
  });
  return (url) => {
    let path = url.split('?')[0];
    try {
      path = decodeURI(path);
    } catch {
      // the router matched the raw text as well
    }
    const allowed = new Set<string>();
    for (const route of routes) if (route.pattern.test(path)) for (const m of route.methods) allowed.add(m);
    if (allowed.has('GET')) allowed.add('HEAD');
    return [...allowed].sort();
  };
}

/** How much of a refused body is read and thrown away so the client can see the answer. */
const DRAIN_MIN_BYTES = 16 * 1024 * 1024;

/**
 * Fastify answers a body it refused while reading (over the limit) with `Connection: close`, and
 * Node then destroys the socket once the response is written while the client is still
 * uploading: Node's fetch saw EPIPE or ECONNRESET instead of the 413 in about 5 of 12 tries. The
 * rest of the body is read and discarded instead, up to max(2 × the body limit, 16 MiB), and the
 * connection stays usable; a client sending more than that is cut off as before.
 */
function drainRefusedBody(request: FastifyRequest, reply: FastifyReply): void {
  const raw = request.raw;
  if (raw.complete || reply.getHeader('connection') !== 'close') return;
  const bound = Math.max(2 * request.server.initialConfig.bodyLimit!, DRAIN_MIN_BYTES);
  const declared = Number(request.headers['content-length']);
  if (declared > bound) return;
  reply.removeHeader('connection');
  let drained = 0;
  raw.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > bound) raw.socket?.destroy();
  });
  raw.resume();
}

export function installErrorHandling(app: FastifyInstance): void {
  const allowedMethods = routeMethodIndex(app);
  // Every 401 says the scheme (envelopes are sent from here and from answerFrameworkError).
  app.addHook('onSend', (request, reply, payload, done) => {
    if (reply.statusCode === 401 && !reply.hasHeader('www-authenticate')) {
      void reply.header('www-authenticate', request.authChallenge ?? WWW_AUTHENTICATE);
    }
    done(null, payload);
  });
  app.setErrorHandler(async (err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    // The plan count starts at authentication and is awaited late (src/limits/http.ts); a
    // request it refused answers 429 whatever else was wrong with it (a body that does not
    // parse or is too large fails before that wait).
    if (!(err instanceof RateLimitedError)) {
      err = await requestAdmitted(request).then(
        () => err,
        (limitErr: unknown) => (limitErr instanceof RateLimitedError ? limitErr : err),
      );
    }
    const dbqErr = toDbqError(err);
    logFailure(request.log, err, dbqErr);
    drainRefusedBody(request, reply);
    // The store comes back by itself (a probe finds it: src/store/pg-store-pool.ts); clients
    // and load balancers retry instead of giving up.
    if (dbqErr instanceof StoreUnavailableError) void reply.header('retry-after', String(StoreUnavailableError.RETRY_AFTER_SECONDS));
    return reply.status(dbqErr.status).send(envelopeOf(dbqErr));
  });
  app.setNotFoundHandler((request, reply) => {
    const allow = allowedMethods(request.url);
    if (allow.length > 0 && !allow.includes(request.method)) {
      const err = new MethodNotAllowedError({ allow });
      request.log.info({ code: err.code, status: err.status }, err.message);
      return reply.status(err.status).header('allow', allow.join(', ')).send(envelopeOf(err));
    }
    // A person's browser (it asks for HTML) gets the web app's 404 page; programs the envelope.
    const page = request.server.notFoundPage;
    if (
      page &&
      (request.method === 'GET' || request.method === 'HEAD') &&
      /\btext\/html\b/.test(request.headers.accept ?? '') &&
      !MACHINE_PATH.test(request.url)
    ) {
      return page(request, reply);
    }
    return reply.status(404).send(envelopeOf(new NotFoundError()));
  });
}
