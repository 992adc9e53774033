// The one place errors become HTTP responses. Typed DbqErrors carry their own status and code;
// Fastify's own errors (body limit, JSON syntax, unsupported content type) are translated to
// the matching dbq error first. Below 500 the message is the error's; a 500 body says only
// "Internal server error" — no stack, SQL or secret ever leaves through it.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ZodError } from 'zod';
import { DbqError, InternalError, InvalidJsonError, InvalidRequestError, NotFoundError, PayloadTooLargeError, RateLimitedError } from '../errors.ts';
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
