import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { plainQueryInput, queryInputSchema, runQuery } from '../../query/run.ts';
import type { Services } from '../../services.ts';
import { principalOf } from '../../http-kit/auth.ts';
import { requestAdmitted } from '../../limits/http.ts';
import { clientGoneController } from '../../http-kit/client-gone.ts';
import { jsonSchema, ok, parseInput, queryResultSchema, responses } from '../../http-kit/schema.ts';
import type { RouteOptions } from './index.ts';

const asyncAcceptedSchema = z.object({ queryId: z.string(), status: z.literal('running') });

export function queryRoutes(app: FastifyInstance, svc: Services, { hide }: RouteOptions): void {
  app.post(
    '/query',
    {
      // The handler awaits the plan limit itself (src/limits/http.ts), after starting the
      // connection look-up, so the Redis count and the look-up overlap.
      config: { awaitsRequestLimit: true },
      schema: {
        hide,
        tags: ['query'],
        summary: 'Run one SQL statement (reads for every key, anything else for admin keys); `"async": true` answers 202 at once',
        body: jsonSchema(queryInputSchema),
        response: {
          ...responses(queryResultSchema, 200, [400, 401, 403, 404, 413, 422, 429, 500, 502, 503, 504, 507]),
          ...responses(asyncAcceptedSchema, 202, []),
        },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const admitted = requestAdmitted(request);
      const input = plainQueryInput(request.body) ?? parseInput(queryInputSchema, request.body);
      if (input.async) {
        await admitted;
        // Not tied to this request: the client may go away and GET the outcome later.
        const accepted = await svc.asyncQueries.start(svc, principal, input);
        void reply.code(202).header('location', `${request.url.split('?')[0].replace(/\/$/, '')}/${accepted.queryId}`);
        return ok(accepted);
      }
      return ok(await runQuery(svc, principal, input, { source: 'api', controller: clientGoneController(request, reply), admitted }));
    },
  );
}
