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
  NotFoundError,
  PayloadTooLargeError,
  RateLimitedError,
  RequestTimeoutError,
} from '../errors.ts';
import { requestAdmitted } from '../limits/http.ts';

export function envelopeOf(err: DbqError): Record<string, unknown> {
  const body: Record<string, unknown> = { success: false, error: err.message, code: err.code };
  if (err.details && Object.keys(err.details).length > 0) body.details = err.details;
  return body;
}

export function zodToInvalidRequest(err: ZodError): InvalidRequestError {
  const issue = err.issues[0];
  const field = issue?.path.join('.') ?? '';
  let message = issue?.message ?? 'invalid value';
  if (issue?.code === 'unrecognized_keys') {
    const keys = (issue as { keys?: string[] }).keys ?? [];
    return new InvalidRequestError(`Invalid request: unknown field ${keys.map((k) => `"${k}"`).join(', ')}`, { field: keys[0] });
  }
  if (issue?.code === 'invalid_type' && /received undefined/.test(message)) message = 'is required';
  return new InvalidRequestError(field ? `Invalid request: ${field} ${message}` : `Invalid request: ${message}`, field ? { field } : undefined);
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
  if (dbqErr.status >= 500) request.log.error({ err, code: dbqErr.code }, 'request failed');
  else request.log.info({ code: dbqErr.code, status: dbqErr.status }, dbqErr.message);
  void reply.header('x-request-id', request.id).status(dbqErr.status).send(envelopeOf(dbqErr));
}

export function installErrorHandling(app: FastifyInstance): void {
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
    if (dbqErr.status >= 500) request.log.error({ err, code: dbqErr.code }, 'request failed');
    else request.log.info({ code: dbqErr.code, status: dbqErr.status }, dbqErr.message);
    return reply.status(dbqErr.status).send(envelopeOf(dbqErr));
  });
  app.setNotFoundHandler((_request, reply) => {
    void reply.status(404).send(envelopeOf(new NotFoundError()));
  });
}
