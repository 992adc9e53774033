import type { FastifyReply, FastifyRequest } from 'fastify';
import { StopController, type StopSignal } from '../engines/stop.ts';

/** A StopController that aborts when the client disconnects before the response was sent,
 * so the statement it asked for is cancelled on the database instead of running on for
 * nobody. Made for one request: hand it to one query as its own (RunOptions.controller). */
export function clientGoneController(_request: FastifyRequest, reply: FastifyReply): StopController {
  const controller = new StopController();
  // The response emits 'close' when its socket closes before the end too (also on a
  // keep-alive connection), and once more after a normal finish, which writableFinished tells.
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller;
}

/** clientGoneController's signal, for callers that only follow one. */
export function clientGoneSignal(request: FastifyRequest, reply: FastifyReply): StopSignal {
  return clientGoneController(request, reply).signal;
}
