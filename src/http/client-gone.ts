import type { FastifyReply, FastifyRequest } from 'fastify';

/** An AbortSignal that fires when the client disconnects before the response was sent, so
 * the statement it asked for is cancelled on the database instead of running on for nobody. */
export function clientGoneSignal(request: FastifyRequest, reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) controller.abort();
  };
  request.raw.socket?.once('close', onClose);
  reply.raw.once('close', onClose);
  reply.raw.once('finish', () => request.raw.socket?.off('close', onClose));
  return controller.signal;
}
