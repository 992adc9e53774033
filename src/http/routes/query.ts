import type { FastifyInstance } from 'fastify';
import { queryInputSchema, runQuery } from '../../query/run.ts';
import type { Services } from '../../services.ts';
import { principalOf } from '../auth.ts';
import { clientGoneSignal } from '../client-gone.ts';
import { jsonSchema, ok, parseInput, queryResultSchema, responses } from '../schema.ts';
import type { RouteOptions } from './index.ts';

export function queryRoutes(app: FastifyInstance, svc: Services, { hide }: RouteOptions): void {
  app.post('/query', {
    schema: {
      hide,
      tags: ['query'],
      summary: 'Run one SQL statement (reads for every key, anything else for admin keys)',
      body: jsonSchema(queryInputSchema),
      response: responses(queryResultSchema, 200, [400, 401, 403, 404, 413, 422, 429, 500, 502, 503, 504]),
    },
  }, async (request, reply) => {
    const principal = principalOf(request);
    const input = parseInput(queryInputSchema, request.body);
    return ok(await runQuery(svc, principal, input, { source: 'api', signal: clientGoneSignal(request, reply) }));
  });
}
